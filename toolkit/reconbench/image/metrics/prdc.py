"""Precision, recall, density and coverage of Naeem et al. (ICML 2020), k = 5.

On the Inception features of the targets R (real) and the reconstructions F (fake), with
r_k(z) the Euclidean distance from z to its k-th nearest neighbour in its own set (itself
excluded) and 1[.] the indicator:

    precision = mean_j 1[exists i: ||F_j - R_i|| < r_k(R_i)]      is F_j on the real manifold?
    recall    = mean_i 1[exists j: ||R_i - F_j|| < r_k(F_j)]      is R_i on the fake manifold?
    density   = (1/k) mean_j sum_i 1[||F_j - R_i|| < r_k(R_i)]    how many real balls hold F_j
    coverage  = mean_i 1[min_j ||R_i - F_j|| < r_k(R_i)]          is some F_j near R_i?

Strict '<' as in the authors' `prdc` package. Named prdc_* in reports: this coverage is not the
SoK's coverage alpha. Distances are computed by blocks in float64 (||a||^2 + ||b||^2 - 2 a.b),
so memory stays bounded for large sets.
"""

from __future__ import annotations

import numpy as np
import torch

from reconbench.core.report import MetricResult

K = 5
NAMES = ("prdc_precision", "prdc_recall", "prdc_density", "prdc_coverage")


def _dist(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    sq = a.pow(2).sum(1)[:, None] + b.pow(2).sum(1)[None, :] - 2.0 * (a @ b.T)
    return sq.clamp_min_(0.0).sqrt_()


def kth_neighbour_radii(x: torch.Tensor, k: int, chunk: int) -> torch.Tensor:
    """r_k for every row: the (k+1)-th smallest distance to its own set (the first is itself, 0)."""
    return torch.cat([torch.kthvalue(_dist(x[lo : lo + chunk], x), k + 1, dim=1).values for lo in range(0, len(x), chunk)])


def compute_prdc(real: np.ndarray, fake: np.ndarray, k: int = K, chunk: int = 1024, device="cpu") -> dict[str, float]:
    r = torch.as_tensor(np.asarray(real, dtype=np.float64), device=device)
    f = torch.as_tensor(np.asarray(fake, dtype=np.float64), device=device)
    if len(r) <= k or len(f) <= k:
        raise ValueError(f"PRDC with k={k} needs more than {k} samples in each set")
    r_rad, f_rad = kth_neighbour_radii(r, k, chunk), kth_neighbour_radii(f, k, chunk)
    in_real_balls = torch.zeros(len(f), dtype=torch.float64, device=device)  # per fake: count of real balls
    real_hits_fake_ball = torch.zeros(len(r), dtype=torch.bool, device=device)
    real_nearest_fake = torch.full((len(r),), float("inf"), dtype=torch.float64, device=device)
    for lo in range(0, len(r), chunk):
        for flo in range(0, len(f), chunk):
            d = _dist(r[lo : lo + chunk], f[flo : flo + chunk])  # (real block, fake block)
            in_real_balls[flo : flo + chunk] += (d < r_rad[lo : lo + chunk, None]).sum(0)
            real_hits_fake_ball[lo : lo + chunk] |= (d < f_rad[None, flo : flo + chunk]).any(1)
            real_nearest_fake[lo : lo + chunk] = torch.minimum(real_nearest_fake[lo : lo + chunk], d.min(1).values)
    return {
        "prdc_precision": float((in_real_balls > 0).double().mean()),
        "prdc_recall": float(real_hits_fake_ball.double().mean()),
        "prdc_density": float(in_real_balls.mean() / k),
        "prdc_coverage": float((real_nearest_fake < r_rad).double().mean()),
    }


def prdc_results(tar_features: np.ndarray, rec_features: np.ndarray, k: int = K, device="cpu") -> dict[str, MetricResult]:
    if min(len(tar_features), len(rec_features)) <= k:
        note = f"PRDC: not computed (needs more than k={k} images per set)"
        return {name: MetricResult.not_computed(note) for name in NAMES}
    values = compute_prdc(tar_features, rec_features, k, device=device)
    return {name: MetricResult(status="computed", value=values[name]) for name in NAMES}
