"""A zoo track's evaluation classifier: another architecture, trained on target + aux_same, and an
entry the registry accepts as the track's `evaluation_model`."""

from __future__ import annotations

import pytest

from reconbench.core.io import sha256_file
from reconbench.core.tracks import EvaluationModel
from reconbench.zoo.evaluator import FILE, evaluation_architecture, train_evaluation_model
from reconbench.zoo.prepare import prepare_dataset

pytestmark = pytest.mark.usefixtures("single_torch_thread")


def test_evaluation_architecture_differs_from_every_target():
    for target in ("vgg16", "resnet18", "small-cnn", "homogeneous-mlp"):
        assert evaluation_architecture(target) != target


def test_train_evaluation_model_gives_a_registry_entry(tmp_path):
    prepare_dataset("digits", tmp_path / "data")
    entry = train_evaluation_model("digits-small-cnn-n100", tmp_path / "data", tmp_path / "out", epochs=3)
    pinned = EvaluationModel.model_validate(entry)
    assert pinned.architecture == "eval-cnn" and pinned.file == FILE
    assert pinned.sha256 == sha256_file(tmp_path / "out" / FILE)
    assert "aux_same" in pinned.trained_on and 0.0 <= pinned.accuracy["test"] <= 1.0
