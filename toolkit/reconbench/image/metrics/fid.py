"""FID, the SoK's dataset-level distance D-Dis (Def. 4.1), on pytorch-fid's Inception features.

Fit a Gaussian to each feature set (mean, unbiased covariance as numpy.cov) and take the
Fréchet distance between them:

    FID = ||mu_r - mu_t||^2 + tr(S_r) + tr(S_t) - 2 tr((S_r S_t)^(1/2))

Only the trace of the matrix square root is needed, and that is the sum of the square roots of
the eigenvalues of S_r S_t. S_r S_t is similar to the symmetric positive semi-definite matrix
S_r^(1/2) S_t S_r^(1/2) (or L^T S_t L with S_r = L L^T, formed by two BLAS trmm on the CPU), so
its eigenvalues are real and >= 0 (up to round-off), and a symmetric eigensolver in float64 gives
them (trace_sqrt_product). With fewer samples than dimensions the same trace is the nuclear norm
of an n_r x n_t matrix (fid_from_features). This replaces pytorch-fid's scipy.linalg.sqrtm of the
full non-symmetric product (a Schur decomposition plus a triangular square root: ~30 s for
2048x2048 on one CPU core) and agrees with it to 1e-6 relative or better (tests/test_metrics_fid.py;
benchmarks/bench_metrics_fid.py measures the speed-up). Round-off can make a few of the
smallest eigenvalues slightly negative; they are clipped to 0, as their square roots would be
~1e-8 imaginary parts that pytorch-fid drops as well.
"""

from __future__ import annotations

import os

import numpy as np
import torch

from .feature_cache import cached_features
from reconbench.core.report import MetricResult

def gaussian_stats(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    f = np.asarray(features, dtype=np.float64)
    return f.mean(axis=0), np.cov(f, rowvar=False)


def trace_sqrt_product(sigma1, sigma2, device: str | torch.device = "cpu") -> float:
    """tr((S1 S2)^(1/2)) for symmetric PSD S1, S2, from the eigenvalues of a symmetric matrix similar
    to S1 S2, in float64.

    S1 = L L^T (Cholesky, when S1 is numerically positive definite) makes S1 S2 similar to L^T S2 L;
    otherwise S1 = V diag(l) V^T (eigh) makes it similar to diag(sqrt l) V^T S2 V diag(sqrt l).
    Both are symmetric PSD, so eigvalsh (eigenvalues only, the cheap part of an eigensolver) ends it.
    """
    s1 = torch.as_tensor(np.asarray(sigma1), dtype=torch.float64, device=device)
    s2 = torch.as_tensor(np.asarray(sigma2), dtype=torch.float64, device=device)
    s1, s2 = (s1 + s1.T) / 2, (s2 + s2.T) / 2  # exactly symmetric: the solvers read one triangle only
    chol, info = torch.linalg.cholesky_ex(s1)
    if int(info) == 0:
        inner = _lower_congruence(chol, s2)
    else:  # singular S1 (fewer samples than dimensions): the eigendecomposition handles rank loss
        lam, v = torch.linalg.eigh(s1)
        root = lam.clamp_min(0).sqrt()
        inner = root[:, None] * (v.T @ s2 @ v) * root[None, :]
    mu = torch.linalg.eigvalsh((inner + inner.T) / 2)
    return float(mu.clamp_min(0).sqrt().sum())


def _lower_congruence(chol: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """L^T S L for lower-triangular L. On the CPU two BLAS trmm calls (half a GEMM's flops each)."""
    if chol.device.type != "cpu":
        return chol.T @ (s @ chol)
    from scipy.linalg.blas import dtrmm

    low = np.asfortranarray(chol.numpy())
    right = dtrmm(1.0, low, np.asfortranarray(s.numpy()), side=1, lower=1)  # S L
    return torch.from_numpy(dtrmm(1.0, low, right, side=0, lower=1, trans_a=1, overwrite_b=1))  # L^T (S L)


def frechet_distance(mu1, sigma1, mu2, sigma2, device: str | torch.device = "cpu") -> float:
    mu1, mu2 = np.atleast_1d(mu1), np.atleast_1d(mu2)
    sigma1, sigma2 = np.atleast_2d(sigma1), np.atleast_2d(sigma2)
    if mu1.shape != mu2.shape or sigma1.shape != sigma2.shape:
        raise ValueError("feature dimensions differ")
    diff = mu1 - mu2
    tr_covmean = trace_sqrt_product(sigma1, sigma2, device)
    return float(diff @ diff + np.trace(sigma1) + np.trace(sigma2) - 2.0 * tr_covmean)


def fid_from_features(rec_features: np.ndarray, tar_features: np.ndarray, device: str | torch.device = "cpu") -> float:
    r = torch.as_tensor(np.asarray(rec_features), dtype=torch.float64, device=device)
    t = torch.as_tensor(np.asarray(tar_features), dtype=torch.float64, device=device)
    if min(len(r), len(t)) >= r.shape[1]:
        return frechet_distance(*gaussian_stats(rec_features), *gaussian_stats(tar_features), device)
    # Fewer samples than dimensions (500 reconstructions, 2048-d): with A, B the centred features
    # over sqrt(n - 1), S_r S_t = A^T (A B^T) B has the non-zero eigenvalues of C C^T, C = A B^T,
    # so tr((S_r S_t)^(1/2)) is the sum of C's singular values: an n_r x n_t problem, not d x d.
    a = (r - r.mean(0)) / (len(r) - 1) ** 0.5
    b = (t - t.mean(0)) / (len(t) - 1) ** 0.5
    diff = r.mean(0) - t.mean(0)
    tr_covmean = torch.linalg.svdvals(a @ b.T).sum()
    return float(diff @ diff + a.pow(2).sum() + b.pow(2).sum() - 2.0 * tr_covmean)


def inception_features(extractor, rec: torch.Tensor, tar: torch.Tensor, cache_dir: str | os.PathLike | None = None):
    """(rec features, target features, target cache hit); only the target set is cached."""
    tar_f, hit = cached_features(extractor, tar, cache_dir)
    return extractor.features(rec), tar_f, hit


def fid_result(rec_features: np.ndarray, tar_features: np.ndarray, device: str | torch.device = "cpu") -> MetricResult:
    if min(len(rec_features), len(tar_features)) < 2:
        return MetricResult.not_computed("FID: not computed (needs at least 2 images per set)")
    # FID >= 0; identical feature sets give 0 minus round-off (about -1e-9), clamped to 0
    return MetricResult(status="computed", value=max(0.0, fid_from_features(rec_features, tar_features, device)))
