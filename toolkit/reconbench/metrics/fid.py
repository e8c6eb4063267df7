"""FID, the SoK's dataset-level distance D-Dis (Def. 4.1), on pytorch-fid's Inception features.

Fit a Gaussian to each feature set (mean, unbiased covariance as numpy.cov) and take the
Fréchet distance between them:

    FID = ||mu_r - mu_t||^2 + tr(S_r + S_t - 2 (S_r S_t)^(1/2))

The matrix square root is scipy.linalg.sqrtm, as in pytorch-fid, with the same safeguards: if
the product is singular enough for sqrtm to return non-finite values, eps*I is added to both
covariances; a tiny imaginary part from rounding is dropped, a large one is an error.
On a CPU, sqrtm of a 2048x2048 matrix takes tens of seconds.
"""

from __future__ import annotations

import os

import numpy as np
import torch
from scipy import linalg

from .feature_cache import cached_features
from .report import MetricResult

NOTE_UNAVAILABLE = "FID: not computed (weights unavailable)"


def gaussian_stats(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    f = np.asarray(features, dtype=np.float64)
    return f.mean(axis=0), np.cov(f, rowvar=False)


def frechet_distance(mu1, sigma1, mu2, sigma2, eps: float = 1e-6) -> float:
    mu1, mu2 = np.atleast_1d(mu1), np.atleast_1d(mu2)
    sigma1, sigma2 = np.atleast_2d(sigma1), np.atleast_2d(sigma2)
    if mu1.shape != mu2.shape or sigma1.shape != sigma2.shape:
        raise ValueError("feature dimensions differ")
    diff = mu1 - mu2
    covmean = linalg.sqrtm(sigma1 @ sigma2)  # (S1 S2)^(1/2)
    if not np.isfinite(covmean).all():
        offset = eps * np.eye(sigma1.shape[0])  # nearly singular product: regularise both
        covmean = linalg.sqrtm((sigma1 + offset) @ (sigma2 + offset))
    if np.iscomplexobj(covmean):
        if not np.allclose(np.diagonal(covmean).imag, 0, atol=1e-3):
            raise ValueError(f"sqrtm has a large imaginary part ({np.abs(covmean.imag).max():.3g})")
        covmean = covmean.real
    return float(diff @ diff + np.trace(sigma1) + np.trace(sigma2) - 2.0 * np.trace(covmean))


def fid_from_features(rec_features: np.ndarray, tar_features: np.ndarray) -> float:
    mu_r, s_r = gaussian_stats(rec_features)
    mu_t, s_t = gaussian_stats(tar_features)
    return frechet_distance(mu_r, s_r, mu_t, s_t)


def inception_features(extractor, rec: torch.Tensor, tar: torch.Tensor, cache_dir: str | os.PathLike | None = None):
    """(rec features, target features, target cache hit); only the target set is cached."""
    tar_f, hit = cached_features(extractor, tar, cache_dir)
    return extractor.features(rec), tar_f, hit


def fid_result(rec_features: np.ndarray, tar_features: np.ndarray) -> MetricResult:
    if min(len(rec_features), len(tar_features)) < 2:
        return MetricResult.not_computed("FID: not computed (needs at least 2 images per set)")
    return MetricResult(status="computed", value=fid_from_features(rec_features, tar_features))
