"""The metric registry: what each number means (formula, range, direction, level, reference).

Shown by `recon-submit metrics` and on the site; keys are the keys of `ScoreReport.metrics`.
"""

from __future__ import annotations

from reconbench.core.report import MetricInfo

SOK = "Wen, Liu, Backes, Zhang, SoK: Data Reconstruction Attacks Against ML Models, USENIX Security 2025"


# The convention changes SSIM values, and rankings, against other libraries (uniform windows,
# sample covariance, other data ranges), so it is stated wherever an SSIM column is read.
def ssim_convention(sizes=()) -> str:
    """The SSIM footnote; `sizes`: the (height, width) of the images a table scores, so that its valid
    window is the one those images get (ssim.window_size), not another track's."""
    sizes = sorted(set(sizes))
    if sizes:
        from reconbench.image.metrics.ssim import window_size  # torch: only where a site page is built

        window = ", ".join(f"{window_size(h, w)}x{window_size(h, w)} on these {h}x{w} images" for h, w in sizes)
    else:
        window = "11x11 from 11 px up (the largest odd size that fits a smaller image: 7x7 on 8x8)"
    return (
        f"SSIM convention: Gaussian window sigma 1.5 (11 taps), valid window {window}, "
        "data range 1 (pixels in [0, 1]), population covariance; equal to scikit-image's "
        "structural_similarity(gaussian_weights=True, sigma=1.5, use_sample_covariance=False, data_range=1). "
        "Other conventions (a uniform 7x7 or 8x8 window, sample covariance, data range 255) give other values "
        "and can reorder attacks."
    )


SSIM_CONVENTION = ssim_convention()

ACC_CAVEAT = (
    "An evaluation classifier rewards whatever it finds class-like: the SoK (Sec. 4.1) shows noise-like "
    "MI-Face images reaching confidence above 0.9 for their classes, so a high accuracy alone is no evidence "
    "of a faithful reconstruction; read it with MSE/PSNR/SSIM, FID and coverage."
)
_EVAL = "E = the track's evaluation classifier (another architecture than the target, registry `evaluation_model`)"
_MI = "MI literature: GMI (Zhang et al., CVPR 2020), KEDMI (Chen et al., ICCV 2021), PLG-MI (Yuan et al., AAAI 2023)"

_S_DIS = "S-Dis = mean_i best_{t in D_tar, y_t = y_i} d(x_i, t); alpha = |distinct matched t| / |D_tar|"

METRICS: dict[str, MetricInfo] = {
    m.name: m
    for m in [
        MetricInfo(
            "mse",
            f"d = mean_p (x_p - t_p)^2, pixels in [0,1]; {_S_DIS}",
            "[0, 1]",
            "↓",
            "sample",
            f"{SOK}, Def. 4.2",
        ),
        MetricInfo(
            "psnr",
            f"d = 10 log10(1 / max(MSE, 1e-10)) dB (capped at 100 dB), per image then averaged; {_S_DIS}",
            "[0, 100] dB",
            "↑",
            "sample",
            f"{SOK}, Def. 4.2",
        ),
        MetricInfo(
            "ssim",
            "d = mean over valid window centres and channels of "
            "(2 mu_x mu_t + C1)(2 s_xt + C2) / ((mu_x^2 + mu_t^2 + C1)(s_x^2 + s_t^2 + C2)), "
            f"Gaussian sigma=1.5, 11 taps, C1=0.01^2, C2=0.03^2; {_S_DIS}",
            "[-1, 1]",
            "↑",
            "sample",
            f"{SOK}, Def. 4.2; Wang et al., IEEE TIP 2004",
            SSIM_CONVENTION,
        ),
        MetricInfo(
            "lpips",
            "d = sum_l mean_hw sum_c w_lc (f^_l(x) - f^_l(t))_c^2 (AlexNet, LPIPS v0.1 linear layers); "
            f"{_S_DIS}",
            "[0, inf)",
            "↓",
            "sample",
            "Zhang et al., CVPR 2018 (ReconBench addition, not in the SoK)",
        ),
        MetricInfo(
            "fid",
            "||mu_r - mu_t||^2 + tr(S_r + S_t - 2 (S_r S_t)^(1/2)) on InceptionV3 pool3 (2048-d)",
            "[0, inf)",
            "↓",
            "dataset",
            f"{SOK}, Def. 4.1; Heusel et al., NeurIPS 2017; pytorch-fid",
        ),
        MetricInfo(
            "prdc_precision",
            "mean_j 1[exists i: ||F_j - R_i|| < r_k(R_i)], k=5 (r_k: distance to the k-th NN in R)",
            "[0, 1]",
            "↑",
            "dataset",
            "Naeem et al., ICML 2020 (not the SoK coverage)",
        ),
        MetricInfo(
            "prdc_recall",
            "mean_i 1[exists j: ||R_i - F_j|| < r_k(F_j)], k=5",
            "[0, 1]",
            "↑",
            "dataset",
            "Naeem et al., ICML 2020",
        ),
        MetricInfo(
            "prdc_density",
            "(1/k) mean_j sum_i 1[||F_j - R_i|| < r_k(R_i)], k=5",
            "[0, |R|/k] (about 1 when F ~ R)",
            "↑",
            "dataset",
            "Naeem et al., ICML 2020",
        ),
        MetricInfo(
            "prdc_coverage",
            "mean_i 1[min_j ||R_i - F_j|| < r_k(R_i)], k=5",
            "[0, 1]",
            "↑",
            "dataset",
            "Naeem et al., ICML 2020 (not the SoK coverage alpha)",
        ),
        MetricInfo(
            "acc_top1",
            f"mean_i 1[argmax_c E(x_i)_c = y_i]; {_EVAL}",
            "[0, 1]",
            "↑",
            "classifier",
            f"{_MI}; SoK Sec. 4.1 'Accuracy (Test)'",
            ACC_CAVEAT,
        ),
        MetricInfo(
            "acc_top5",
            f"mean_i 1[y_i among the 5 largest logits of E(x_i)] (top-min(5, classes)); {_EVAL}",
            "[0, 1]",
            "↑",
            "classifier",
            f"{_MI}",
            ACC_CAVEAT,
        ),
        MetricInfo(
            "knn_dist",
            "mean_i min_{t in D_tar, y_t = y_i} ||phi(x_i) - phi(t)||^2, phi = E's penultimate feature "
            "(squared L2, as KEDMI's calc_knn); no target of the class: the farthest target",
            "[0, inf)",
            "↓",
            "classifier",
            f"{_MI}",
            "Distances live in E's feature space: comparable within a track (one pinned E), not across tracks.",
        ),
    ]
}

SAMPLE_LEVEL = tuple(name for name, m in METRICS.items() if m.level == "sample")
