"""Image side of the membership gap: per class, every reconstruction against targets + holdout.

For each sample-level metric the pool of class c is the targets of class c followed by the holdout
images of class c (the holdout has the target set's class counts, data/arrays.py). The scores come
from the very kernels S-Dis uses (pixel.MSEKernel, ssim.SSIMKernel, lpips_metric.LPIPSKernel; the
evaluation classifier's features for knn_dist), so vs_target equals the board's S-Dis value and
vs_holdout is the same number against the holdout; core/membership.py turns the matrices into
the gap, its interval and p. PSNR's per-pair value is psnr_from_mse of the MSE, as in score.py.

acc_top1 / acc_top5 compare a reconstruction with its intended class only, never with an image:
scored against the holdout they give the same number, so their gap is 0 by construction and is
reported as not applicable (a high Attack Acc@1 is no evidence of membership; SoK §4.1).
"""

from __future__ import annotations

import numpy as np
import torch

from reconbench.core.membership import PERMUTATIONS, Gap, Group, membership_gap
from .pixel import psnr_from_mse

NOT_APPLICABLE = {
    "acc_top1": "compares each reconstruction with its intended class, never with an image: the same against "
                "the holdout, so it cannot tell members from non-members",
    "acc_top5": "compares each reconstruction with its intended class, never with an image: the same against "
                "the holdout, so it cannot tell members from non-members",
}
MAX_PAIRS = 1 << 22  # pairs per kernel block


def kernel_matrix(kernel, rec: torch.Tensor, pool: torch.Tensor, device: str) -> np.ndarray:
    """(n, P) matrix of the kernel's d between uint8 reconstructions and pool images, in blocks of the
    pairwise engine's size (8 MiB of temporaries on the CPU: SSIM ran 2-4x slower in 4M-pair blocks)."""
    from .pairwise import default_budget

    out = np.empty((rec.shape[0], pool.shape[0]), dtype=np.float64)
    pairs = default_budget(device).block_bytes // max(1, kernel.pair_bytes()) if hasattr(kernel, "pair_bytes") else MAX_PAIRS
    pairs = max(1, min(pairs, MAX_PAIRS))
    cols = min(pool.shape[0], pairs)
    rows = max(1, pairs // max(1, cols))
    with torch.inference_mode():
        p_state = kernel.prepare(pool.to(device))
        for lo in range(0, rec.shape[0], rows):
            r_state = kernel.prepare(rec[lo:lo + rows].to(device))
            for c0 in range(0, pool.shape[0], cols):
                part = {k: v[c0:c0 + cols] for k, v in p_state.items()}
                out[lo:lo + rows, c0:c0 + cols] = kernel.block(r_state, part).to(torch.float64).cpu().numpy()
    return out


def class_pools(rec_y: np.ndarray, tar_y: np.ndarray, hold_y: np.ndarray):
    """Per class with targets: (class, reconstruction indices, target indices, holdout indices)."""
    for c in np.unique(rec_y):
        r, t, h = (np.flatnonzero(y == c) for y in (rec_y, tar_y, hold_y))
        if len(t) and len(h):
            yield int(c), r, t, h


def _group(c: int, t: np.ndarray, h: np.ndarray, scores: np.ndarray, larger_is_better: bool) -> Group:
    """One class's group: its (n, P) scores against its targets, then its holdout images."""
    members = np.r_[np.ones(len(t), bool), np.zeros(len(h), bool)]
    return Group.from_matrix(str(c), scores, members, larger_is_better)


def image_groups(matrix_of, rec_y, tar_y, hold_y, larger_is_better: bool) -> list[Group]:
    """Groups for membership_gap; matrix_of(rec_idx, pool_targets, pool_holdout) gives the (n, P) scores."""
    return [_group(c, t, h, matrix_of(r, t, h), larger_is_better) for c, r, t, h in class_pools(rec_y, tar_y, hold_y)]


Matrices = dict  # class -> (reconstruction indices, target indices, holdout indices, (n, P) matrix)


def class_matrices(kernel, rec, rec_y, tar, tar_y, hold, hold_y, device: str = "cpu") -> Matrices:
    """Per class with targets and holdout images: the kernel's matrix of its reconstructions against its
    targets followed by its holdout images (what the gap compares; S-Dis reads the target columns)."""
    out = {}
    for c, r, t, h in class_pools(rec_y, tar_y, hold_y):
        pool = torch.cat([tar[torch.from_numpy(t)], hold[torch.from_numpy(h)]])
        out[c] = (r, t, h, kernel_matrix(kernel, rec[torch.from_numpy(r)], pool, device))
    return out


def nearest_from(mats: Matrices, rec_y, tar_y, larger_is_better: bool, worst: float):
    """pairwise.nearest_same_class's answer read from the gap's matrices (their target columns): each
    reconstruction's best value over the targets of its class, and that target (the lowest index on a
    tie, as the scan keeps). None when a class with targets has no holdout pool here (scan instead)."""
    from .pairwise import Nearest

    rec_y, tar_y = np.asarray(rec_y), np.asarray(tar_y)
    if any(int(c) not in mats for c in np.unique(rec_y) if (tar_y == c).any()):
        return None
    best, match = np.full(len(rec_y), worst, dtype=np.float64), np.full(len(rec_y), -1, dtype=np.int64)
    for r, t, _, m in mats.values():
        part = m[:, :len(t)]
        j = part.argmax(1) if larger_is_better else part.argmin(1)
        best[r], match[r] = part[np.arange(len(r)), j], t[j]
    return Nearest(best=best, match=match)


def _groups(mats: Matrices, larger_is_better: bool, transform=None) -> list[Group]:
    """image_groups' groups from matrices already computed (class_matrices keeps class_pools' order)."""
    return [_group(c, t, h, m if transform is None else transform(m), larger_is_better) for c, (_, t, h, m) in mats.items()]


def kernel_gap(kernel, rec, rec_y, tar, tar_y, hold, hold_y, device: str = "cpu", permutations: int = PERMUTATIONS,
               mats: Matrices | None = None) -> Gap | None:
    """The gap of one pairwise kernel (uint8 tensors on the CPU, int64 numpy labels); `mats`: the
    class_matrices already computed for these inputs."""
    mats = class_matrices(kernel, rec, rec_y, tar, tar_y, hold, hold_y, device) if mats is None else mats
    groups = _groups(mats, kernel.larger_is_better)
    return membership_gap(groups, kernel.larger_is_better, n_total=len(rec_y), worst=kernel.worst, permutations=permutations)


def mse_and_psnr_gaps(kernel, rec, rec_y, tar, tar_y, hold, hold_y, device: str = "cpu",
                      permutations: int = PERMUTATIONS, mats: Matrices | None = None) -> tuple[Gap | None, Gap | None]:
    """MSE's gap and PSNR's (per pair psnr_from_mse of the same MSE matrix: one pass for both)."""
    mats = class_matrices(kernel, rec, rec_y, tar, tar_y, hold, hold_y, device) if mats is None else mats
    mse = membership_gap(_groups(mats, False), False, n_total=len(rec_y), worst=kernel.worst, permutations=permutations)
    psnr = membership_gap(_groups(mats, True, psnr_from_mse), True, n_total=len(rec_y),
                          worst=float(psnr_from_mse(kernel.worst)), permutations=permutations)
    return mse, psnr


def feature_gap(rec_f: torch.Tensor, rec_y, tar_f: torch.Tensor, tar_y, hold_f: torch.Tensor, hold_y,
                permutations: int = PERMUTATIONS) -> Gap | None:
    """knn_dist's gap: squared L2 distances in the evaluation classifier's feature space (classifier.py).

    A reconstruction whose class has no target scores its farthest target in classifier.py; here it
    has no pool and is left out (vs_target then differs from knn_dist; the note of knn_dist counts them)."""

    def matrix(r, t, h):
        x, pool = rec_f[r], torch.cat([tar_f[t], hold_f[h]])
        d = (x.pow(2).sum(1)[:, None] + pool.pow(2).sum(1)[None, :] - 2.0 * x @ pool.T).clamp_min(0.0)
        return d.numpy()

    groups = image_groups(matrix, rec_y, tar_y, hold_y, larger_is_better=False)
    return membership_gap(groups, False, permutations=permutations)


NO_POOL = ("no reconstruction is labelled with a class that the target and holdout images have (e.g. one update "
           "image, reconstructed with another label): nothing to test")


def _result(gap: Gap | None):
    """The published GapResult of a membership_gap answer (None: no pool, so not applicable)."""
    from reconbench.core.report import GapResult

    return GapResult.of(gap) if gap is not None else GapResult.not_applicable(NO_POOL)

PRDC_HIGHER = {"prdc_precision": True, "prdc_recall": True, "prdc_density": True, "prdc_coverage": True}


def membership_report(metrics, rec, rec_y, tar, tar_y, hold, hold_y, *, device: str, shape, lpips_kernel=None,
                      evaluator=None, inception=None, cache_dir=None, permutations: int = PERMUTATIONS,
                      matrices: dict[str, Matrices] | None = None) -> dict:
    """metric -> (GapResult, membership.Gap or None) for every metric of `metrics` (score.py's).
    `matrices`: "mse" / "ssim" -> their class_matrices, when score() computed them already (for S-Dis).

    A metric that was not computed against the targets is not computed against the holdout either."""
    from .pixel import MSEKernel
    from reconbench.core.report import GapResult
    from .ssim import SSIMKernel

    ry, ty, hy = (np.asarray(y.numpy() if hasattr(y, "numpy") else y, dtype=np.int64) for y in (rec_y, tar_y, hold_y))
    out: dict = {}

    def put(name, gap):
        out[name] = (_result(gap), gap)

    matrices = matrices or {}
    mse, psnr = mse_and_psnr_gaps(MSEKernel(shape), rec, ry, tar, ty, hold, hy, device, permutations, matrices.get("mse"))
    put("mse", mse)
    put("psnr", psnr)
    put("ssim", kernel_gap(SSIMKernel(shape, device=device), rec, ry, tar, ty, hold, hy, device, permutations,
                           matrices.get("ssim")))
    if lpips_kernel is not None:
        put("lpips", kernel_gap(lpips_kernel, rec, ry, tar, ty, hold, hy, device, permutations))
    if evaluator is not None and metrics.get("knn_dist") is not None and metrics["knn_dist"].status == "computed":
        from .classifier import target_features

        feats = [target_features(evaluator, x.numpy(), device) for x in (rec, tar, hold)]
        put("knn_dist", feature_gap(feats[0], ry, feats[1], ty, feats[2], hy, permutations))
    if inception is not None:
        out.update(dataset_level_gaps(inception, rec, tar, hold, device, cache_dir))
    for name, result in metrics.items():
        if name in out:
            continue
        if name in NOT_APPLICABLE:
            out[name] = (GapResult.not_applicable(NOT_APPLICABLE[name]), None)
        elif result.status != "computed":
            out[name] = (GapResult.not_computed(result.note or f"{name}: not computed"), None)
        else:
            out[name] = (GapResult.not_computed(f"{name}: no gap computed for this metric"), None)
    return out


def dataset_level_gaps(extractor, rec, tar, hold, device, cache_dir) -> dict:
    """FID and PRDC against the targets and against the holdout: a gap, no interval (no per-reconstruction
    pairing to permute cheaply: each permutation would need two Frechet distances of 2048-d features)."""
    from .fid import fid_result, inception_features
    from .prdc import prdc_results
    from reconbench.core.report import GapResult

    rec_f, tar_f, _ = inception_features(extractor, rec, tar, cache_dir)
    _, hold_f, _ = inception_features(extractor, rec, hold, cache_dir)
    against = {"target": {"fid": fid_result(rec_f, tar_f, device), **prdc_results(tar_f, rec_f, device=device)},
               "holdout": {"fid": fid_result(rec_f, hold_f, device), **prdc_results(hold_f, rec_f, device=device)}}
    out = {}
    for name, t in against["target"].items():
        h = against["holdout"][name]
        if t.status != "computed" or h.status != "computed":
            out[name] = (GapResult.not_computed(t.note or h.note or f"{name}: not computed"), None)
            continue
        sign = 1.0 if PRDC_HIGHER.get(name, False) else -1.0  # FID: lower is closer
        out[name] = (GapResult(status="computed", vs_target=t.value, vs_holdout=h.value, gap=sign * (t.value - h.value),
                               note="dataset level: no interval or p"), None)
    return out


def mirrored_gaps(rec, rec_y, tar, tar_y, hold, hold_y, *, shape, device: str = "cpu") -> dict:
    """MSE and SSIM gaps of the reconstructions mirrored left-right: what the held rule also checks
    (submissions/leakage.py). A mirrored target is the target to a reader and one flip away for a
    forger, yet on 8x8 digits it is no nearer its target than any digit of its class (measured: SSIM
    gap -0.006 for the 500 targets mirrored), so the unmirrored gap alone would let it rank."""
    from .pixel import MSEKernel
    from .ssim import SSIMKernel

    ry, ty, hy = (np.asarray(y.numpy() if hasattr(y, "numpy") else y, dtype=np.int64) for y in (rec_y, tar_y, hold_y))
    flipped = torch.flip(rec, dims=[3]).contiguous()
    mse, _ = mse_and_psnr_gaps(MSEKernel(shape), flipped, ry, tar, ty, hold, hy, device)
    ssim = kernel_gap(SSIMKernel(shape, device=device), flipped, ry, tar, ty, hold, hy, device)
    return {"mse": _result(mse), "ssim": _result(ssim)}
