"""DeepDream (Inceptionism, 2015): class-consistent images under DeepInversion's image priors."""

import torch

from attack_scoring import score_against_noise

from reconbench.attacks import ATTACKS, Progress, enforce_size
from reconbench.attacks import deep_inversion
from reconbench.attacks.priors import total_variation
from reconbench.knowledge import build_knowledge
from reconbench.scenario import Scenario
from reconbench.tracks import get_track
from reconbench.track_files import load_splits


def _dream(n=None, **config):
    k = build_knowledge(get_track("digits"), Scenario.parse("static/white-box/none"))
    k.target_size = n or k.target_size
    attack = ATTACKS["deepdream"](**config)
    return k, attack, enforce_size(attack.run(k, seed=0, progress=Progress()), k.target_size, k.input_shape)


def test_deepdream_is_deepinversion_without_the_batchnorm_term():
    """Same priors, loop and seed: DeepInversion with bn_weight = 0 must give DeepDream's images
    bit for bit, and with its BatchNorm term on it must not."""
    config = {"iterations": 10, "lr": 0.05, "tv_weight": 1e-4, "l2_weight": 1e-5, "jitter": 1, "batch_size": 64}
    k, _, dreamt = _dream(n=40, **config)
    inverted = deep_inversion.DeepInversion(bn_weight=0.0, **config).run(k, seed=0, progress=Progress())
    assert torch.equal(dreamt.images, inverted.images) and torch.equal(dreamt.labels, inverted.labels)
    with_bn = deep_inversion.DeepInversion(bn_weight=10.0, **config).run(k, seed=0, progress=Progress())
    assert (with_bn.images - dreamt.images).abs().max() > 1e-3


def test_deepdream_images_are_classified_as_intended_and_beat_noise():
    """200 images, 120 iterations (the default on digits: 500 images, 500 iterations): >= 90%
    must already be classified as their intended class by the target (the class loss is what
    DeepDream optimises), and their SSIM S-Dis to the target set must beat uniform noise with the
    same labels by 0.05 (noise: ~0.15)."""
    k, attack, rec = _dream(n=200, iterations=120)
    assert attack.config["iterations"] == 120
    assert (k.query(rec.images).argmax(1) == rec.labels).float().mean() >= 0.9
    assert torch.bincount(rec.labels, minlength=10).tolist() == [20] * 10
    target = load_splits(get_track("digits")).target
    ours, base = score_against_noise(rec, target)
    assert ours.metrics["ssim"].value > base.metrics["ssim"].value + 0.05
    assert ours.metrics["mse"].value < base.metrics["mse"].value


def test_total_variation_weight_smooths_the_dreams():
    """The prior is wired in: a heavy TV weight must give visibly smoother images than none."""
    _, _, rough = _dream(n=100, iterations=60, tv_weight=0.0, l2_weight=0.0)
    _, _, smooth = _dream(n=100, iterations=60, tv_weight=0.05, l2_weight=0.0)
    assert total_variation(smooth.images) < 0.8 * total_variation(rough.images)
