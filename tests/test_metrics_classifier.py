"""acc_top1, acc_top5 and knn_dist (metrics/classifier.py) with the digits tracks' pinned evaluation
classifier, against direct computations, plus the registry pin and re-scoring of claims."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reconbench.image.metrics import score
from reconbench.image.metrics.classifier import Evaluator, classifier_metrics, logits_and_features, track_evaluator
from reconbench.image.models.evaluator import EvalCNN, training_set
from reconbench.core.tracks import get_track
from reconbench.image.track_files import load_splits

pytestmark = pytest.mark.usefixtures("single_torch_thread")


@pytest.fixture(scope="module")
def digits():
    track = get_track("digits")
    evaluator, why = track_evaluator(track)
    assert why is None
    return track, evaluator, load_splits(track).target


def test_pinned_evaluator_is_another_architecture_trained_without_the_target_set(digits):
    track, evaluator, target = digits
    assert isinstance(evaluator.model, EvalCNN) and track.architecture == "small-cnn"
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in evaluator.model.modules())
    assert evaluator.sha256 == track.evaluation_model.sha256
    # none of its training images is a target image (the pixels of all 500 differ from all 1,197)
    train = training_set().images.reshape(-1, 64)
    tar = target.images.reshape(-1, 64)
    assert not (train[:, None, :] == tar[None, :, :]).all(axis=2).any()
    # the documented accuracy on the target set, recomputed
    logits, _ = logits_and_features(evaluator, target.images, "cpu")
    acc = float((logits.argmax(1).numpy() == target.labels).mean())
    assert acc == pytest.approx(track.evaluation_model.accuracy["target"], abs=1e-9) and acc > 0.95


def test_metrics_against_direct_computation(digits):
    _, evaluator, target = digits
    rng = np.random.default_rng(0)
    idx = rng.choice(len(target), 60, replace=False)
    rec = np.clip(target.images[idx].astype(int) + rng.integers(-60, 60, size=target.images[idx].shape), 0, 255).astype(np.uint8)
    labels = target.labels[idx].copy()
    labels[:10] = (labels[:10] + 1) % 10  # some wrong intended classes
    got = classifier_metrics(evaluator, rec, labels, target.images, target.labels)
    logits, f_rec = logits_and_features(evaluator, rec, "cpu")
    _, f_tar = logits_and_features(evaluator, target.images, "cpu")
    order = np.argsort(-logits.numpy(), axis=1)
    assert got["acc_top1"].value == pytest.approx(np.mean(order[:, 0] == labels))
    assert got["acc_top5"].value == pytest.approx(np.mean([labels[i] in order[i, :5] for i in range(len(labels))]))
    knn = [min(float(((f_rec[i] - f_tar[j]) ** 2).sum()) for j in np.flatnonzero(target.labels == labels[i]))
           for i in range(len(labels))]
    assert got["knn_dist"].value == pytest.approx(np.mean(knn), rel=1e-9)
    assert 0 < got["acc_top1"].value < got["acc_top5"].value <= 1


def test_eval_feature_fid_against_pytorch_fid(digits):
    from pytorch_fid.fid_score import calculate_frechet_distance

    from reconbench.image.metrics.classifier import eval_feature_fid

    _, evaluator, target = digits
    rng = np.random.default_rng(1)
    rec = np.clip(target.images.astype(int) + rng.integers(-40, 40, size=target.images.shape), 0, 255).astype(np.uint8)
    _, f_rec = logits_and_features(evaluator, rec, "cpu")
    _, f_tar = logits_and_features(evaluator, target.images, "cpu")
    f_rec, f_tar = f_rec.numpy(), f_tar.numpy()
    reference = calculate_frechet_distance(f_rec.mean(0), np.cov(f_rec, rowvar=False), f_tar.mean(0), np.cov(f_tar, rowvar=False))
    got = eval_feature_fid(evaluator, rec, target.images)
    # 1e-5: the target features may come from the per-process cache, computed in float32 in another
    # batch or thread order than here (seen: 1.07e-6 relative under pytest-xdist)
    assert got == pytest.approx(reference, rel=1e-5) and got > 0.1
    assert eval_feature_fid(evaluator, target.images, target.images) == pytest.approx(0.0, abs=1e-6)


def test_copies_of_targets_score_perfectly_and_noise_does_not(digits):
    _, evaluator, target = digits
    same = classifier_metrics(evaluator, target.images, target.labels, target.images, target.labels)
    assert same["knn_dist"].value == pytest.approx(0.0, abs=1e-6) and same["acc_top1"].value > 0.95
    noise = np.random.default_rng(1).integers(0, 256, size=target.images.shape, dtype=np.uint8)
    rand = classifier_metrics(evaluator, noise, target.labels, target.images, target.labels)
    assert rand["knn_dist"].value > 10 * max(same["knn_dist"].value, 1e-3) and rand["acc_top1"].value < 0.5


def test_label_without_target_class_costs(digits):
    _, evaluator, target = digits
    keep = target.labels != 3  # a target set without any 3
    rec, labels = target.images[:5], np.full(5, 3)
    got = classifier_metrics(evaluator, rec, labels, target.images[keep], target.labels[keep])
    _, f_rec = logits_and_features(evaluator, rec, "cpu")
    _, f_tar = logits_and_features(evaluator, target.images[keep], "cpu")
    worst = torch.cdist(f_rec, f_tar).pow(2).max(dim=1).values.mean()
    assert got["knn_dist"].value == pytest.approx(float(worst), rel=1e-6)
    assert "5 of 5 reconstructions have no target of their class" in got["knn_dist"].note


def test_score_reports_them_for_a_track_and_not_without(digits):
    track, _, target = digits
    x, y = target.images[:20], target.labels[:20]
    with_track = score(x, y, target.images, target.labels, lpips=False, fid=False, track=track)
    assert all(with_track.metrics[n].status == "computed" for n in ("acc_top1", "acc_top5", "knn_dist"))
    assert with_track.provenance["evaluation_model_sha256"] == track.evaluation_model.sha256
    without = score(x, y, target.images, target.labels, lpips=False, fid=False)
    assert without.metrics["acc_top1"].status == "not_computed" and "no evaluation model" in without.metrics["acc_top1"].note


def test_a_changed_evaluation_model_file_is_refused(digits, tmp_path, monkeypatch):
    track, _, _ = digits
    spec = track.evaluation_model.model_copy(update={"sha256": "0" * 64})
    evaluator, why = track_evaluator(track.model_copy(update={"evaluation_model": spec}))
    assert evaluator is None and "is not the registry's" in why


def test_rescoring_tolerates_one_flipped_label_and_not_two():
    from reconbench.image.metrics import MetricResult
    from reconbench.submissions.checks.rescore import compare

    actual = MetricResult(status="computed", value=0.5)
    one, two = MetricResult(status="computed", value=0.5 + 1 / 500), MetricResult(status="computed", value=0.5 + 2 / 500)
    assert compare("acc_top1", one, actual, 500, 500).status == "pass"
    assert compare("acc_top1", two, actual, 500, 500).status == "fail"
    # an entry made before these metrics existed claims nothing: re-scored here, and passes
    absent = compare("knn_dist", None, MetricResult(status="computed", value=3.0), 500, 500)
    assert absent.status == "pass" and "not claimed" in absent.message
