"""Pairwise engine vs the straightforward per-pair loop (skimage / lpips called on each pair).

    .venv/bin/python benchmarks/bench_metrics_pairwise.py [--n 500] [--size 32] [--loop-pairs 200]

Data: real photo patches (scikit-image / scikit-learn sample photos), n targets and n
reconstructions (other patches + noise), labels = source photo (10 classes); then the worst
case where every image has the same class. The loop baseline is timed on a random sample of
same-class pairs and extrapolated to all same-class pairs (it would take minutes to hours);
images are converted to float arrays once, outside the timed loop, which favours the loop.
Per-pair values of the engine are checked against the loop's on the sampled pairs.
LPIPS runs with stand-in (seeded random) AlexNet weights: the real file is not available
offline; speed and agreement do not depend on the weight values.
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np
import torch
from bench_metrics_util import load, same_class_pairs, timed
from skimage.metrics import mean_squared_error, peak_signal_noise_ratio, structural_similarity

from reconbench.image.metrics.lpips_metric import LPIPSExtractor, LPIPSKernel, standin_alexnet_state_dict
from reconbench.image.metrics.pairwise import nearest_same_class
from reconbench.image.metrics.pixel import MSEKernel, psnr_from_mse
from reconbench.image.metrics.ssim import SSIMKernel, window_size
from reconbench.image.metrics.testdata import perturb, photo_patches

TOL = {"mse": 1e-6, "psnr": 1e-6, "ssim": 1e-4, "lpips": 1e-4}


def reference_lpips(state_dict):
    import lpips

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = lpips.LPIPS(net="alex", pretrained=True, pnet_rand=True, verbose=False).eval()
    slice_of = {0: 1, 3: 2, 6: 3, 8: 4, 10: 5}
    ref.load_state_dict(
        {f"net.slice{slice_of[int(k.split('.')[1])]}.{k.split('.')[1]}.{k.split('.')[2]}": v
         for k, v in state_dict.items() if k.startswith("features.")}, strict=False)
    return ref


def engine_pair_values(kernel, rec, tar, pairs, chunk=16):
    """The engine's d on given (i, j) pairs: blocks of `chunk` pairs, diagonal taken."""
    out = []
    for lo in range(0, len(pairs), chunk):
        i, j = pairs[lo : lo + chunk, 0], pairs[lo : lo + chunk, 1]
        d = kernel.block(kernel.prepare(torch.from_numpy(rec[i])), kernel.prepare(torch.from_numpy(tar[j])))
        out.append(torch.diagonal(d).double().numpy())
    return np.concatenate(out)


def loop_values(metric, rec_f, tar_f, pairs, win, ref=None, rec_t=None, tar_t=None):
    """The straightforward implementation: one library call per pair."""
    if metric == "mse":
        return [mean_squared_error(rec_f[i], tar_f[j]) for i, j in pairs]
    if metric == "psnr":
        return [peak_signal_noise_ratio(tar_f[j], rec_f[i], data_range=1) for i, j in pairs]
    if metric == "ssim":
        return [structural_similarity(rec_f[i], tar_f[j], gaussian_weights=True, sigma=1.5, use_sample_covariance=False,
                                      data_range=1, channel_axis=2, win_size=win) for i, j in pairs]
    with torch.no_grad():
        return [ref(rec_t[i : i + 1], tar_t[j : j + 1]).item() for i, j in pairs]


def run(rec, ry, tar, ty, args, lpips_state, title):
    rng = np.random.default_rng(args.seed)
    n_pairs = same_class_pairs(ry, ty)
    print(f"\n## {title}: N = M = {len(rec)}, {rec.shape[1]}x{rec.shape[2]}x{rec.shape[3]}, "
          f"{len(np.unique(ty))} classes, {n_pairs:,} same-class pairs")
    r_t, ry_t, t_t, ty_t = (torch.from_numpy(a) for a in (rec, ry, tar, ty))
    shape = rec.shape[1:]
    extractor = LPIPSExtractor(lpips_state)
    kernels = {"mse": MSEKernel(shape), "ssim": SSIMKernel(shape), "lpips": LPIPSKernel(extractor, shape)}
    # a random sample of same-class pairs for the loop baseline
    same = np.argwhere(ry[:, None] == ty[None, :])
    pairs = same[rng.choice(len(same), size=min(args.loop_pairs, len(same)), replace=False)]
    rec_f = rec.astype(np.float64).transpose(0, 2, 3, 1) / 255.0
    tar_f = tar.astype(np.float64).transpose(0, 2, 3, 1) / 255.0
    rec_t, tar_t = 2 * r_t.float() / 255 - 1, 2 * t_t.float() / 255 - 1
    ref = reference_lpips(lpips_state)
    win = window_size(*rec.shape[2:])
    print(f"{'metric':7} {'engine s':>9} {'loop s/pair':>12} {'loop s (extrap.)':>17} {'speed-up':>9} {'max |diff|':>11}  check")
    for name in ("mse", "psnr", "ssim", "lpips"):
        kernel = kernels["mse" if name == "psnr" else name]  # PSNR = the MSE pass + one log each
        # engine and loop timed alternately, best of --repeat each: robust to a shared machine's noise
        t_engine, t_loop = float("inf"), float("inf")
        for _ in range(args.repeat):
            t_engine = min(t_engine, timed(nearest_same_class, kernel, r_t, ry_t, t_t, ty_t)[1])
            loop, t = timed(loop_values, name, rec_f, tar_f, pairs, win, ref, rec_t, tar_t)
            t_loop = min(t_loop, t)
        ours = engine_pair_values(kernel, rec, tar, pairs)
        ours = psnr_from_mse(ours) if name == "psnr" else ours
        diff = float(np.max(np.abs(ours - np.asarray(loop))))
        per_pair = t_loop / len(pairs)
        extrap = per_pair * n_pairs
        ok = "ok" if diff <= TOL[name] * (max(1.0, np.abs(loop).max()) if name == "psnr" else 1.0) else "FAIL"
        print(f"{name:7} {t_engine:9.3f} {per_pair:12.2e} {extrap:17.1f} {extrap / t_engine:8.0f}x "
              f"{diff:11.1e}  {ok} (tol {TOL[name]:g})")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=500)
    p.add_argument("--size", type=int, default=32)
    p.add_argument("--loop-pairs", type=int, default=200, help="pairs timed in the per-pair loop")
    p.add_argument("--repeat", type=int, default=3, help="alternating timings of engine and loop (best kept)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (the loop is single-threaded)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), device cpu; {load()}")
    print(f"loop baseline timed on {args.loop_pairs} random same-class pairs per metric and extrapolated; "
          f"engine and loop timed alternately, best of {args.repeat} each")
    tar, ty = photo_patches(args.n, args.size, seed=args.seed)
    rec = perturb(photo_patches(args.n, args.size, seed=args.seed + 1)[0], 25.0, seed=args.seed)
    ry = ty.copy()  # the same 10-class assignment (index % 10)
    state = standin_alexnet_state_dict(0)
    run(rec, ry, tar, ty, args, state, "10 classes")
    zeros = np.zeros_like(ty)
    run(rec, zeros, tar, zeros, args, state, "worst case: one class")
    print(f"\n{load()}")


if __name__ == "__main__":
    sys.exit(main())
