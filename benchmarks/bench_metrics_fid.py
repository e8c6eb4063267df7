"""FID: the Fréchet distance by eigenvalues vs scipy's sqrtm, and the target-feature cache.

    .venv/bin/python benchmarks/bench_metrics_fid.py [--n 32] [--repeat 3] [--frechet-only]

Part 1, the Fréchet distance of two 2048-d Gaussians (full-rank covariances from 4,096 samples,
and few-sample features: 500 vs 500, as a digits run): ours (reconbench.image.metrics.fid) against
pytorch-fid's calculate_frechet_distance (scipy.linalg.sqrtm), both timed in this run, with
the ratio and the relative difference.

Part 2:
Scores n reconstructions against n targets (fid=True, lpips=False) alternately with a fresh
cache folder and with a warm one, prints the best time of each, then splits the time into its
parts: target features (Inception forward vs cache load), reconstruction features, sqrtm.
Uses the real pytorch-fid weights when they are in the torch hub cache, else stand-in weights
(same network and cost, meaningless values; the output says which).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import warnings

import numpy as np
import torch
from bench_metrics_util import load, timed
from threadpoolctl import threadpool_limits

from reconbench.image.metrics import score
from reconbench.image.metrics.feature_cache import cached_features
from reconbench.image.metrics.fid import fid_from_features, frechet_distance, gaussian_stats
from reconbench.image.metrics.inception import InceptionExtractor, standin_inception_state_dict
from reconbench.image.metrics.testdata import perturb, photo_patches


def frechet_part(d: int, repeat: int) -> None:
    from pytorch_fid.fid_score import calculate_frechet_distance

    rng = np.random.default_rng(0)
    mix = rng.normal(size=(d, d)) / np.sqrt(d)
    cases = []
    for n in (2 * d, 500):  # full-rank covariances; fewer samples than dimensions (singular)
        a = np.maximum(rng.normal(size=(n, d)) @ mix, 0).astype(np.float32)  # pool3-like: >= 0
        b = np.maximum(rng.normal(size=(n, d)) @ (mix + 0.1 * rng.normal(size=(d, d))) + 0.2, 0).astype(np.float32)
        cases.append((n, a, b))
    print(f"## Frechet distance, d = {d} (best of {repeat}; pytorch-fid = scipy sqrtm of the product)")
    print("samples/set  route           ours s  pytorch-fid s  speed-up  rel. diff")
    for n, a, b in cases:
        stats = (*gaussian_stats(a), *gaussian_stats(b))
        ref, t_ref = timed(calculate_frechet_distance, *stats, repeat=repeat)
        ours, t_ours = timed(frechet_distance, *stats, repeat=repeat)
        print(f"{n:11d}  covariances  {t_ours:9.2f}  {t_ref:13.2f}  {t_ref / t_ours:7.1f}x  {abs(ours - ref) / abs(ref):.1e}")
        if n < d:
            ours, t_ours = timed(fid_from_features, a, b, repeat=repeat)
            print(f"{n:11d}  features     {t_ours:9.2f}  {t_ref:13.2f}  {t_ref / t_ours:7.1f}x  {abs(ours - ref) / abs(ref):.1e}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=32)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--frechet-only", action="store_true", help="part 1 only")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")  # sqrtm's singular-matrix notes (n < 2048)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), device cpu; {load()}")
    with threadpool_limits(args.threads):  # scipy's BLAS/LAPACK on as many threads as torch
        frechet_part(2048, args.repeat)
    if args.frechet_only:
        return print(load())
    ex = InceptionExtractor.from_weights()
    which = "real pytorch-fid weights"
    if ex is None:
        ex, which = InceptionExtractor(standin_inception_state_dict(0)), "stand-in weights (real file absent)"
    tar, y = photo_patches(args.n, 32, seed=0)
    rec = perturb(photo_patches(args.n, 32, seed=1)[0], 25.0)
    print(f"InceptionV3 pool3 (2048-d), {which}; N = M = {args.n}, 32x32x3 -> resized to 299")
    with tempfile.TemporaryDirectory() as cache, threadpool_limits(args.threads):  # sqrtm's BLAS too
        # alternate cold (fresh cache folder) and warm scorings; the minimum of each resists the
        # noise of a shared machine
        cold, warm = [], []
        for r in range(args.repeat):
            with tempfile.TemporaryDirectory() as fresh:
                first, t = timed(score, rec, y, tar, y, lpips=False, inception_extractor=ex, cache_dir=fresh)
            cold.append(t)
            if r == 0:
                score(rec, y, tar, y, lpips=False, inception_extractor=ex, cache_dir=cache)  # fill the cache
            second, t = timed(score, rec, y, tar, y, lpips=False, inception_extractor=ex, cache_dir=cache)
            warm.append(t)
            assert first.metrics["fid"].value == second.metrics["fid"].value
        t1, t2 = min(cold), min(warm)
        print(f"scoring, target features computed (cold cache): {t1:7.2f} s   FID {first.metrics['fid'].value:.4f}")
        print(f"scoring, target features from the cache:        {t2:7.2f} s   -> {t1 / t2:.2f}x faster "
              f"(min of {args.repeat} alternating runs each)")
        # where the time goes, part by part
        tar_t, rec_t = torch.from_numpy(tar), torch.from_numpy(rec)
        feats, t_forward = timed(ex.features, tar_t)
        (cached, hit), t_load = timed(cached_features, ex, tar_t, cache)
        assert hit and (cached == feats).all()
        rec_feats, t_rec = timed(ex.features, rec_t)
        _, t_frechet = timed(fid_from_features, rec_feats, feats)
        print(f"  target features: Inception forward {t_forward:6.2f} s | cache load {t_load * 1e3:.1f} ms "
              f"({t_forward / t_load:,.0f}x)")
        print(f"  paid by every scoring: reconstruction features {t_rec:.2f} s, Frechet distance {t_frechet:.2f} s "
              f"(eigenvalue route)")
    print(load())


if __name__ == "__main__":
    sys.exit(main())
