"""Overhead of the attack's sandbox (reconbench.isolation) on the default run, against no isolation at all.

    python benchmarks/bench_isolation.py                       # the default run: deepinversion on digits
    python benchmarks/bench_isolation.py --budget quick --attack deepinversion --attack inv-alignment
    python benchmarks/bench_isolation.py --budget quick --modes in-process,bubblewrap,none

Modes, run in the same invocation, alternately (each repeat runs every mode in the order given), with
the same thread count; the best of the repeats is reported:
- in-process: the attack runs in this process (`attack_run(..., isolate=False)`), the reference; never
  used for a result file;
- bubblewrap: what every evaluation does on Linux: a fresh interpreter in the bubblewrap sandbox
  (RECONBENCH_SANDBOX=bubblewrap);
- none: the same process boundary without the sandbox (RECONBENCH_SANDBOX=none).
An isolated mode's time includes starting bubblewrap and the attack's interpreter (imports), pickling
the view across, every black-box query and progress message over the socket, returning the
reconstructions and ending the sandbox. The reconstructions of every mode must be bit-identical to
the in-process ones (checked), so the ratio measures the boundary alone.
"""

from __future__ import annotations

import argparse
import os
import time

import torch

MODES = ("in-process", "bubblewrap", "none")


def run_once(attack: str, budget: str, mode: str):
    from reconbench.attacks import Progress
    from reconbench.evaluation import attack_run
    from reconbench.tracks import get_track

    if mode != "in-process":
        os.environ["RECONBENCH_SANDBOX"] = mode
    t0 = time.perf_counter()
    run = attack_run(get_track("digits"), attack, None, config={}, seed=0, device=torch.device("cpu"),
                     progress=Progress(), budget=budget, isolate=mode != "in-process")
    return run, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attack", action="append", help="attack name (repeatable; default: deepinversion)")
    parser.add_argument("--budget", default="default", help="quick, default or paper")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--modes", default="in-process,bubblewrap", help=f"comma-separated, from {', '.join(MODES)}")
    args = parser.parse_args()
    modes = args.modes.split(",")
    if "in-process" not in modes or not set(modes) <= set(MODES):
        parser.error(f"--modes: in-process and any of {', '.join(MODES[1:])}")
    torch.set_num_threads(args.threads)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"digits, budget {args.budget}, {args.threads} thread(s), best of {args.repeat}, load average {load:.1f} at the start")
    others = [m for m in modes if m != "in-process"]
    print(f"{'attack':<16} {'in-process s':>12} " + " ".join(f"{m + ' s':>13} {'ratio':>6}" for m in others) + "  same output")
    for attack in args.attack or ["deepinversion"]:
        best = {m: float("inf") for m in modes}
        same = True
        for _ in range(args.repeat):
            runs = {}
            for mode in modes:
                runs[mode], took = run_once(attack, args.budget, mode)
                best[mode] = min(best[mode], took)
            ref = runs["in-process"].reconstruction
            same = same and all(torch.equal(ref.images, runs[m].reconstruction.images)
                                and torch.equal(ref.labels, runs[m].reconstruction.labels) for m in others)
        cells = " ".join(f"{best[m]:>13.2f} {best[m] / best['in-process']:>6.3f}" for m in others)
        print(f"{attack:<16} {best['in-process']:>12.2f} {cells}  {same}")
    end = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average {end:.1f} at the end")


if __name__ == "__main__":
    main()
