"""Back-of-envelope GPU time of a grid's attack jobs: `python -m reconbench.sweep.estimate GRID.toml`.

Same model as the zoo's estimate (zoo/estimate.py, docs/zoo.md): FLOPs of the real networks at
SUSTAINED_TFLOPS, never less than STEP_FLOOR_S per optimisation step. A job is a list of phases
(optimisation steps, FLOPs per step), from its options at the grid's budget (PHASES below). Per
image, a forward + backward pass of each network is counted by torch's FLOP counter on the real
module: the track's architecture (target, and a surrogate of the same architecture), and for the
GAN attacks their own generator/discriminator at the track's image size (a forward alone: 1/3).
An attack without a formula here (e.g. a user's own), or one whose networks do not exist at the
track's image size, is listed as not estimated, never guessed.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

from reconbench.zoo.estimate import BATCH, CELEBA_AUX_IMAGES, STEP_FLOOR_S, SUSTAINED_TFLOPS, step_flops
from reconbench.zoo.grid import TrackSpec

FWD = 1 / 3  # a forward pass is about a third of forward + backward


def _aux(track) -> int:
    """Images of the attacker's aux split: CelebA's is what is left of 1,000 identities (zoo/estimate.py)."""
    from reconbench.zoo.datasets import get_dataset

    return CELEBA_AUX_IMAGES if track.dataset == "celeba" else get_dataset(track.dataset).aux_max


def _counted(net: torch.nn.Module, *inputs) -> float:
    """FLOPs of one forward + backward pass per image (batch 2: BatchNorm in train mode needs two)."""
    net.train()
    with FlopCounterMode(display=False) as counter:
        out = net(*inputs)
        sum(o.float().sum() for o in (out if isinstance(out, tuple) else (out,))).backward()
    return float(counter.get_total_flops()) / 2


class NetFlops:
    """Per-image forward + backward FLOPs of the networks of one track's jobs, counted once."""

    def __init__(self, track, cache: dict):
        self.track, self.cache = track, cache

    def _get(self, role: str, build) -> float:
        key = (self.track.dataset, self.track.architecture, self.track.variant, tuple(self.track.input_shape), role)
        if key not in self.cache:
            self.cache[key] = build()
        return self.cache[key]

    @property
    def target(self) -> float:
        t = self.track
        spec = TrackSpec(t.dataset, t.architecture, t.train_size, t.variant)
        return self._get("target", lambda: step_flops(spec) / BATCH)

    def gan(self, role: str) -> float:
        """GMI/KEDMI generator G, GMI critic D, KEDMI K+1 discriminator KD, PLG-MI generator CG and
        projection discriminator PD (attacks/gan/architectures.py); AttackError off 64x64/32x32/8x8."""
        from reconbench.image.attacks.gan.architectures import architecture_for

        def build() -> float:
            arch, k = architecture_for(tuple(self.track.input_shape)), self.track.num_classes
            x, y = torch.rand(2, *self.track.input_shape), torch.zeros(2, dtype=torch.long)
            return {"G": lambda: _counted(arch.generator(), torch.randn(2, arch.z_dim)),
                    "D": lambda: _counted(arch.critic(), x),
                    "KD": lambda: _counted(arch.kplus1(k), x),
                    "CG": lambda: _counted(arch.cond_generator(k), torch.randn(2, arch.z_dim_cond), y),
                    "PD": lambda: _counted(arch.projection_discriminator(k), x, y)}[role]()

        return self._get(role, build)

    @property
    def dfme_generator(self) -> float:
        from reconbench.image.surrogate.dfme import Generator

        c, h, _ = self.track.input_shape
        ngf = 16 if h * h <= 64 else 64  # dfme.py: "auto" width
        return self._get("dfme-G", lambda: _counted(Generator(256, ngf, c, h), torch.randn(2, 256)))


def _batches(n: int, batch: int) -> int:
    return -(-n // batch)


def _revealer(c, t, n, f):
    """GMI: WGAN-GP (per batch a critic step on real + fake + gradient penalty, a G step every
    n_critic), then restarts x iterations latent steps through G, D and the target."""
    b, G, D = c["gan_batch_size"], f.gan("G"), f.gan("D")
    prior = (c["gan_epochs"] * _batches(_aux(t), b), b * (FWD * G + 3 * D) + b / c["n_critic"] * (G + D))
    bs = min(n, c["batch_size"])
    return [prior, (c["restarts"] * c["iterations"] * _batches(n, c["batch_size"]), bs * (G + D + f.target))]


def _kedmi(c, t, n, f):
    """KEDMI: target soft labels on aux, K+1 GAN (D on labelled, unlabelled and fake images; G by
    feature matching every n_critic), then per class one latent sample per step through G, D, target."""
    b, G, D, k = c["gan_batch_size"], f.gan("G"), f.gan("KD"), t.num_classes
    labels = (_batches(_aux(t), 256), 256 * FWD * f.target)
    prior = (c["gan_epochs"] * (_aux(t) // b), b * (FWD * G + 3 * D) + b / c["n_critic"] * (G + 2 * D))
    return [labels, prior, (c["iterations"] * _batches(k, c["batch_size"]), min(k, c["batch_size"]) * (G + D + f.target))]


def _plg_mi(c, t, n, f):
    """PLG-MI: top-n selection (target forward on aux), cGAN (per iteration a G step with the
    target's max-margin term and n_dis D steps), then latent steps with two augmented target passes."""
    b, G, D = c["gan_batch_size"], f.gan("CG"), f.gan("PD")
    select = (_batches(_aux(t), 256), 256 * FWD * f.target)
    per_iteration = b * (G + D + f.target) + c["n_dis"] * b * (FWD * G + 2 * D)
    prior = (c["gan_iterations"] * (1 + c["n_dis"]), per_iteration / (1 + c["n_dis"]))
    bs = min(n, c["batch_size"])
    return [select, prior, (c["iterations"] * _batches(n, c["batch_size"]), bs * (G + 2 * f.target))]


# attack -> (config, track, |D_tar|, NetFlops) -> [(optimisation steps, FLOPs per step), ...]
PHASES = {
    "mi-face": lambda c, t, n, f: [(c["iterations"], t.num_classes * f.target)],  # one image per class (Fredrikson Alg. 1)
    "deepinversion": lambda c, t, n, f: [(c["iterations"] * _batches(n, c["batch_size"]), min(n, c["batch_size"]) * f.target)],
    "deepdream": lambda c, t, n, f: [(c["iterations"] * _batches(n, c["batch_size"]), min(n, c["batch_size"]) * f.target)],
    # L-BFGS on each observed gradient (4 images), max_iter closures per step, double backward (x2)
    "deep-leakage": lambda c, t, n, f: [(c["iterations"] * c["max_iter"] * _batches(n, 4), 4 * 2 * f.target)],
    # a decoder trained on the aux set's posteriors; counted as passes of the target's size (an upper bound)
    "inv-alignment": lambda c, t, n, f: [(c["epochs"] * _batches(_aux(t), c["batch_size"]), c["batch_size"] * f.target)],
    "updates-leak": lambda c, t, n, f: [(c["epochs"] * _batches(_aux(t), BATCH), BATCH * f.target)],
    "revealer": _revealer,
    "kedmi": _kedmi,
    "plg-mi": _plg_mi,
}


def dfme_phases(c, f: NetFlops) -> list[tuple[float, float]]:
    """DFME (surrogate/dfme.py): per iteration g_iter generator steps, each querying B (m + 1)
    points (victim and student forward) and back-propagating the estimate through G, and d_iter
    student steps on B new points (G and victim forward, student forward + backward). The student
    has the track's architecture, so its FLOPs are the target's."""
    B, m, g, d, T, G = c["batch_size"], c["grad_m"], c["g_iter"], c["d_iter"], f.target, f.dfme_generator
    iterations = c["query_budget"] // (B * (g * (m + 1) + d))
    per_iteration = g * (B * G + B * (m + 1) * 2 * FWD * T) + d * B * (FWD * G + FWD * T + T)
    return [(iterations * (g + d), per_iteration / (g + d))]


def job_hours(job, flops_cache: dict) -> float | None:
    from reconbench.image.attacks import ATTACKS, AttackError
    from reconbench.core.scenario import Scenario
    from reconbench.core.tracks import get_track
    from reconbench.zoo import ZooError

    cls = ATTACKS.get(job.attack)  # a user's file.py:Class is never imported here: not estimated
    if cls is None or cls.name not in PHASES:
        return None
    track = get_track(job.track)
    config = cls(budget=job.budget or "default", **job.options).config
    flops = NetFlops(track, flops_cache)
    n = track.target_size(Scenario.parse(job.scenario))
    try:
        phases = list(PHASES[cls.name](config, track, n, flops))
        surrogate = getattr(job, "surrogate", None)
        if surrogate == "dfme":
            from reconbench.core.attack_options import resolve_options
            from reconbench.image.surrogate.dfme import DFME

            phases += dfme_phases(resolve_options(DFME, job.budget or "default"), flops)
        elif surrogate is not None:
            return None
    except AttackError:  # no network of this attack at the track's image size
        return None
    except ZooError:  # a track outside the zoo's grid (digits, Fashion-MNIST): no recipe to count, not guessed
        return None
    seconds = sum(steps * max(per_step / (SUSTAINED_TFLOPS * 1e12), STEP_FLOOR_S) for steps, per_step in phases)
    return seconds / 3600


def main(argv: list[str]) -> int:
    from reconbench.sweep import load_grid

    grid = load_grid(Path(argv[0]))
    cache: dict = {}
    hours: dict[str, float] = defaultdict(float)
    jobs: dict[str, int] = defaultdict(int)
    unknown: dict[str, int] = defaultdict(int)
    for job in grid.jobs:
        label = job.attack + (f" via {job.surrogate}" if getattr(job, "surrogate", None) else "")
        h = job_hours(job, cache)
        if h is None:
            unknown[label] += 1
        else:
            hours[label] += h
            jobs[label] += 1
    print(f"grid {grid.name}: {len(grid.jobs)} jobs\n\n| attack | jobs | GPU-hours |\n|---|---|---|")
    for attack in sorted(jobs):
        print(f"| {attack} | {jobs[attack]} | {hours[attack]:.1f} |")
    for attack in sorted(unknown):
        print(f"| {attack} | {unknown[attack]} | not estimated |")
    print(f"| **all** | **{sum(jobs.values()) + sum(unknown.values()):,}** | **{sum(hours.values()):.0f}** |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
