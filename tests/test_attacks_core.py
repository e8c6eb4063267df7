"""The attack interface, the size rule, and the first two attacks on the embedded track."""

import pytest
import torch

from attack_scoring import score_against_noise

from reconbench.image.attacks import ATTACKS, AttackError, Progress, Reconstruction, enforce_size, load_attack
from reconbench.image.knowledge import build_knowledge
from reconbench.core.scenario import Scenario
from reconbench.core.tracks import get_track
from reconbench.image.track_files import load_splits


def test_size_rule_replicates_fewer_reconstructions():
    rec = Reconstruction(torch.rand(3, 1, 8, 8), torch.tensor([0, 1, 2]))
    out = enforce_size(rec, 7, (1, 8, 8))
    assert out.images.shape == (7, 1, 8, 8)
    assert out.labels.tolist() == [0, 1, 2, 0, 1, 2, 0]
    assert torch.equal(out.images[3], rec.images[0])


def test_size_rule_refuses_more_and_malformed():
    with pytest.raises(AttackError, match="more than"):
        enforce_size(Reconstruction(torch.rand(8, 1, 8, 8), torch.zeros(8, dtype=torch.long)), 7, (1, 8, 8))
    with pytest.raises(AttackError, match=r"\(N, 1, 8, 8\)"):
        enforce_size(Reconstruction(torch.rand(2, 3, 8, 8), torch.zeros(2, dtype=torch.long)), 7, (1, 8, 8))
    with pytest.raises(AttackError, match="NaN"):
        enforce_size(Reconstruction(torch.full((2, 1, 8, 8), float("nan")), torch.zeros(2, dtype=torch.long)), 7, (1, 8, 8))


def test_unknown_attack_options_are_refused():
    with pytest.raises(AttackError, match="no option"):
        ATTACKS["mi-face"](iterashuns=3)


def test_bring_your_own_attack(tmp_path):
    file = tmp_path / "mine.py"
    file.write_text(
        "import torch\n"
        "from reconbench.image.attacks.base import Attack, Reconstruction\n"
        "class Grey(Attack):\n"
        "    name='grey'; paper='none'; family='optimization'; scenarios=('static/white-box/none',)\n"
        "    def run(self, knowledge, *, seed, progress):\n"
        "        return Reconstruction(torch.full((1, *knowledge.input_shape), 0.5), torch.tensor([0]))\n"
    )
    cls = load_attack(f"{file}:Grey")
    assert cls.name == "grey"
    with pytest.raises(AttackError, match="not found"):
        load_attack(f"{tmp_path}/nope.py:Grey")
    with pytest.raises(AttackError, match="not a subclass"):
        load_attack(f"{file}:torch")


def _run(name, **config):
    track = get_track("digits")
    k = build_knowledge(track, Scenario.parse("static/white-box/none"))
    rec = ATTACKS[name](**config).run(k, seed=0, progress=Progress())
    return k, enforce_size(rec, k.target_size, k.input_shape)


def test_mi_face_reaches_high_confidence_for_every_class():
    k, rec = _run("mi-face", iterations=300)
    probs = k.query(rec.images[:10])
    assert (probs.argmax(1) == rec.labels[:10]).all()
    assert probs.gather(1, rec.labels[:10, None]).min() > 0.9


def test_deepinversion_matches_bn_statistics_and_beats_noise():
    """With a short budget DeepInversion must already be classified as intended, and be closer
    to the target set (SSIM S-Dis) than uniform noise with the same labels."""
    k, rec = _run("deepinversion", iterations=150, batch_size=500)
    assert (k.query(rec.images).argmax(1) == rec.labels).float().mean() > 0.9
    target = load_splits(get_track("digits")).target
    ours, base = score_against_noise(rec, target)
    assert ours.metrics["ssim"].value > base.metrics["ssim"].value + 0.05
    assert ours.metrics["mse"].value < base.metrics["mse"].value
