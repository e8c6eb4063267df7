"""DeepDream (Inceptionism, 2015): class-consistent images under NVlabs' DeepInversion image priors."""

import torch

from attack_scoring import score_against_noise

from reconbench.image.attacks import ATTACKS, Progress, enforce_size
from reconbench.image.attacks import deep_inversion
from reconbench.image.attacks.priors import l2_prior, nvlabs_l2, nvlabs_tv_l2, total_variation
from reconbench.image.knowledge import build_knowledge
from reconbench.core.scenario import Scenario
from reconbench.core.tracks import get_track
from reconbench.image.track_files import load_splits


def _dream(n=None, **config):
    k = build_knowledge(get_track("digits"), Scenario.parse("static/white-box/none"))
    k.target_size = n or k.target_size
    attack = ATTACKS["deepdream"](**config)
    return k, attack, enforce_size(attack.run(k, seed=0, progress=Progress()), k.target_size, k.input_shape)


def test_deepdream_shares_deepinversions_loop_but_uses_nvlabs_priors():
    """Same loop and seed: with the priors off, DeepInversion with bn_weight = 0 gives DeepDream's
    images bit for bit; with the priors on they differ (DeepDream: NVlabs' prior functions,
    DeepInversion: the toolkit's squared forms), and DeepInversion's BatchNorm term changes them."""
    config = {"iterations": 10, "lr": 0.05, "tv_weight": 0.0, "l2_weight": 0.0, "jitter": 1, "batch_size": 64}
    k, _, dreamt = _dream(n=40, **config)
    inverted = deep_inversion.DeepInversion(bn_weight=0.0, **config).run(k, seed=0, progress=Progress())
    assert torch.equal(dreamt.images, inverted.images) and torch.equal(dreamt.labels, inverted.labels)
    with_bn = deep_inversion.DeepInversion(bn_weight=10.0, **config).run(k, seed=0, progress=Progress())
    assert (with_bn.images - dreamt.images).abs().max() > 1e-3
    priors = {**config, "tv_weight": 1e-2, "l2_weight": 1e-2}
    _, _, nv = _dream(n=40, **priors)
    toolkit = deep_inversion.DeepInversion(bn_weight=0.0, **priors).run(k, seed=0, progress=Progress())
    assert (nv.images - toolkit.images).abs().max() > 1e-3


def test_nvlabs_prior_functions_on_hand_computed_images():
    """deepinversion.py's loss_var_l2: ||d||_2 over the batch for the 4 neighbour differences,
    summed; loss_l2: per-image l2 norm averaged over the batch."""
    dot = torch.zeros(1, 1, 3, 3)
    dot[0, 0, 1, 1] = 1.0  # each of the four difference maps holds +1 and -1 once: 4 * sqrt(2)
    assert torch.isclose(nvlabs_tv_l2(dot), torch.tensor(4 * 2 ** 0.5))
    two = torch.stack([torch.full((1, 3, 3), 1.0), torch.full((1, 3, 3), 5.0 / 3)])  # norms 3 and 5
    assert torch.isclose(nvlabs_l2(two), torch.tensor(4.0)) and nvlabs_tv_l2(two) == 0
    # the toolkit's squared l2 on the same batch is 9 + 25 = 34 (what DeepDream version 1 used)
    assert torch.isclose(l2_prior(two), torch.tensor(34.0))


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
