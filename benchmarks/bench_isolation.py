"""Overhead of the attack's sandbox (reconbench.pipeline.isolation) on the default run, against no isolation at all.

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

Two figures per mode: wall time, and CPU time (user + system of this process and of the processes it
waited for, the attack's included). On a shared, loaded machine the wall time of runs minutes apart
moves with the other users' load; the CPU time is the work the boundary adds.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cpu import adopt_orphans, reap_orphans  # noqa: E402

MODES = ("in-process", "bubblewrap", "none")


def cpu_seconds() -> float:
    """CPU time of this process and of every child it has waited for (bubblewrap, and the sandbox's
    init and the attack's process, adopted and reaped: bench_cpu.py), user + system."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def run_once(attack: str, budget: str, mode: str):
    from reconbench.image.attacks import Progress
    from reconbench.image.evaluation import attack_run
    from reconbench.core.tracks import get_track

    if mode != "in-process":
        os.environ["RECONBENCH_SANDBOX"] = mode
    t0, c0 = time.perf_counter(), cpu_seconds()
    run = attack_run(get_track("digits"), attack, None, config={}, seed=0, device=torch.device("cpu"),
                     progress=Progress(), budget=budget, isolate=mode != "in-process")
    reap_orphans()  # what bubblewrap left: its CPU counts only once it is waited for
    return run, time.perf_counter() - t0, cpu_seconds() - c0


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
    adopt_orphans()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"digits, budget {args.budget}, {args.threads} thread(s), best of {args.repeat}, load average {load:.1f} at the start")
    others = [m for m in modes if m != "in-process"]
    for attack in args.attack or ["deepinversion"]:
        wall = {m: float("inf") for m in modes}
        cpu = {m: float("inf") for m in modes}
        same = True
        for _ in range(args.repeat):
            runs = {}
            for mode in modes:
                runs[mode], took, used = run_once(attack, args.budget, mode)
                wall[mode], cpu[mode] = min(wall[mode], took), min(cpu[mode], used)
            ref = runs["in-process"].reconstruction
            same = same and all(torch.equal(ref.images, runs[m].reconstruction.images)
                                and torch.equal(ref.labels, runs[m].reconstruction.labels) for m in others)
        for what, best in (("wall", wall), ("cpu", cpu)):
            cells = " ".join(f"{m} {best[m]:.2f} s ({best[m] / best['in-process']:.3f}x)" for m in others)
            print(f"{attack:<16} {what:<4} in-process {best['in-process']:.2f} s | {cells} | same output: {same}")
    end = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average {end:.1f} at the end")


if __name__ == "__main__":
    main()
