"""`recon-submit score` on a file made elsewhere, and `recon-submit memorization` on a tiny budget."""

import pytest
import json

import numpy as np
from typer.testing import CliRunner

from reconbench.cli import app
from reconbench.core.io import save_arrays
from reconbench.core.tracks import get_track
from reconbench.image.track_files import load_splits

runner = CliRunner()


@pytest.mark.portable  # the pairwise MSE's int8 GEMM saturated without VNNI: 0.025, not 0 (issue 47)
def test_score_of_the_target_set_itself_is_perfect(tmp_path):
    target = load_splits(get_track("digits"), ["target"]).target
    path = tmp_path / "rec.safetensors"
    save_arrays(path, {"images": target.images, "labels": target.labels})
    res = runner.invoke(app, ["score", str(path), "--json"])
    assert res.exit_code == 0, res.output
    metrics = json.loads(res.output)
    assert metrics["mse"]["value"] == 0.0 and metrics["mse"]["coverage"] == 1.0
    assert metrics["ssim"]["value"] > 0.999 and metrics["fid"]["status"] == "not_computed"


def test_score_refuses_wrong_shape_and_bad_file(tmp_path):
    path = tmp_path / "rec.safetensors"
    save_arrays(path, {"images": np.zeros((4, 3, 8, 8), np.uint8), "labels": np.zeros(4, np.int64)})
    res = runner.invoke(app, ["score", str(path)])
    assert res.exit_code != 0 and "needs (1, 8, 8)" in res.output
    path.write_bytes(b"\x80\x04garbage")
    res = runner.invoke(app, ["score", str(path)])
    assert res.exit_code != 0 and "not a valid safetensors file" in res.output


def test_memorization_command_reports_a_model_level_value():
    res = runner.invoke(app, ["memorization", "--models", "3", "--epochs", "1"])
    assert res.exit_code == 0, res.output
    value = float(res.output.split("memorization of 'digits':")[1].split()[0])
    assert -1.0 <= value <= 1.0


def test_memorization_refuses_hub_tracks():
    res = runner.invoke(app, ["memorization", "--track", "cifar10-vgg16-n1000"])
    assert res.exit_code != 0 and "targets train" in res.output
