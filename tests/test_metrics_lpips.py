"""LPIPS: the batched Euclidean form against the lpips package pair by pair (same backbone
weights copied in), weight loading without network, and the not_computed path."""

import dataclasses
import hashlib
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from reconbench.image.metrics import score
from reconbench.image.metrics.lpips_metric import LPIPSExtractor, lpips_pairwise, standin_alexnet_state_dict
from reconbench.image.metrics.pairwise import naive_nearest_same_class
from reconbench.image.metrics.testdata import digits, perturb, photo_patches
from real_weights import real_weights_dir
from reconbench.image.metrics.weights import ALEXNET, WeightSpec, hub_checkpoint_dir, load_weights


lpips_pkg = pytest.importorskip("lpips")
SLICE_OF = {0: 1, 3: 2, 6: 3, 8: 4, 10: 5}  # torchvision features index -> lpips alexnet slice


pytestmark = pytest.mark.usefixtures("single_torch_thread")


@pytest.fixture(scope="module")
def standin():
    return standin_alexnet_state_dict(seed=0)


def reference_lpips(backbone_state_dict):
    """lpips.LPIPS with its shipped linear layers and our backbone weights copied into its slices."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchvision's 'pretrained' deprecation
        ref = lpips_pkg.LPIPS(net="alex", pretrained=True, pnet_rand=True, verbose=False)
    copied = {}
    for key, value in backbone_state_dict.items():
        if key.startswith("features."):
            _, idx, kind = key.split(".")
            copied[f"net.slice{SLICE_OF[int(idx)]}.{idx}.{kind}"] = value
    assert not ref.load_state_dict(copied, strict=False).unexpected_keys
    return ref.eval()


def reference_input(images):
    """Independent preprocessing: [0,1] -> grey to RGB -> upsample small images to 64 -> [-1,1]."""
    x = torch.from_numpy(images).float() / 255.0
    x = x.repeat(1, 3, 1, 1) if x.shape[1] == 1 else x
    if min(x.shape[2:]) < 32:
        x = F.interpolate(x, size=(64, 64), mode="bilinear", align_corners=False)
    return 2.0 * x - 1.0


def check_against_reference(state_dict, which):
    x = photo_patches(6, size=32, seed=2)[0] if which == "photos" else digits()[0][:6]
    rec = perturb(x[:5], 30.0, seed=1)
    ours = lpips_pairwise(LPIPSExtractor(state_dict), torch.from_numpy(rec), torch.from_numpy(x)).numpy()
    ref, a, b = reference_lpips(state_dict), reference_input(rec), reference_input(x)
    with torch.no_grad():
        expected = np.array([[ref(a[i : i + 1], b[j : j + 1]).item() for j in range(len(x))] for i in range(len(rec))])
    assert np.abs(ours - expected).max() < 1e-4
    assert expected.std() > 1e-3  # the check is not vacuous


@pytest.mark.parametrize("which", ["photos", "digits"])
def test_lpips_matches_reference_pair_by_pair(which, standin):
    check_against_reference(standin, which)


def test_lpips_nearest_map_and_coverage(standin):
    x, y = photo_patches(20, size=32, seed=3)
    rec = perturb(x[:12], 40.0, seed=2)
    ry = y[:12]
    ex = LPIPSExtractor(standin)
    report = score(rec, ry, x, y, fid=False, lpips_extractor=ex)
    ref, a, b = reference_lpips(standin), reference_input(rec), reference_input(x)
    with torch.no_grad():  # same-class pairs only: the naive loop reads no others
        dist = np.array([[ref(a[i : i + 1], b[j : j + 1]).item() if ry[i] == y[j] else np.nan for j in range(len(x))] for i in range(len(rec))])
    naive = naive_nearest_same_class(dist, ry, y, larger_is_better=False, worst=ex.max_distance)
    np.testing.assert_array_equal(report.matches["lpips"], naive.match)
    result = report.metrics["lpips"]
    assert result.value == pytest.approx(naive.best.mean(), abs=1e-4)
    assert result.coverage == pytest.approx(len(set(naive.match)) / len(x))
    assert "caller" in result.note  # stand-in weights are flagged


def test_lpips_of_identical_images_is_zero(standin):
    x = photo_patches(5, size=32, seed=4)[0]
    d = lpips_pairwise(LPIPSExtractor(standin), torch.from_numpy(x), torch.from_numpy(x)).numpy()
    assert np.abs(np.diag(d)).max() < 1e-6 and (d >= 0).all()


def test_not_computed_without_weights(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    x, y = digits()
    report = score(x[:20], y[:20], x[:20], y[:20], fid=False, weights_dir=tmp_path)
    assert report.metrics["lpips"].status == "not_computed"
    note = report.metrics["lpips"].note  # what is missing, and the one command that fetches it
    assert note.startswith("LPIPS: not computed") and ALEXNET.filename in note and "`recon-submit weights fetch`" in note
    assert report.metrics["lpips"].value is None and "lpips" not in report.matches


def test_safetensors_backbone_in_weights_dir(tmp_path, monkeypatch, standin):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    features = {k: v.contiguous() for k, v in standin.items() if k.startswith("features.")}  # 10 MB, not 244
    save_file(features, str(tmp_path / ALEXNET.safetensors_name))
    ex = LPIPSExtractor.from_weights(tmp_path)
    assert ex is not None
    assert ex.weights_sha256 == hashlib.sha256((tmp_path / ALEXNET.safetensors_name).read_bytes()).hexdigest()
    x, y = digits()
    report = score(x[:10], y[:10], x[:10], y[:10], fid=False, weights_dir=tmp_path)
    assert report.metrics["lpips"].status == "computed" and report.metrics["lpips"].note is None
    assert report.metrics["lpips"].coverage == 1.0


def test_pth_is_opened_only_with_the_pinned_digest(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    hub = hub_checkpoint_dir()
    hub.mkdir(parents=True)
    (hub / ALEXNET.filename).write_bytes(b"not the alexnet file")
    with pytest.warns(UserWarning, match="not the pinned"):
        assert load_weights(ALEXNET, None) is None  # never unpickled
    # a small stand-in file with its own pin loads (torch.load weights_only=True)
    torch.save({"w": torch.ones(3)}, hub / "tiny.pth")
    data = (hub / "tiny.pth").read_bytes()
    spec = WeightSpec("tiny", "tiny.pth", "http://127.0.0.1:9/tiny.pth", len(data), hashlib.sha256(data).hexdigest(), "tests")
    loaded = load_weights(spec, None)
    assert loaded is not None and torch.equal(loaded.state_dict["w"], torch.ones(3))
    with pytest.warns(UserWarning):
        assert load_weights(dataclasses.replace(spec, sha256="0" * 64), None) is None


REAL = real_weights_dir(ALEXNET)


@pytest.mark.skipif(REAL is None, reason="real AlexNet weights neither in the toolkit cache nor in torch hub's (offline machine)")
def test_real_weights_match_lpips_package():
    loaded = load_weights(ALEXNET, REAL)
    assert loaded is not None, "the file is present but its sha256 is not the pinned one"
    check_against_reference(loaded.state_dict, "photos")
