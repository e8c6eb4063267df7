"""Back-of-envelope GPU time of a grid's attack jobs: `python -m reconbench.sweep.estimate GRID.toml`.

Same model as the zoo's estimate (zoo/estimate.py, docs/zoo.md): the FLOPs of one forward +
backward pass of the track's real architecture per image, at SUSTAINED_TFLOPS, never less than
STEP_FLOOR_S per optimisation step. What differs per attack is how many image passes a job makes,
from its options at the grid's budget (IMAGE_PASSES below: (steps, images per step)). An attack
without a formula here (e.g. a user's own) is listed as not estimated, never guessed.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

from reconbench.zoo.estimate import BATCH, STEP_FLOOR_S, SUSTAINED_TFLOPS, step_flops
from reconbench.zoo.grid import TrackSpec


def _aux(track) -> int:
    from reconbench.zoo.datasets import get_dataset

    return get_dataset(track.dataset).aux_max


# attack -> (config, track, |D_tar|) -> (optimisation steps, images per step)
IMAGE_PASSES = {
    "mi-face": lambda c, t, n: (c["iterations"], t.num_classes),  # one image per class (Fredrikson Alg. 1)
    "deepinversion": lambda c, t, n: (c["iterations"] * -(-n // c["batch_size"]), min(n, c["batch_size"])),
    "deepdream": lambda c, t, n: (c["iterations"] * -(-n // c["batch_size"]), min(n, c["batch_size"])),
    # L-BFGS on each observed gradient (4 images), max_iter closures per step, double backward (x2)
    "deep-leakage": lambda c, t, n: (c["iterations"] * c["max_iter"] * -(-n // 4), 4 * 2),
    # a decoder trained on the aux set's posteriors; counted as passes of the target's size (an upper bound)
    "inv-alignment": lambda c, t, n: (c["epochs"] * -(-_aux(t) // c["batch_size"]), c["batch_size"]),
    "updates-leak": lambda c, t, n: (c["epochs"] * -(-_aux(t) // BATCH), BATCH),
}


def job_hours(job, flops_cache: dict) -> float | None:
    from reconbench.attacks import ATTACKS
    from reconbench.scenario import Scenario
    from reconbench.tracks import get_track

    cls = ATTACKS.get(job.attack)  # a user's file.py:Class is never imported here: not estimated
    if cls is None or cls.name not in IMAGE_PASSES:
        return None
    track = get_track(job.track)
    config = cls(budget=job.budget or "default", **job.options).config
    steps, images = IMAGE_PASSES[cls.name](config, track, track.target_size(Scenario.parse(job.scenario)))
    spec = TrackSpec(track.dataset, track.architecture, track.train_size, track.variant)
    key = (track.dataset, track.architecture, track.variant)
    if key not in flops_cache:
        flops_cache[key] = step_flops(spec) / BATCH  # per image
    per_step = max(flops_cache[key] * images / (SUSTAINED_TFLOPS * 1e12), STEP_FLOOR_S)
    return steps * per_step / 3600


def main(argv: list[str]) -> int:
    from reconbench.sweep import load_grid

    grid = load_grid(Path(argv[0]))
    cache: dict = {}
    hours: dict[str, float] = defaultdict(float)
    jobs: dict[str, int] = defaultdict(int)
    unknown: dict[str, int] = defaultdict(int)
    for job in grid.jobs:
        h = job_hours(job, cache)
        if h is None:
            unknown[job.attack] += 1
        else:
            hours[job.attack] += h
            jobs[job.attack] += 1
    print(f"grid {grid.name}: {len(grid.jobs)} jobs\n\n| attack | jobs | GPU-hours |\n|---|---|---|")
    for attack in sorted(jobs):
        print(f"| {attack} | {jobs[attack]} | {hours[attack]:.1f} |")
    for attack in sorted(unknown):
        print(f"| {attack} | {unknown[attack]} | not estimated |")
    print(f"| **all** | **{sum(jobs.values()) + sum(unknown.values())}** | **{sum(hours.values()):.0f}** |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
