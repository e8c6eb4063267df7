"""Overhead of the process boundary (reconbench.isolation) on the default run, against in-process.

    python benchmarks/bench_isolation.py                       # the default run: deepinversion on digits
    python benchmarks/bench_isolation.py --budget quick --attack inv-alignment --repeat 3

Both modes run in the same invocation, alternately (in-process first, then isolated, per repeat),
with the same thread count; the best of the repeats is reported. "isolated" includes starting the
attack's interpreter (imports), pickling the view across, every black-box query and progress message
over the pipe, and returning the reconstructions. The reconstructions of the two modes must be
bit-identical (checked), so the ratio measures the boundary alone.
"""

from __future__ import annotations

import argparse
import time

import torch


def run_once(attack: str, budget: str, isolate: bool):
    from reconbench.attacks import Progress
    from reconbench.evaluation import attack_run
    from reconbench.tracks import get_track

    t0 = time.perf_counter()
    run = attack_run(get_track("digits"), attack, None, config={}, seed=0, device=torch.device("cpu"),
                     progress=Progress(), budget=budget, isolate=isolate)
    return run, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attack", action="append", help="attack name (repeatable; default: deepinversion)")
    parser.add_argument("--budget", default="default", help="quick, default or paper")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"digits, budget {args.budget}, {args.threads} thread(s), best of {args.repeat}")
    print(f"{'attack':<16} {'in-process s':>12} {'isolated s':>11} {'overhead s':>11} {'ratio':>7}  same output")
    for attack in args.attack or ["deepinversion"]:
        inproc, isolated = float("inf"), float("inf")
        for _ in range(args.repeat):
            a, ta = run_once(attack, args.budget, isolate=False)
            b, tb = run_once(attack, args.budget, isolate=True)
            inproc, isolated = min(inproc, ta), min(isolated, tb)
            same = torch.equal(a.reconstruction.images, b.reconstruction.images)
        print(f"{attack:<16} {inproc:>12.2f} {isolated:>11.2f} {isolated - inproc:>11.2f} {isolated / inproc:>7.3f}  {same}")


if __name__ == "__main__":
    main()
