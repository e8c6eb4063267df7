"""The cost of the attack's resource limits (issue 36) on a run, in CPU time, against the same run
without them.

    python benchmarks/bench_limits.py                              # mi-face, default budget, on digits
    python benchmarks/bench_limits.py --attack deepinversion --budget quick --repeat 2

Two modes, alternately in one invocation (each repeat runs both, in turns first), both in the bubblewrap sandbox:
- limits: what every evaluation does (a cgroup where one can be made, RLIMIT_DATA/CPU on the tree,
  sized /tmp and /dev/shm, and the evaluator's watch of the tree every 0.2 s);
- none: the cgroup, the rlimits and the watch switched off (tmpfs sizes stay: they cost nothing
  until a write).
CPU time is user + system of this process and of every process it waited for (the sandbox's
included, adopted and reaped as in bench_isolation.py); the best of the repeats is reported, with the
CPU cost of one check of the tree by the evaluator (the watch's whole recurring cost).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cpu import adopt_orphans, reap_orphans  # noqa: E402
from bench_isolation import cpu_seconds  # noqa: E402

from reconbench.pipeline.isolation.parent import CHECK_EVERY_S  # noqa: E402


def run_once(attack: str, budget: str, limited: bool):
    from reconbench.image.attacks import Progress
    from reconbench.image.evaluation import attack_run
    from reconbench.core.tracks import get_track
    from reconbench.pipeline.isolation import limits

    saved = limits.Cgroup.__init__, limits.Monitor.check, limits.rlimits
    if not limited:
        def no_cgroup(self, _limits):
            self.kind, self.paths = "none", []

        limits.Cgroup.__init__, limits.Monitor.check, limits.rlimits = no_cgroup, lambda self: None, lambda _l: {}
    try:
        t0, c0 = time.perf_counter(), cpu_seconds()
        run = attack_run(get_track("digits"), attack, None, config={}, seed=0, device=torch.device("cpu"),
                         progress=Progress(), budget=budget)
        reap_orphans()
        return run, time.perf_counter() - t0, cpu_seconds() - c0
    finally:
        limits.Cgroup.__init__, limits.Monitor.check, limits.rlimits = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attack", default="mi-face")
    parser.add_argument("--budget", default="default")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    os.environ["RECONBENCH_SANDBOX"] = "bubblewrap"
    torch.set_num_threads(1)
    adopt_orphans()
    from reconbench.pipeline.isolation.limits import Cgroup, for_budget

    kind = Cgroup(for_budget(args.budget))
    kind.remove()
    print(f"{args.attack} on digits, budget {args.budget}, 1 thread, best of {args.repeat}, cgroup: {kind.kind}, "
          f"load average {os.getloadavg()[0]:.1f} at the start")
    best = {m: [float("inf"), float("inf")] for m in ("limits", "none")}
    same = True
    for i in range(args.repeat):
        runs = {}
        for mode in ("none", "limits") if i % 2 == 0 else ("limits", "none"):  # neither always goes first
            runs[mode], wall, cpu = run_once(args.attack, args.budget, mode == "limits")
            best[mode] = [min(best[mode][0], wall), min(best[mode][1], cpu)]
        same = same and torch.equal(runs["none"].reconstruction.images, runs["limits"].reconstruction.images)
    (w0, c0), (w1, c1) = best["none"], best["limits"]
    print(f"| {args.attack} ({args.budget}) | {c0:.2f} | {c1:.2f} | {c1 / c0:.3f} | {w0:.1f} | {w1:.1f} | {same} |")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    print(f"one check of the tree: {check_cost() * 1e3:.3f} CPU-ms; at one per {CHECK_EVERY_S} s: "
          f"{check_cost() / CHECK_EVERY_S * 100:.3f}% of one CPU")


def check_cost(n: int = 2000) -> float:
    """CPU seconds of one Monitor.check (cgroup files, /proc walk of a tree) on this process's own tree."""
    from reconbench.pipeline.isolation.limits import Cgroup, Monitor, for_budget

    group = Cgroup(for_budget("default"))
    try:
        monitor = Monitor(for_budget("default"), os.getpid(), group)
        t0 = time.process_time()
        for _ in range(n):
            monitor.check()
        return (time.process_time() - t0) / n
    finally:
        group.remove()


if __name__ == "__main__":
    main()
