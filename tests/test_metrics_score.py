"""The public API: names, result model, input checking, the not_computed paths."""

import numpy as np
import pydantic
import pytest
import torch

from reconbench.image.metrics import METRICS, MetricInfo, MetricResult, ScoreReport, score
from reconbench.image.metrics.testdata import digits


NAMES = ["mse", "psnr", "ssim", "lpips", "fid", "prdc_precision", "prdc_recall", "prdc_density", "prdc_coverage",
         "acc_top1", "acc_top5", "knn_dist"]


pytestmark = pytest.mark.usefixtures("single_torch_thread")


@pytest.fixture(scope="module")
def small():
    x, y = digits()
    return x[:30], y[:30]


def test_metric_registry():
    assert list(METRICS) == NAMES
    for name, info in METRICS.items():
        assert isinstance(info, MetricInfo) and info.name == name
        assert info.direction in ("↓", "↑") and info.level in ("sample", "dataset", "classifier")
        assert info.formula and "\n" not in info.formula and info.reference and info.range
    assert [n for n, m in METRICS.items() if m.level == "sample"] == ["mse", "psnr", "ssim", "lpips"]
    assert METRICS["ssim"].direction == "↑" and METRICS["mse"].direction == "↓" and METRICS["fid"].direction == "↓"
    assert [n for n, m in METRICS.items() if m.level == "classifier"] == ["acc_top1", "acc_top5", "knn_dist"]
    assert METRICS["acc_top1"].direction == "↑" and METRICS["knn_dist"].direction == "↓"
    assert "MI-Face" in METRICS["acc_top1"].caveat  # the SoK's caveat beside the number


def test_report_has_every_metric_and_matches(small, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))  # no weights: LPIPS/FID not computed
    x, y = small
    report = score(x, y, x, y, weights_dir=tmp_path)
    assert isinstance(report, ScoreReport) and list(report.metrics) == NAMES
    assert set(report.matches) == {"mse", "psnr", "ssim"}
    for name in ("mse", "psnr", "ssim"):
        assert report.matches[name].dtype == np.int64 and report.matches[name].shape == (30,)
        assert report.metrics[name].status == "computed" and 0 < report.metrics[name].coverage <= 1
    assert report.metrics["psnr"].value == 100.0  # exact copies: capped, not inf
    assert report.summary()["ssim"] == "1.000 (100.00%)"
    assert report.to_dict()["fid"]["status"] == "not_computed"
    assert report.provenance == {"ssim_window": "gaussian sigma=1.5, 11 taps, valid window 7"}


def test_torch_inputs_and_disabled_metrics(small):
    x, y = small
    report = score(torch.from_numpy(x), torch.from_numpy(y), x, y, lpips=False, fid=False)
    assert report.metrics["lpips"].note == "LPIPS: not computed (disabled)"
    assert report.metrics["fid"].note == "FID: not computed (disabled)"
    assert report.metrics["mse"].value == 0.0


@pytest.mark.parametrize(
    "change, error",
    [
        (lambda x, y: (x.astype(np.float32), y), TypeError),
        (lambda x, y: (x[:, :, :, :7], y), ValueError),
        (lambda x, y: (np.repeat(x, 2, axis=1), y), ValueError),
        (lambda x, y: (x, y[:-1]), ValueError),
        (lambda x, y: (x, y.astype(np.float64)), TypeError),
        (lambda x, y: (x[:0], y[:0]), ValueError),
    ],
)
def test_bad_inputs_are_rejected(small, change, error):
    x, y = small
    rx, ry = change(x, y)
    with pytest.raises(error):
        score(rx, ry, x, y, lpips=False, fid=False)


def test_metric_result_model():
    ok = MetricResult(status="computed", value=0.5, coverage=0.25)
    assert ok.format() == "0.500 (25.00%)"
    assert MetricResult.not_computed("why").model_dump() == {"value": None, "coverage": None, "status": "not_computed", "note": "why"}
    with pytest.raises(pydantic.ValidationError):
        MetricResult(status="computed", value=1.0, extra_field=1)  # extra="forbid"
    with pytest.raises(pydantic.ValidationError):
        MetricResult(status="computed", value=None)
    with pytest.raises(pydantic.ValidationError):
        MetricResult(status="computed", value=float("inf"))
    with pytest.raises(pydantic.ValidationError):
        MetricResult(status="computed", value=1.0, coverage=1.5)
    with pytest.raises(pydantic.ValidationError):
        MetricResult(status="not_computed", value=1.0)
