"""PRDC (Naeem et al. 2020) against an independent brute-force numpy version and the authors'
`prdc` package (when installed)."""

import numpy as np
import pytest

from reconbench.image.metrics.prdc import compute_prdc, prdc_results


pytestmark = pytest.mark.usefixtures("single_torch_thread")


def brute_force_prdc(real, fake, k):
    """Written from the paper's definitions with full distance matrices and explicit sorting."""
    def dists(a, b):
        return np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))

    rr, ff, rf = dists(real, real), dists(fake, fake), dists(real, fake)
    r_real = np.sort(rr, axis=1)[:, k]  # column 0 is the point itself
    r_fake = np.sort(ff, axis=1)[:, k]
    inside = rf < r_real[:, None]  # inside[i, j]: fake j in the k-NN ball of real i
    return {
        "prdc_precision": inside.any(axis=0).mean(),
        "prdc_recall": (rf < r_fake[None, :]).any(axis=1).mean(),
        "prdc_density": inside.sum(axis=0).mean() / k,
        "prdc_coverage": (rf.min(axis=1) < r_real).mean(),
    }


@pytest.fixture(scope="module")
def features():
    rng = np.random.default_rng(0)
    real = rng.normal(size=(300, 16))
    fake = rng.normal(size=(250, 16)) * 1.3 + 0.4
    return real, fake


@pytest.mark.parametrize("chunk", [7, 1024])
def test_prdc_matches_brute_force(features, chunk):
    real, fake = features
    ours = compute_prdc(real, fake, k=5, chunk=chunk)
    ref = brute_force_prdc(real, fake, 5)
    for name in ref:
        assert ours[name] == pytest.approx(ref[name], abs=1e-12), name
    assert 0 < ours["prdc_precision"] < 1 and 0 < ours["prdc_recall"] < 1


def test_prdc_matches_authors_package(features):
    prdc = pytest.importorskip("prdc", reason="the authors' prdc package is not installed")
    real, fake = features
    ref = prdc.compute_prdc(real_features=real.astype(np.float32), fake_features=fake.astype(np.float32), nearest_k=5)
    ours = compute_prdc(real.astype(np.float32), fake.astype(np.float32), k=5)
    for name in ("precision", "recall", "density", "coverage"):
        assert ours[f"prdc_{name}"] == pytest.approx(ref[name], abs=1e-9), name


def test_prdc_identical_sets():
    x = np.random.default_rng(1).normal(size=(50, 8))
    ours = compute_prdc(x, x, k=5)
    assert ours["prdc_precision"] == 1.0 and ours["prdc_coverage"] == 1.0


def test_prdc_too_few_samples_is_not_computed():
    x = np.zeros((5, 4))
    results = prdc_results(x, x)
    assert all(r.status == "not_computed" and "k=5" in r.note for r in results.values())
