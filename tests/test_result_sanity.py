"""Results that mean what they say (issue 15 item 4): what clamping or casting would silently
change is refused; a perfect reconstruction scores within every metric's range; `score` applies
evaluate's size rule; memorization with no models is an error."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reconbench.image.attacks.base import AttackError, Reconstruction, enforce_size
from reconbench.image.metrics import METRICS, score
from reconbench.image.metrics.inception import InceptionExtractor, standin_inception_state_dict
from reconbench.image.metrics.lpips_metric import LPIPSExtractor, standin_alexnet_state_dict
from reconbench.image.metrics.testdata import digits
from reconbench.image.results import VALUE_RANGES

from cli_process import one_error_line, recon

SHAPE = (1, 8, 8)


def _rec(images, labels=None):
    return Reconstruction(images, labels if labels is not None else torch.zeros(len(images), dtype=torch.int64))


@pytest.mark.parametrize(("images", "labels", "message"), [
    (torch.full((4, *SHAPE), 200, dtype=torch.uint8), None, r"images are uint8: return floats in \[0, 1\]"),
    (torch.full((4, *SHAPE), 200.0), None, r"pixel values span \[200, 200\]: images must be floats in \[0, 1\] \(0-255 images: divide by 255\)"),
    (torch.linspace(-1, 1, 4 * 64).reshape(4, *SHAPE), None, r"\(\[-1, 1\] images: \(x \+ 1\) / 2\)"),
    (torch.rand(4, *SHAPE), torch.tensor([0.0, 1.7, 2.2, 3.9]), "labels are float32: return int64 class indices"),
])
def test_values_that_would_be_silently_changed_are_refused(images, labels, message):
    with pytest.raises(AttackError, match=message):
        enforce_size(_rec(images, labels), 10, SHAPE)


def test_round_off_outside_unit_range_is_still_clamped():
    images = torch.rand(4, *SHAPE)
    images[0, 0, 0, 0], images[1, 0, 0, 0] = 1.0001, -0.0001
    out = enforce_size(_rec(images), 4, SHAPE)
    assert float(out.images.max()) <= 1.0 and float(out.images.min()) >= 0.0


def test_identity_reconstruction_is_in_range_for_every_metric(tmp_path):
    """Reconstructions equal to the target set: every metric at its perfect value, within the
    result schema's range (SSIM's round-off above 1 once made `evaluate` crash)."""
    from reconbench.core.tracks import get_track

    x, y = digits()
    x, y = x[:120], y[:120]
    report = score(x, y, x, y, lpips_extractor=LPIPSExtractor(standin_alexnet_state_dict(seed=0)),
                   inception_extractor=InceptionExtractor(standin_inception_state_dict(seed=0), dims=64),
                   cache_dir=tmp_path, track=get_track("digits"))  # the track: its evaluation classifier
    assert set(report.metrics) == set(METRICS)
    for name, result in report.metrics.items():
        assert result.status == "computed", (name, result.note)
        low, high = VALUE_RANGES.get(name, (-np.inf, np.inf))
        assert low <= result.value <= high, (name, result.value)
    perfect = {"mse": 0.0, "ssim": 1.0, "lpips": 0.0, "fid": 0.0, "prdc_precision": 1.0, "prdc_recall": 1.0,
               "prdc_coverage": 1.0, "knn_dist": 0.0}
    for name, value in perfect.items():
        if name not in report.metrics:
            continue  # a metric this checkout does not have
        assert report.metrics[name].value == pytest.approx(value, abs=1e-6), name
    assert report.metrics["psnr"].value >= 99.0  # capped, not infinite
    for name in ("mse", "psnr", "ssim", "lpips"):
        assert report.metrics[name].coverage == pytest.approx(1.0)


def test_score_refuses_more_images_than_the_target_set(tmp_path):
    from reconbench.core.io import save_arrays

    x, y = digits()
    path = tmp_path / "r.safetensors"
    save_arrays(path, {"images": np.concatenate([x[:500], x[:5]]), "labels": np.concatenate([y[:500], y[:5]]).astype(np.int64)})
    line = one_error_line(recon("score", str(path), "--track", "digits"))
    assert line == f"{path}: 505 reconstructions, more than |D_tar| = 500 of track 'digits'"


def test_memorization_with_no_models_is_an_error():
    line = one_error_line(recon("memorization", "--track", "digits", "--models", "0"))
    assert "--models 0" in line and "at least 2" in line
