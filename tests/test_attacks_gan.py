"""The GAN-prior attacks (Revealer/GMI, KEDMI, PLG-MI): end to end on digits against uninformed
and aux-data baselines, their prior cache, and the papers' 64x64 networks on a CelebA-shaped input.

Metrics. The paper metric compared with the per-class aux mean is FID, the SoK's dataset-level
D-Dis (its Table 2 reports it for all three attacks; KEDMI's and PLG-MI's papers report it too).
The SoK computes it on pytorch-fid's Inception, whose weights cannot be downloaded here, so the
test takes the same Frechet distance (metrics.classifier.eval_feature_fid, checked against
pytorch-fid's formula in test_metrics_classifier.py) on the penultimate features of the digits
track's evaluation CNN (the features of the papers' KNN distance): "fd_eval" below, lower is
better. Acc@1 cannot separate them: the class mean already scores 1.000. Also reported: Acc@1 and
KNN distance (the three papers), SSIM S-Dis with its coverage alpha (SoK Def. 4.2) and coverage in
the eval CNN's feature space (the share of targets that are some reconstruction's nearest
same-class target). Baselines: seeded uniform noise, the per-class mean of the attacker's aux
images (10 distinct images), and one random aux image per slot (the attacker's data copied).
Measured with seed 0, one thread, on an idle 2-core VM (wall s = attack incl. prior training):

                                       fd_eval  acc@1   knn   SSIM   wall s
    noise                               114.75  0.104  129.2  0.249
    per-class aux mean                   19.35  1.000   12.9  0.894
    random aux image per slot             2.15  0.994   13.4  0.895
    Revealer, test budget below           8.04  0.998   18.3  0.860    ~40
    Revealer, default                    10.32  0.998   17.7  0.887    ~100
    KEDMI, test budget below             84.04  0.614   63.7  0.614    ~10
    KEDMI, default (120 GAN epochs)      45.71  0.898   40.7  0.726
    KEDMI, 600 / 1,500 GAN epochs        26.95 / 24.88 (acc@1 0.986 / 0.994)   310 / 660
    PLG-MI, test budget below            77.32  0.900   62.2  0.736    ~15
    PLG-MI, default (600 cGAN steps)     80.01  1.000   50.7  0.842    ~200
    PLG-MI, 2,000 cGAN steps, z steps 1 / 30 / 100 / 300:  12.0 / 23.8 / 34.1 / 41.8 (acc@1 1.000)

So Revealer beats the class mean on FID in the eval CNN's features (asserted below, at a budget
of 150 GAN epochs, 100 latent steps, 1 restart). KEDMI and PLG-MI do not, at any budget measured
here: KEDMI's feature-matching GAN improves slowly on 500 aux images (the official 120 epochs are
~840 steps here, against ~56,000 on CelebA's public split); PLG-MI's conditional GAN alone beats
the mean (12.0 unoptimised), but its max-margin latent search, run as the official code runs it
(Adam lr 0.1 on unconstrained z), moves the images away from the target distribution step by
step while Acc@1 stays 1.000, so the attack ends worse than its own prior on this metric. Both
still beat noise on every measure and the mean on diversity (SSIM coverage, feature coverage),
which is asserted; that they stay behind the mean on fd_eval is asserted too, as measured, so that
a change that helps them updates this table. Whether they beat the mean on the Inception FID the
papers use is open until those weights can be fetched (`recon-submit weights fetch`; then
benchmarks/bench_gan_vs_class_mean.py prints both distances).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from reconbench.image.attacks import ATTACKS, Progress, enforce_size
from reconbench.image.attacks.base import class_balanced_labels
from reconbench.image.attacks.gan.augment import color_jitter, geometric
from reconbench.image.attacks.gan.cache import cache_dir
from reconbench.image.attacks.gan.training import max_margin
from reconbench.image.attacks.plg_mi import top_n_selection
from reconbench.image.data.arrays import ArraySet
from reconbench.image.knowledge import Knowledge, PublicFacts, QueryFunction, build_knowledge
from reconbench.image.metrics import score
from reconbench.image.metrics.classifier import eval_feature_fid, logits_and_features, track_evaluator
from reconbench.core.scenario import Scenario
from reconbench.core.tracks import get_track
from reconbench.image.track_files import load_splits

SCENARIO = Scenario.parse("static/white-box/same")
GAN_ATTACKS = ("revealer", "kedmi", "plg-mi")
# Test budgets, below the "quick" presets: CPU time matters on a shared runner.
BUDGETS = {
    "revealer": {"gan_epochs": 150, "iterations": 100, "restarts": 1},  # the quick preset
    "kedmi": {"gan_epochs": 10, "iterations": 300},
    "plg-mi": {"gan_iterations": 40, "iterations": 40},
}
pytestmark = [pytest.mark.usefixtures("single_torch_thread"),  # small tensors: threads cost more than they gain
              pytest.mark.slow]  # a minute or more of CPU: the slow set (make test-slow; benchmarks/bench_test_split.py)


def _digits(name: str, seed: int = 0, **config):
    k = build_knowledge(get_track("digits"), SCENARIO)
    rec = ATTACKS[name](**config).run(k, seed=seed, progress=Progress())
    return k, rec


@pytest.fixture(scope="module")
def digits_target():
    return load_splits(get_track("digits")).target


def _report(images: np.ndarray, labels: np.ndarray, target) -> dict[str, float]:
    """fd_eval, acc_top1, knn_dist, ssim and its coverage, and coverage in the eval CNN's feature space."""
    track = get_track("digits")
    r = score(images, labels, target.images, target.labels, lpips=False, fid=False, track=track)
    evaluator, why = track_evaluator(track)
    assert evaluator is not None, why
    _, rec_f = logits_and_features(evaluator, images, "cpu")
    _, tar_f = logits_and_features(evaluator, target.images, "cpu")
    same = torch.from_numpy(labels)[:, None] == torch.from_numpy(target.labels)[None, :]
    nearest = torch.where(same, torch.cdist(rec_f, tar_f), torch.inf).argmin(1)
    return {"fd_eval": eval_feature_fid(evaluator, images, target.images), "acc_top1": r.metrics["acc_top1"].value, "knn_dist": r.metrics["knn_dist"].value,
            "ssim": r.metrics["ssim"].value, "ssim_cov": r.metrics["ssim"].coverage,
            "feature_cov": len(set(nearest.tolist())) / len(target.labels)}


@pytest.fixture(scope="module")
def baselines(digits_target):
    """The uniform-noise and per-class aux-mean baselines, scored like the attacks (see the top)."""
    k = build_knowledge(get_track("digits"), SCENARIO)
    labels = class_balanced_labels(k.target_size, k.num_classes).numpy()
    noise = (torch.rand((k.target_size, *k.input_shape), generator=torch.Generator().manual_seed(0)) * 255)
    aux = k.aux_data
    means = np.stack([np.rint(aux.images[aux.labels == c].astype(float).mean(0)) for c in range(10)]).astype(np.uint8)
    return {"noise": _report(noise.to(torch.uint8).numpy(), labels, digits_target),
            "mean": _report(means[labels], labels, digits_target)}


@pytest.mark.parametrize("name", GAN_ATTACKS)
def test_gan_attack_on_digits_against_noise_and_the_class_mean(name, baselines, digits_target):
    k, rec = _digits(name, **BUDGETS[name])
    assert rec.images.shape == (k.target_size, *k.input_shape)  # exactly |D_tar|, no replication
    assert torch.equal(rec.labels, class_balanced_labels(k.target_size, k.num_classes))
    assert rec.provenance["prior_trained_in_this_run"] in (True, False)
    ours = _report(rec.to_uint8().numpy(), rec.labels.numpy(), digits_target)
    noise, mean = baselines["noise"], baselines["mean"]
    # the baselines of the table, in the features of the evaluation CNN retrained without the holdout
    # (issue 21; with the earlier one they were 19.35 and ~115): 22.13 and 152.77
    assert 21 < mean["fd_eval"] < 23 and 145 < noise["fd_eval"] < 160, (mean, noise)
    # every attack against noise, on the papers' metrics (measured: fd_eval <= 0.74x, acc +0.51..+0.89;
    # the thresholds leave room for another CPU's float order in KEDMI's short GAN training)
    assert ours["fd_eval"] < 0.85 * noise["fd_eval"], ours
    assert ours["acc_top1"] > noise["acc_top1"] + 0.3, ours
    assert ours["knn_dist"] < 0.7 * noise["knn_dist"], ours
    assert ours["ssim"] > noise["ssim"] + 0.25, ours  # measured +0.37..+0.61
    if name == "revealer":  # against the class mean on FID in the eval CNN's features: 8.04 vs 19.35
        assert ours["fd_eval"] < 0.6 * mean["fd_eval"], ours
        assert ours["acc_top1"] > 0.95, ours
    else:  # as measured (see the top): behind the mean on fd_eval, ahead of it on diversity
        assert ours["fd_eval"] > 2 * mean["fd_eval"], ours
        assert ours["ssim_cov"] >= 5 * mean["ssim_cov"], ours  # measured 7.9x..12.7x
        assert ours["feature_cov"] >= 4 * mean["feature_cov"], ours  # measured 6.3x..8.5x
    with torch.no_grad():  # the identity loss did its job: the target sees the intended classes
        assert (k.model(rec.images).argmax(1) == rec.labels).float().mean() > 0.9


def test_prior_is_cached_keyed_by_seed_and_a_bad_cache_file_is_retrained():
    tiny = {"gan_epochs": 1, "iterations": 2, "restarts": 1}
    _, first = _digits("revealer", seed=7, **tiny)
    key = first.provenance["prior_cache_key"]
    path = cache_dir() / f"{key}.safetensors"
    assert first.provenance["prior_trained_in_this_run"] is True and path.is_file()
    _, again = _digits("revealer", seed=7, **tiny)
    assert again.provenance == {"prior_cache_key": key, "prior_trained_in_this_run": False, "prior_cache": "loaded from cache"}
    assert torch.equal(first.images, again.images)  # the same prior and the same seeded latents
    _, other = _digits("revealer", seed=8, **tiny)
    assert other.provenance["prior_cache_key"] != key
    _, longer = _digits("revealer", seed=7, **{**tiny, "gan_epochs": 2})
    assert longer.provenance["prior_cache_key"] != key
    path.write_bytes(path.read_bytes()[:100])  # truncated: retrained and rewritten, no crash
    _, fixed = _digits("revealer", seed=7, **tiny)
    assert fixed.provenance["prior_trained_in_this_run"] is True
    assert fixed.provenance["prior_cache"].startswith("trained again: cached file unreadable")
    from safetensors.torch import save_file

    save_file({"generator.x": torch.zeros(1)}, str(path), metadata={"key": key})  # right key, wrong tensors
    _, refit = _digits("revealer", seed=7, **tiny)
    assert "does not fit the generator" in refit.provenance["prior_cache"]
    save_file({"generator.x": torch.zeros(1)}, str(path), metadata={"key": "0" * 64})
    _, rekeyed = _digits("revealer", seed=7, **tiny)
    assert "another key" in rekeyed.provenance["prior_cache"]
    _, reused = _digits("revealer", seed=7, **tiny)
    assert reused.provenance["prior_trained_in_this_run"] is False


def test_evaluate_records_the_prior_in_the_signed_provenance(tmp_path, signing_key):
    from reconbench.image.evaluation import evaluate
    from reconbench.image.results import verify_result_dir

    out = evaluate(track_id="digits", attack_spec="kedmi", seed=3, out=tmp_path / "r", key_path=signing_key,
                   config={"gan_epochs": 1, "iterations": 2}, command="test")
    facts = verify_result_dir(out.folder).payload.provenance.attack_facts
    assert facts["prior_trained_in_this_run"] is True and len(facts["prior_cache_key"]) == 64
    assert out.result.payload.reconstructions.count == 500


def test_top_n_selection_picks_the_n_most_confident_images_per_class():
    probs = torch.tensor([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.45, 0.55]])
    index, labels = top_n_selection(probs, 2)
    chosen = {(int(i), int(c)) for i, c in zip(index, labels)}
    assert chosen == {(0, 0), (1, 0), (2, 1), (3, 1)}


def test_max_margin_is_the_margin_to_the_best_other_class():
    logits = torch.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 1.0]])
    assert torch.isclose(max_margin(logits, torch.tensor([0, 2])), torch.tensor(((-3 + 2) + (-1 + 5)) / 2))


def test_augmentations_keep_shape_and_stay_identity_at_zero_strength():
    x = torch.rand(6, 1, 8, 8)
    g = torch.Generator().manual_seed(0)
    assert torch.equal(color_jitter(x, 0.0, g), x)
    assert torch.allclose(geometric(x, g, flip=False, max_degrees=0.0, scale=(1.0, 1.0)), x, atol=1e-5)
    moved = geometric(x, g, flip=True)
    assert moved.shape == x.shape and not torch.allclose(moved, x)


class _FaceTarget(nn.Module):
    """A tiny classifier of 3x64x64 images with BatchNorm (eval mode), a stand-in for the papers'
    VGG16/IR152 (1,000 identities would be too big for a CPU test)."""

    def __init__(self, classes: int):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 8, 5, 4, 2), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 16 * 16, classes))

    def forward(self, x):
        return self.net(x)


def _face_knowledge(device: str, classes: int = 4, target_size: int = 8) -> Knowledge:
    torch.manual_seed(0)
    model = _FaceTarget(classes).to(device).eval().requires_grad_(False)
    rng = np.random.default_rng(0)
    aux = ArraySet(rng.integers(0, 256, (16, 3, 64, 64), dtype=np.uint8), rng.integers(0, classes, 16).astype(np.int64))
    return Knowledge(track_id="celeba-shaped", scenario=SCENARIO, num_classes=classes, input_shape=(3, 64, 64),
                     target_size=target_size, device=torch.device(device),
                     query=QueryFunction(model, (3, 64, 64), 10_000, torch.device(device)), _model=model, _aux=aux,
                     public=PublicFacts(architecture="test-face-cnn", arch_kwargs={}, input_shape=(3, 64, 64),
                                        num_classes=classes))


FACE_BUDGETS = {
    "revealer": {"gan_epochs": 1, "gan_batch_size": 8, "n_critic": 1, "iterations": 1, "restarts": 1},
    "kedmi": {"gan_epochs": 1, "gan_batch_size": 8, "n_critic": 1, "iterations": 1},
    "plg-mi": {"top_n": 2, "gan_iterations": 1, "gan_batch_size": 4, "n_dis": 1, "iterations": 1},
}


def _run_faces(name: str, device: str):
    k = _face_knowledge(device)
    rec = ATTACKS[name](**FACE_BUDGETS[name]).run(k, seed=0, progress=Progress())
    rec = enforce_size(rec, k.target_size, k.input_shape)
    assert rec.images.shape == (8, 3, 64, 64) and torch.isfinite(rec.images).all()
    assert rec.provenance["prior_trained_in_this_run"] is True
    return rec


@pytest.mark.parametrize("name", GAN_ATTACKS)
def test_paper_64x64_networks_train_and_invert_one_step(name):
    """The official 64x64 architectures (GMI/KEDMI G 512x4x4 -> 3x64x64, GMI critic, KEDMI D with
    4,096 features + MBD, PLG-MI ResNet G 1024 -> 64 channels and SN projection D) on a CelebA-shaped
    synthetic input: one GAN step and one latent step, end to end through the attack."""
    from reconbench.image.attacks.gan.architectures import paper_64

    arch = paper_64()
    assert arch.generator()(torch.zeros(2, 100)).shape == (2, 3, 64, 64)
    assert arch.kplus1(4)(torch.zeros(2, 3, 64, 64))[0].shape == (2, 4096)
    _run_faces(name, "cpu")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("name", GAN_ATTACKS)
def test_paper_64x64_networks_on_cuda(name):
    _run_faces(name, "cuda")


def test_attack_facts_are_bounded_and_absent_facts_stay_out_of_the_signed_form():
    from pydantic import ValidationError

    from reconbench.core.envelope import Provenance

    base = dict(toolkit_version="x", python="3", torch="2", device="cpu", hardware="h", seed=0, command="c",
                started="2026-01-01T00:00:00Z", finished="2026-01-01T00:00:01Z", wall_seconds=1.0)
    assert "attack_facts" not in Provenance(**base).model_dump(mode="json")  # old results verify unchanged
    assert Provenance(**base, attack_facts={"prior_trained_in_this_run": True}).model_dump()["attack_facts"]
    for bad in ({f"k{i}": 1 for i in range(33)}, {"k": "x" * 2001}, {"k" * 81: 1}, {"k": [1]}):
        with pytest.raises(ValidationError):
            Provenance(**base, attack_facts=bad)


def test_the_prior_key_depends_on_the_cpu_thread_count():
    """A prior trained with another thread count is another prior: it is never reused as this one."""
    from reconbench.image.attacks.gan.cache import prior_key

    spec = {"aux": "abc", "arch": "digits-8", "seed": 0}
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = prior_key(spec)
        torch.set_num_threads(2)
        two = prior_key(spec)
    finally:
        torch.set_num_threads(before)
    assert one != two and prior_key(spec) == prior_key(dict(spec))
