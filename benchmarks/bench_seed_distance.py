"""How different are honest runs of one configuration with different seeds? (issue 23, item 5)

    python benchmarks/bench_seed_distance.py                              # every image attack, quick, seeds 0 1
    python benchmarks/bench_seed_distance.py --attack deepdream --budget default --seed 0 --seed 1 --seed 2

The duplicates check (submissions/checks/duplicates.py) compares a team's entries of one
configuration (track, scenario, attack and version, configuration) with each other: more than
DUPLICATE_SHARE of one seed's reconstructions within the track's near-copy thresholds of another
seed's reconstructions is a copy, not an independent run. This script measures, for each attack,
the share an HONEST pair of seeds actually has (both directions, the larger printed), beside the
limit, so that the rule can be seen to leave honest seed groups alone. It also prints the share of
one run against itself with one pixel changed per image (what a forged "new seed" looks like).
An attack that ignores its seed (deterministic) gives byte-identical runs: such a pair is already a
duplicate by hash, and a second seed of it is no independent run.
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
import torch

IMAGE_ATTACKS = ["mi-face", "deepdream", "deepinversion", "deep-leakage", "inv-alignment", "updates-leak",
                 "bias-rec", "revealer", "kedmi", "plg-mi"]


def run(attack: str, budget: str, seed: int) -> np.ndarray:
    from reconbench.attacks import Progress
    from reconbench.evaluation import attack_run
    from reconbench.tracks import get_track

    out = attack_run(get_track("digits"), attack, None, config={}, seed=seed, device=torch.device("cpu"),
                     progress=Progress(), budget=budget)
    return out.reconstruction.to_uint8().numpy()


def one_pixel(images: np.ndarray, seed: int = 0) -> np.ndarray:
    out = np.ascontiguousarray(images).copy()
    flat = out.reshape(len(out), -1)
    idx = np.random.default_rng(seed).integers(0, flat.shape[1], len(out))
    rows = np.arange(len(out))
    flat[rows, idx] = np.where(flat[rows, idx] > 127, 0, 255)
    return out


def share(a: np.ndarray, b: np.ndarray, thresholds) -> float:
    from reconbench.submissions.nearcopy import Space

    return max(Space(a).flag(b, thresholds).share, Space(b).flag(a, thresholds).share)


def main() -> None:
    from reconbench.submissions.checks.duplicates import DUPLICATE_SHARE
    from reconbench.submissions.nearcopy import public_space
    from reconbench.tracks import get_track

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attack", action="append", help=f"attack name (repeatable; default: {', '.join(IMAGE_ATTACKS)})")
    parser.add_argument("--budget", default="quick")
    parser.add_argument("--seed", action="append", type=int, help="seeds (repeatable; default 0 1)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    seeds = args.seed or [0, 1]
    _, thresholds = public_space(get_track("digits"))
    print(f"digits, budget {args.budget}, seeds {seeds}, {args.threads} thread(s); near-copy thresholds: pixel MSE "
          f"<= {thresholds.pixel_mse:.3g}, structure <= {thresholds.structure:.3g}; duplicate above {DUPLICATE_SHARE:.0%}")
    print(f"{'attack':<14} {'run s':>7} {'identical':>9} {'max share between seeds':>24} {'one-pixel copy':>15}")
    for attack in args.attack or IMAGE_ATTACKS:
        t0 = time.perf_counter()
        runs = {s: run(attack, args.budget, s) for s in seeds}
        seconds = (time.perf_counter() - t0) / len(seeds)
        pairs = list(itertools.combinations(seeds, 2))
        identical = sum(np.array_equal(runs[a], runs[b]) for a, b in pairs)
        worst = max(share(runs[a], runs[b], thresholds) for a, b in pairs)
        forged = share(runs[seeds[0]], one_pixel(runs[seeds[0]]), thresholds)
        print(f"{attack:<14} {seconds:>7.1f} {identical:>4}/{len(pairs):<4} {worst:>24.1%} {forged:>15.1%}", flush=True)


if __name__ == "__main__":
    main()
