"""How different are honest runs of one configuration with different seeds? (issue 23, item 5)

    python benchmarks/bench_seed_distance.py                              # every image attack, quick, seeds 0 1
    python benchmarks/bench_seed_distance.py --attack deepdream --budget default --seed 0 --seed 1 --seed 2

The duplicates check (submissions/checks/duplicates.py) compares a team's entries of one
configuration (track, scenario, attack and version, configuration) with each other: more than
DUPLICATE_SHARE of one seed's reconstructions that are seed copies of another seed's
(submissions/seedcopy.py: a near-identical twin by pixel MSE or by equal bytes) make it a copy, not
an independent run. This script measures, for each attack, the share an HONEST pair of seeds has
(both directions, the larger printed) under that rule, and, for comparison, under the track's public
near-copy thresholds (which honest seeds of some attacks are well within: the reason for the
seed-copy rule). It also prints the seed-copy share of one run against itself with one pixel
changed per image, with three, and with +-3 grey levels of noise (what a forged "new seed" looks
like). An attack that ignores its seed gives byte-identical runs: such a pair is already a
duplicate by hash, and a second seed of it is no independent run.

--runs DIR keeps each run as DIR/<attack>-<budget>-<seed>.npy and reuses it when present.
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import numpy as np
import torch

IMAGE_ATTACKS = ["mi-face", "deepdream", "deepinversion", "deep-leakage", "inv-alignment", "updates-leak",
                 "bias-rec", "revealer", "kedmi", "plg-mi"]


def run(attack: str, budget: str, seed: int, runs: Path | None = None) -> np.ndarray:
    if runs is not None and (runs / f"{attack}-{budget}-{seed}.npy").is_file():
        return np.load(runs / f"{attack}-{budget}-{seed}.npy")
    images = _run(attack, budget, seed)
    if runs is not None:
        runs.mkdir(parents=True, exist_ok=True)
        np.save(runs / f"{attack}-{budget}-{seed}.npy", images)
    return images


def _run(attack: str, budget: str, seed: int) -> np.ndarray:
    from reconbench.image.attacks import Progress
    from reconbench.image.evaluation import attack_run
    from reconbench.core.tracks import get_track

    out = attack_run(get_track("digits"), attack, None, config={}, seed=seed, device=torch.device("cpu"),
                     progress=Progress(), budget=budget)
    return out.reconstruction.to_uint8().numpy()


def flip_pixels(images: np.ndarray, pixels: int = 1, seed: int = 0) -> np.ndarray:
    """`pixels` full-range pixel changes per image (at random places; the same place may come twice)."""
    out = np.ascontiguousarray(images).copy()
    flat = out.reshape(len(out), -1)
    rng = np.random.default_rng(seed)
    rows = np.arange(len(out))
    for _ in range(pixels):
        idx = rng.integers(0, flat.shape[1], len(out))
        flat[rows, idx] = np.where(flat[rows, idx] > 127, 0, 255)
    return out


def noisy(images: np.ndarray, levels: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(images.astype(int) + rng.integers(-levels, levels + 1, images.shape), 0, 255).astype(np.uint8)


def public_share(a: np.ndarray, b: np.ndarray, thresholds) -> float:
    from reconbench.submissions.nearcopy import Space

    return max(Space(a).flag(b, thresholds).share, Space(b).flag(a, thresholds).share)


def copy_share(a: np.ndarray, b: np.ndarray) -> float:
    from reconbench.submissions.seedcopy import seed_copy_share

    return max(seed_copy_share(a, b), seed_copy_share(b, a))


def main() -> None:
    from reconbench.submissions.checks.duplicates import DUPLICATE_SHARE
    from reconbench.submissions.nearcopy import public_thresholds
    from reconbench.core.tracks import get_track

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attack", action="append", help=f"attack name (repeatable; default: {', '.join(IMAGE_ATTACKS)})")
    parser.add_argument("--budget", default="quick")
    parser.add_argument("--seed", action="append", type=int, help="seeds (repeatable; default 0 1)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=Path, help="folder to keep the runs in and reuse them from")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    seeds = args.seed or [0, 1]
    thresholds = public_thresholds(get_track("digits"))
    print(f"digits, budget {args.budget}, seeds {seeds}, {args.threads} thread(s); a run is a duplicate of another "
          f"above {DUPLICATE_SHARE:.0%} flagged. Public near-copy thresholds: pixel MSE <= {thresholds.pixel_mse:.3g}, "
          f"structure <= {thresholds.structure:.3g}")
    print(f"{'attack':<14} {'run s':>6} {'identical':>9} {'honest: seed copies':>20} {'honest: public':>15} "
          f"{'copy 1 px':>10} {'copy 3 px':>10} {'copy +-3':>9}")
    for attack in args.attack or IMAGE_ATTACKS:
        t0 = time.perf_counter()
        runs = {s: run(attack, args.budget, s, args.runs) for s in seeds}
        seconds = (time.perf_counter() - t0) / len(seeds)
        pairs = list(itertools.combinations(seeds, 2))
        identical = sum(np.array_equal(runs[a], runs[b]) for a, b in pairs)
        honest = max(copy_share(runs[a], runs[b]) for a, b in pairs)
        public = max(public_share(runs[a], runs[b], thresholds) for a, b in pairs)
        first = runs[seeds[0]]
        forged = [copy_share(first, flip_pixels(first, 1)), copy_share(first, flip_pixels(first, 3)),
                  copy_share(first, noisy(first, 3))]
        print(f"{attack:<14} {seconds:>6.0f} {identical:>4}/{len(pairs):<4} {honest:>20.1%} {public:>15.1%} "
              + " ".join(f"{v:>9.1%}" for v in forged), flush=True)


if __name__ == "__main__":
    main()
