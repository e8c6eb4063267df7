"""How long each vision attack takes at its `default` budget on the Fashion-MNIST tracks, on this CPU.

    .venv/bin/python benchmarks/bench_default_budgets.py [--stop 120] [--fits 1800] [--only deepinversion]

One row per run of docs/grids/findings.toml and findings-default.toml (track, attack, cell, surrogate), each in this process,
one torch thread, seed 0, the attack's `default` options ("auto" resolves to the papers' values
on 28x28). The Progress the attack reports to times each phase (each progress task: GAN training,
latent search, ...). Once a run has gone --stop seconds and its current phase has run --probe
seconds, the run stops there and that phase's remaining steps are projected at the rate measured
so far. So a row is either
  measured    the run ended before --stop: its wall seconds, the attack's whole work;
  projected   elapsed + the current phase's remaining steps at its measured rate. Phases not yet
              started are not counted, so the figure is a lower bound ("≥").
"fits" compares with --fits, what one run may take here (an entry is the run and its sandboxed
reproduction, so twice that): "no" when even the lower bound is over it.
The per-step cost matches a full evaluate's (benchmarks/bench_fixed_cost.py: the sandboxed
process adds a fixed cost, not a per-step one), so a projection tells whether `evaluate` fits.
GAN priors are trained in a fresh cache folder, never loaded.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "toolkit"))

import torch  # noqa: E402

from reconbench.image.attacks import Progress  # noqa: E402
from reconbench.image.evaluation import attack_run  # noqa: E402
from reconbench.sweep.grid import load_grid  # noqa: E402
from reconbench.core.tracks import get_track  # noqa: E402


class OverBudget(Exception):
    pass


@dataclass
class Phase:
    name: str
    total: int
    done: int = 0
    started: float = 0.0
    seconds: float = 0.0

    @property
    def per_step(self) -> float | None:
        return self.seconds / self.done if self.done else None


@dataclass
class Timer:
    stop: float
    probe: float
    start: float = field(default_factory=time.monotonic)
    phases: list[Phase] = field(default_factory=list)
    projected: float | None = None

    @contextmanager
    def task(self, description: str, total: int):
        phase = Phase(description, int(total), started=time.monotonic())
        self.phases.append(phase)

        def advance(steps: int = 1) -> None:
            now = time.monotonic()
            phase.done += steps
            phase.seconds = now - phase.started
            if phase.seconds < self.probe or phase.done >= phase.total:
                return
            if now - self.start > self.stop:
                self.projected = now - self.start + (phase.total - phase.done) * phase.seconds / phase.done
                raise OverBudget(description)

        yield advance


def runs(grid_paths: list[Path]):
    seen = set()
    for job in (j for path in grid_paths for j in load_grid(path, budget="default").jobs):
        key = (job.track, job.attack, job.scenario, job.surrogate)
        if key not in seen:
            seen.add(key)
            yield key


def measure(track_id: str, attack: str, scenario: str | None, surrogate: str | None, stop: float, probe: float):
    track = get_track(track_id)
    timer = Timer(stop, probe)
    progress = Progress(timer.task)
    prepare = None
    if surrogate:
        from reconbench.image.surrogate import route

        def prepare(knowledge):
            got = route.steal(track, knowledge, surrogate, budget="default", overrides={}, seed=0, progress=progress)
            return route.surrogate_view(knowledge, got.model)

    requested = None if scenario in (None, "default") else scenario
    try:
        run = attack_run(track, attack, requested, config={}, seed=0, device=torch.device("cpu"),
                         progress=progress, budget="default", isolate=False, prepare=prepare)
        config = run.config
        wall, kind = time.monotonic() - timer.start, "measured"
    except OverBudget:
        config, wall, kind = None, timer.projected, "projected"
    return kind, wall, timer.phases, config


def phase_line(p: Phase) -> str:
    rate = f"{p.per_step:.3g} s/step" if p.per_step else "not timed"
    return f"{p.name.split(': ', 1)[-1]} {p.done}/{p.total} steps, {rate}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grid", type=Path, action="append", default=None, help="grid files (default: both findings grids)")
    parser.add_argument("--stop", type=float, default=120.0, help="seconds after which a run is projected and stopped")
    parser.add_argument("--probe", type=float, default=30.0, help="seconds a phase runs before it is projected")
    parser.add_argument("--fits", type=float, default=1800.0, help="seconds one run may take here to count as fitting")
    parser.add_argument("--only", action="append", default=None, help="only these attacks (repeatable)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    os.environ["RECONBENCH_CACHE"] = tempfile.mkdtemp(prefix="bench-default-")
    print(f"# default budgets, one torch thread, stop {args.stop:.0f} s, fits {args.fits:.0f} s, "
          f"load {os.getloadavg()[0]:.1f}")
    print("| track | attack | cell | seconds | fits | phases (steps timed / total, rate) |")
    print("|---|---|---|---|---|---|")
    grids = args.grid or [REPO / "docs/grids/findings.toml", REPO / "docs/grids/findings-default.toml"]
    for track_id, attack, scenario, surrogate in runs(grids):
        if args.only and attack not in args.only:
            continue
        kind, wall, phases, _ = measure(track_id, attack, scenario, surrogate, args.stop, args.probe)
        shown = f"{wall:.0f}" if kind == "measured" else f"≥ {wall:.0f} (projected)"
        cell = (scenario or "default") + (f" via {surrogate}" if surrogate else "")
        fits = "no" if wall > args.fits else "yes" if kind == "measured" else "not known (phases after the stop)"
        print(f"| {track_id} | {attack} | {cell} | {shown} | {fits} | {'; '.join(map(phase_line, phases))} |",
              flush=True)
    print(f"# load at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
