"""FID: the Fréchet distance against pytorch-fid, our download-free Inception against
pytorch-fid's own (same weights), the content-hash feature cache, and the not_computed path."""

import warnings

import numpy as np
import pytest
import torch
from pytorch_fid import fid_score as pf_score
from pytorch_fid import inception as pf_inception

from reconbench.image.metrics import score
from reconbench.image.metrics.feature_cache import cached_features, content_key, default_cache_dir
from reconbench.image.metrics.fid import fid_from_features, frechet_distance, gaussian_stats
from reconbench.image.metrics.inception import InceptionExtractor, standin_inception_state_dict
from reconbench.image.metrics.testdata import digits, perturb, photo_patches
from real_weights import real_weights_dir
from reconbench.image.metrics.weights import FID_INCEPTION, hub_checkpoint_dir, load_weights


pytestmark = pytest.mark.usefixtures("single_torch_thread")


@pytest.fixture(scope="module")
def standin():
    return standin_inception_state_dict(seed=0)


def pytorch_fid_frechet(*args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy's deprecated `disp` argument, singular-matrix notes
        return pf_score.calculate_frechet_distance(*args)


@pytest.mark.parametrize("n, d, shift", [(300, 32, 0.0), (300, 64, 0.5), (40, 64, 1.0)])
def test_frechet_matches_pytorch_fid(n, d, shift):
    rng = np.random.default_rng(d)
    mix = rng.normal(size=(d, d)) / np.sqrt(d)
    a = rng.normal(size=(n, d)) @ mix
    b = rng.normal(size=(n, d)) @ (mix + 0.1 * rng.normal(size=(d, d))) + shift
    stats = (*gaussian_stats(a), *gaussian_stats(b))
    ref = pytorch_fid_frechet(*stats)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # n < d: singular covariance, as pytorch-fid warns too
        ours = frechet_distance(*stats)
    assert ours == pytest.approx(ref, rel=1e-6, abs=1e-8)


def test_frechet_formula_on_diagonal_gaussians():
    # ||mu1 - mu2||^2 + sum_i (s1_i + s2_i - 2 sqrt(s1_i s2_i)) for diagonal covariances
    mu1, mu2 = np.array([0.0, 1.0, 2.0]), np.array([1.0, 1.0, 0.0])
    s1, s2 = np.array([1.0, 4.0, 9.0]), np.array([4.0, 4.0, 1.0])
    expected = 5.0 + np.sum(s1 + s2 - 2 * np.sqrt(s1 * s2))
    assert frechet_distance(mu1, np.diag(s1), mu2, np.diag(s2)) == pytest.approx(expected)


def pool3_like(rng, n, d, mix, shift=0.0):
    """Non-negative, correlated float32 features, as pool3 averages of ReLU maps are."""
    return np.maximum(rng.normal(size=(n, d)) @ mix + shift, 0.0).astype(np.float32)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n_rec, n_tar, d", [(20, 40, 160), (120, 90, 160), (400, 300, 128)])
def test_eigenvalue_fid_matches_pytorch_fid(seed, n_rec, n_tar, d):
    """Both routes (covariances; features with fewer samples than dimensions) against pytorch-fid's
    sqrtm, on few-sample (singular) and full-rank covariances."""
    rng = np.random.default_rng(seed)
    mix = rng.normal(size=(d, d)) / np.sqrt(d)
    rec = pool3_like(rng, n_rec, d, mix + 0.1 * rng.normal(size=(d, d)), 0.2)
    tar = pool3_like(rng, n_tar, d, mix)
    stats = (*gaussian_stats(rec), *gaussian_stats(tar))
    ref = pytorch_fid_frechet(*stats)
    assert frechet_distance(*stats) == pytest.approx(ref, rel=1e-6)
    assert fid_from_features(rec, tar) == pytest.approx(ref, rel=1e-6)
    assert fid_from_features(rec, rec) == pytest.approx(0.0, abs=1e-6 * ref)


def test_inception_equals_pytorch_fid_network(standin, monkeypatch):
    # build pytorch-fid's own InceptionV3, its weight download replaced by the same stand-in weights
    monkeypatch.setattr(pf_inception, "load_state_dict_from_url", lambda *a, **k: standin)
    ref = pf_inception.InceptionV3([3]).eval()
    ours = InceptionExtractor(standin, dims=2048)
    rgb, grey = photo_patches(1, size=32, seed=5)[0], digits()[0][:1]  # grey: repeated to 3 channels
    with torch.no_grad():
        inputs = [torch.from_numpy(rgb).float() / 255.0, torch.from_numpy(grey).float().repeat(1, 3, 1, 1) / 255.0]
        expected = np.concatenate([ref(x)[0].flatten(1).numpy() for x in inputs])
    got = np.concatenate([ours.features(torch.from_numpy(rgb)), ours.features(torch.from_numpy(grey))])
    assert got.shape == (2, 2048)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert np.abs(expected).mean() > 1e-3  # the stand-in weights give non-vanishing features


def test_target_features_are_cached_by_content(standin, tmp_path):
    ex = InceptionExtractor(standin, dims=64)
    x = torch.from_numpy(digits()[0][:6])
    first, hit1 = cached_features(ex, x, tmp_path)
    second, hit2 = cached_features(ex, x, tmp_path)
    assert (hit1, hit2) == (False, True)
    np.testing.assert_array_equal(first, second)
    files = list(tmp_path.rglob("*.safetensors"))
    assert [f.name for f in files] == [f"{content_key(x)}.safetensors"] and files[0].parent.name == ex.tag
    assert content_key(x) != content_key(x.reshape(6, 1, 4, 16))  # the shape is part of the key
    other = InceptionExtractor(standin_inception_state_dict(seed=1), dims=64)
    assert cached_features(other, x, tmp_path)[1] is False  # other weights, other folder
    files[0].write_bytes(b"truncated")  # a broken file is recomputed, not trusted
    again, hit3 = cached_features(ex, x, tmp_path)
    assert hit3 is False and np.array_equal(again, first)


def test_cache_dir_follows_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("RECONBENCH_CACHE", str(tmp_path))
    assert default_cache_dir() == tmp_path / "features"


def test_score_with_standin_extractor(standin, tmp_path):
    x, y = photo_patches(8, size=32, seed=6)
    rec = perturb(x, 20.0)
    ex = InceptionExtractor(standin, dims=64)  # 64-d keeps the test fast; scoring uses 2048
    report = score(rec, y, x, y, lpips=False, inception_extractor=ex, cache_dir=tmp_path)
    fid = report.metrics["fid"]
    assert fid.status == "computed" and fid.coverage is None
    assert "caller" in fid.note and report.provenance["fid_inception_sha256"] == "caller-supplied"
    f_tar, hit = cached_features(ex, torch.from_numpy(x), tmp_path)  # written by score()
    f_rec = ex.features(torch.from_numpy(rec))
    assert hit
    stats = (*gaussian_stats(f_rec), *gaussian_stats(f_tar))
    # FID 0.06 is the difference of traces ~7: sqrtm of this rank-7 product is off by 1e-5 relative to
    # the FID (a 40-digit mpmath SVD agrees with ours to 4e-8), so compare on the scale of the traces
    scale = np.trace(stats[1]) + np.trace(stats[3])
    assert fid.value == pytest.approx(pytorch_fid_frechet(*stats), abs=1e-6 * scale)
    for name in ("prdc_precision", "prdc_recall", "prdc_density", "prdc_coverage"):
        assert report.metrics[name].status == "computed" and report.metrics[name].coverage is None
    same = score(x, y, x, y, lpips=False, inception_extractor=ex, cache_dir=tmp_path)
    assert abs(same.metrics["fid"].value) < 1e-6


def test_not_computed_without_weights(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    x, y = digits()
    report = score(x[:10], y[:10], x[:10], y[:10], lpips=False, weights_dir=tmp_path)
    fid = report.metrics["fid"]
    assert (fid.status, fid.value, fid.coverage) == ("not_computed", None, None)
    assert fid.note.startswith("FID: not computed") and FID_INCEPTION.filename in fid.note
    assert "`recon-submit weights fetch`" in fid.note  # what is missing and the command that fetches it
    for name in ("prdc_precision", "prdc_recall", "prdc_density", "prdc_coverage"):
        assert report.metrics[name].status == "not_computed" and FID_INCEPTION.filename in report.metrics[name].note
    assert not list(tmp_path.rglob("*.safetensors"))  # nothing computed, nothing cached


REAL = real_weights_dir(FID_INCEPTION)


@pytest.mark.skipif(REAL is None, reason="real pytorch-fid Inception weights neither in the toolkit cache nor in torch hub's (offline machine)")
def test_real_weights_load_and_give_features():
    loaded = load_weights(FID_INCEPTION, REAL)
    assert loaded is not None, "the file is present but its sha256 is not the pinned one"
    ex = InceptionExtractor.from_weights(REAL)
    f = ex.features(torch.from_numpy(photo_patches(4, size=32)[0]))
    assert f.shape == (4, 2048) and np.isfinite(f).all() and (f >= 0).all()
