"""Bias-Rec (Haim et al., NeurIPS'22; multi-class: Buzaglo et al., NeurIPS'23) and its track."""

import numpy as np
import torch
from scipy.optimize import nnls

from attack_scoring import score_against_noise

from reconbench.image.attacks import ATTACKS, Progress, enforce_size
from reconbench.image.attacks.bias_rec import is_homogeneous, margins, with_modified_relu
from reconbench.image.knowledge import build_knowledge
from reconbench.image.models import build_model
from reconbench.image.models.training import accuracy
from reconbench.core.scenario import Scenario
from reconbench.core.tracks import get_track
from reconbench.image.track_files import load_splits, load_target_model

WHITE_BOX = Scenario.parse("static/white-box/none")


def test_margin_is_y_phi_for_two_logits_and_the_runner_up_gap_for_more():
    two = torch.tensor([[0.5, 2.0], [3.0, -1.0]])
    assert torch.allclose(margins(two, torch.tensor([1, 1])), torch.tensor([1.5, -4.0]))  # y * (z1 - z0), y = +1
    assert torch.allclose(margins(two, torch.tensor([0, 0])), torch.tensor([-1.5, 4.0]))  # y = -1
    many = torch.tensor([[1.0, 4.0, 2.0]])
    assert margins(many, torch.tensor([1])).item() == 2.0 and margins(many, torch.tensor([0])).item() == -3.0


def test_modified_relu_keeps_the_forward_and_smooths_the_derivative():
    model = build_model("homogeneous-mlp", num_classes=2, hidden=16, depth=1)
    smooth = with_modified_relu(model, alpha=10.0)
    x = torch.randn(5, 1, 8, 8, requires_grad=True)
    assert torch.equal(model(x), smooth(x))
    assert not torch.allclose(torch.autograd.grad(model(x).sum(), x)[0], torch.autograd.grad(smooth(x).sum(), x)[0])
    assert is_homogeneous(model) and not is_homogeneous(build_model("small-cnn"))


def test_binary_track_loads_pinned_and_fits_its_20_images():
    track = get_track("digits-binary-mlp")
    splits = load_splits(track)  # checks the target set's sha256 against the registry
    model = load_target_model(track)  # checks the weights' sha256
    assert len(splits.target) == track.train_size == 20 and sorted(set(splits.target.labels.tolist())) == [0, 1]
    assert accuracy(model, splits.target) == 1.0 and accuracy(model, splits.test) > 0.95
    assert splits.update is None and is_homogeneous(model)
    w = model.net[-1].weight
    assert torch.equal(w[0], -w[1])  # z0 = -z1: one homogeneous output Phi = z1 - z0, as in the papers


def test_kkt_premise_holds_on_the_binary_track():
    """The attack's premise, checked with the true training set: the best non-negative
    combination of the 20 margin gradients explains theta up to a relative residual < 0.25
    (measured 0.16), clearly better than 20 other digits of the same classes (0.22) and than
    noise (0.86), which the attack could otherwise settle on."""
    track = get_track("digits-binary-mlp")
    model = load_target_model(track).double()
    params = list(model.parameters())
    theta = torch.cat([p.detach().flatten() for p in params]).numpy()

    def residual(x, y):
        cols = [torch.cat([g.flatten() for g in torch.autograd.grad(margins(model(x[i : i + 1]), y[i : i + 1]).sum(), params)])
                for i in range(len(x))]
        return nnls(torch.stack(cols, 1).numpy(), theta)[1] / np.linalg.norm(theta)

    splits = load_splits(track)
    true = residual(splits.target.as_float().double(), torch.from_numpy(splits.target.labels))
    other = residual(splits.aux_same.as_float().double()[:20], torch.from_numpy(splits.aux_same.labels[:20]))
    noise = residual(torch.rand(20, 1, 8, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64),
                     torch.from_numpy(splits.target.labels))
    assert true < 0.25 and true < other - 0.03 and noise > 0.5


def test_bias_rec_on_the_binary_mlp_beats_noise():
    """1,000 epochs (default 3,000): the 20 reconstructions of the tiny binary MLP's training set
    must beat 20 uniform-noise images with the same labels by the SoK metrics: MSE S-Dis below
    half of noise's (measured ~0.06 vs ~0.25) and SSIM S-Dis above it by 0.3 (~0.75 vs ~0.1)."""
    track = get_track("digits-binary-mlp")
    k = build_knowledge(track, WHITE_BOX)
    attack = ATTACKS["bias-rec"](epochs=1000)
    rec = enforce_size(attack.run(k, seed=0, progress=Progress()), k.target_size, k.input_shape)
    assert attack.config["lr"] == 0.0305 and attack.config["lambda_min"] == 0.447  # Haim et al.'s binary run
    assert sorted(rec.labels.tolist()) == [0] * 10 + [1] * 10
    target = load_splits(track).target
    ours, base = score_against_noise(rec, target)
    assert ours.metrics["mse"].value < 0.5 * base.metrics["mse"].value
    assert ours.metrics["ssim"].value > base.metrics["ssim"].value + 0.3


def test_multiclass_extension_runs_on_the_ten_class_mlp():
    """Buzaglo et al.'s margin and settings on digits-mlp: 2 x 500 candidates, the 500 with the
    largest multipliers kept, 50 per class."""
    k = build_knowledge(get_track("digits-mlp"), WHITE_BOX)
    attack = ATTACKS["bias-rec"](epochs=5)
    rec = attack.run(k, seed=0, progress=Progress())
    assert attack.config["lambda_min"] == 0.203 and attack.config["lr"] == 0.00136
    assert rec.images.shape == (500, 1, 8, 8) and torch.bincount(rec.labels).tolist() == [50] * 10
