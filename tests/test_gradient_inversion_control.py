"""The gradient-inversion positive control (issue 44, item 1): DLG's setting on Fashion-MNIST.

The tracks fashion-lenet-u{1,2,4,8} observe the gradient of one step of DLG's untrained Sigmoid LeNet
on an update of 1, 2, 4 or 8 images. Here: the network is twice differentiable (gradient matching
differentiates through a gradient), iDLG's label is exact at batch 1, Deep Leakage brings a batch-1
member back below the track's extraction threshold in seconds, the registry pins the weights and the
update, and Inv-Alignment (a static black-box attack) is refused by the taxonomy."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

import pytest

from reconbench.core.io import sha256_file
from reconbench.core.scenario import Scenario
from reconbench.core.tracks import TrackError, get_track
from reconbench.image.attacks import ATTACKS
from reconbench.image.attacks.base import Progress
from reconbench.image.attacks.deep_leakage import DeepLeakage, idlg_labels
from reconbench.image.dynamic import UPDATE_SEED, observed_gradients
from reconbench.image.knowledge import build_knowledge
from reconbench.image.models import build_model
from reconbench.image.models.fashion_registry import CONTROL_BATCHES
from reconbench.image.models.fashion_targets import train
from reconbench.image.track_files import embedded_file, load_splits, load_target_model, model_file

WHITE = Scenario.parse("dynamic/white-box/none")
TRACKS = [f"fashion-lenet-u{k}" for k in CONTROL_BATCHES]


def _second_derivative(model: nn.Module) -> float:
    """|d/dx <v, d f(x)/dx>|: the input Hessian of one logit against a fixed direction (0 for piecewise-linear nets)."""
    torch.manual_seed(0)
    x = torch.rand(1, 1, 32, 32, requires_grad=True)
    v = torch.randn_like(x)
    (g,) = torch.autograd.grad(model(x)[0, 3], x, create_graph=True)
    (h,) = torch.autograd.grad((g * v).sum(), x)
    return float(h.abs().sum())


def test_the_lenet_is_twice_differentiable_and_a_relu_twin_is_not():
    lenet = load_target_model(get_track("fashion-lenet-u1"))
    assert _second_derivative(lenet) > 1e-6
    # the check can fail: the same layers with ReLU are piecewise linear, their second derivative is 0
    relu = build_model("lenet-sigmoid", in_channels=1, num_classes=10, image_size=32)
    relu.load_state_dict(lenet.state_dict())
    for i, layer in enumerate(relu.body):
        if isinstance(layer, nn.Sigmoid):
            relu.body[i] = nn.ReLU()
    assert _second_derivative(relu) == 0.0


@pytest.mark.parametrize("track_id", TRACKS)
def test_the_registry_row_pins_the_weights_and_the_update(track_id):
    track = get_track(track_id)
    k = int(track_id.rsplit("u", 1)[1])
    assert track.architecture == "lenet-sigmoid" and track.scenarios == [str(WHITE)]
    assert track.update_size == track.gradient_batch_size == k  # the whole update is one observed batch
    assert track.train_size == 0 and track.target_set_sha256 is None  # untrained: DLG attacks the initialised net
    assert sha256_file(model_file(track)) == track.target_model_sha256
    splits = load_splits(track, ["update"])  # hash-checked against update_set_sha256
    assert len(splits.update) == k and splits.update.sha256 == track.update_set_sha256
    assert track.extraction is not None and track.extraction.threshold > 0


def test_the_recipe_rebuilds_the_shipped_weights_exactly():
    """No training, only DLG's seeded U(-0.5, 0.5) draws: the same tensors on any CPU."""
    shipped = load_target_model(get_track("fashion-lenet-u1")).state_dict()
    rebuilt = train("lenet-sigmoid-dlg").state_dict()
    assert shipped.keys() == rebuilt.keys()
    assert all(torch.equal(shipped[n], rebuilt[n]) for n in shipped)
    assert all(v.abs().max() <= 0.5 for v in shipped.values())  # DLG's U(-0.5, 0.5)
    assert all(v.abs().max() > 0.49 for v in shipped.values() if v.numel() >= 300)  # ... not torch's default init


def test_a_tampered_weight_file_is_refused(tmp_path, monkeypatch):
    """A swapped model (another init) fails the registry's pin, naming the file."""
    import reconbench.image.track_files as tf
    from reconbench.image.models import save_model

    other = build_model("lenet-sigmoid", in_channels=1, num_classes=10, image_size=32)
    (tmp_path / "fashion").mkdir()
    save_model(other, tmp_path / "fashion" / "lenet-sigmoid-dlg.safetensors")
    monkeypatch.setattr(tf, "embedded_file", lambda name: tmp_path / name)
    with pytest.raises(TrackError, match="lenet-sigmoid-dlg.safetensors"):
        load_target_model(get_track("fashion-lenet-u1"))
    assert embedded_file("fashion/lenet-sigmoid-dlg.safetensors").is_file()


def test_idlg_label_is_exact_at_batch_one():
    """On the track's own view, and on each of the first 20 images of the update block one at a time."""
    track = get_track("fashion-lenet-u1")
    k = build_knowledge(track, WHITE)
    observed = k.extra("update_gradients")
    update = load_splits(track, ["update"]).update
    got = idlg_labels(list(observed.gradients), list(observed.parameter_names), 10)
    assert got.tolist() == update.labels.tolist()
    from reconbench.image.data.fashion_splits import fashion_splits

    block = fashion_splits("fashion-mnist", 0, 20).update
    model = load_target_model(track)
    singles = observed_gradients(model, block, batch_size=1)
    names = list(singles.parameter_names)
    order = np.random.default_rng(UPDATE_SEED).permutation(20)  # the view's seeded batch order (dynamic._order)
    labels = idlg_labels(list(singles.gradients), names, 10)
    assert labels.tolist() == block.labels[order].tolist()
    assert len(set(block.labels.tolist())) == 10  # every class is among them


def test_idlg_needs_a_class_layer():
    with pytest.raises(ValueError, match="last linear layer"):
        idlg_labels([(torch.zeros(3, 4), torch.zeros(3))], ["w", "b"], 10)


@pytest.mark.slow  # ~70 CPU-s (207 s wall at load 9): four starts of 300 L-BFGS steps (one start that converges: ~17 CPU-s)
def test_deep_leakage_extracts_the_batch_one_member():
    """DLG's L-BFGS with iDLG's label and 4 restarts (the committed entry's configuration): the member comes
    back far below the extraction threshold. One start is not enough: seed 0's first start stalls at MSE 0.4."""
    track = get_track("fashion-lenet-u1")
    k = build_knowledge(track, WHITE)
    attack = DeepLeakage(iterations=300, label="idlg", restarts=4)
    rec = attack.run(k, seed=0, progress=Progress())
    update = load_splits(track, ["update"]).update
    mse = float(((rec.images.double() - torch.from_numpy(update.images).double() / 255) ** 2).mean())
    assert mse < track.extraction.threshold / 10, mse
    assert rec.labels.tolist() == update.labels.tolist()


def test_the_defaults_stay_dlg_s_and_bad_options_are_refused():
    """restarts=1, label=joint is DLG's main.py (what the earlier entries ran); anything else is named."""
    assert DeepLeakage.Options().restarts == 1 and DeepLeakage.Options().label == "joint"
    with pytest.raises(Exception, match="label"):
        DeepLeakage(label="oracle")
    with pytest.raises(Exception, match="restarts"):
        DeepLeakage(restarts=10_000)  # a bounded budget: 64 starts at most


def test_inv_alignment_is_not_a_gradient_attack_and_is_refused():
    """Yang et al.'s Inv-Alignment is static and black-box (SoK Table 1): the harness refuses it on a
    dynamic white-box track rather than run it against the wrong thing."""
    from reconbench.image.evaluation import choose_scenario

    assert "dynamic/white-box/none" not in ATTACKS["inv-alignment"].scenarios
    with pytest.raises(Exception, match="(?i)scenario|offer"):
        choose_scenario(get_track("fashion-lenet-u1"), ATTACKS["inv-alignment"], None)


def _control_entries() -> list:
    from pathlib import Path

    from reconbench.image.results import RESULT_FILE
    from reconbench.text.results import parse_any_result

    root = Path(__file__).resolve().parents[1] / "submissions" / "reconbench-baselines"
    found = []
    for result in sorted(root.glob(f"fashion-lenet-u*/{RESULT_FILE}")):
        found.append((result.parent, parse_any_result(result).payload))
    return found


def test_the_control_has_committed_entries_of_deep_leakage_at_each_batch():
    entries = _control_entries()
    assert {p.track for _, p in entries if p.attack.name == "deep-leakage"} == {f"fashion-lenet-u{k}" for k in CONTROL_BATCHES}
    for _, payload in entries:
        assert payload.attack.config["label"] == "idlg" and payload.attack.config["iterations"] == 300


@pytest.mark.slow  # validation re-scores and searches the public pool for copies (10 s here with a warm cache)
def test_the_batch_one_entry_validates_reproduced_and_extracts_its_member():
    """The committed Deep Leakage entry on fashion-lenet-u1: signed, re-scored, reproduced (a listed
    reproducer's record for this very payload) and its count extracts the one member at p < alpha."""
    from reconbench.core.membership import ALPHA
    from reconbench.core.verdict import EXTRACTS, entry_verdict
    from reconbench.submissions import validate_board

    (entry, payload), = [(e, p) for e, p in _control_entries() if p.track == "fashion-lenet-u1" and p.attack.name == "deep-leakage"]
    report = validate_board([entry], entry.parents[1], rescore=True)
    assert report.ok, [(r.entry_id, [c.message for c in r.checks if c.status == "fail"]) for r in report.entries]
    (r,) = report.entries
    assert r.trust == "reproduced"
    count = payload.membership.extraction
    assert count.members == count.n_members == 1 and count.holdout == 0 and count.p < ALPHA
    assert entry_verdict(payload.membership.metrics, count).tier is EXTRACTS  # the board's word: "extracts 1"
