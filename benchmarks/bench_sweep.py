"""The same small grid run two ways in one run: sequentially in this process vs. through `sweep` on local Ray.

    .venv/bin/python benchmarks/bench_sweep.py [--grid docs/grids/digits-quick.toml] [--cpus N]

Both paths run the same jobs through the same function (reconbench.sweep.run.run_job, i.e. one
`evaluate()` each) and write the same signed result folders; only the executor differs. Printed:
wall time of each path, the ratio (sequential / Ray; > 1 means Ray is faster), the Ray start-up
time (paid once per sweep, excluded from the Ray wall time and shown apart), and the Ray path's
per-job overhead: (Ray wall x worker slots - sum of the jobs' own seconds) / jobs, i.e. the
worker-slot time per job not spent inside evaluate() (task dispatch, worker start and imports,
moving the result files back, idle slots at the tail of the grid).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "toolkit"))

NO_WEIGHTS = Path(tempfile.mkdtemp(prefix="reconbench-no-weights-"))  # empty: FID/LPIPS "not computed" (offline)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--grid", type=Path, default=REPO / "docs" / "grids" / "digits-quick.toml")
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 1, help="worker slots of local Ray")
    args = parser.parse_args(argv)

    from reconbench.core.signing import generate_key
    from reconbench.sweep import load_grid, run_sweep
    from reconbench.sweep.cluster import ray_session

    grid = load_grid(args.grid)
    with tempfile.TemporaryDirectory() as tmp:
        key, _ = generate_key(Path(tmp) / "bench.pem")
        run = dict(key_path=key, weights_dir=NO_WEIGHTS, grid=grid.name)
        seq = run_sweep(grid.jobs, out=Path(tmp) / "sequential", backend="local", **run)
        t0 = time.perf_counter()
        with ray_session(num_cpus=args.cpus):
            start = time.perf_counter() - t0
            par = run_sweep(grid.jobs, out=Path(tmp) / "ray", backend="ray", **run)
    for summary in (seq, par):
        if summary.counts()["done"] != len(grid.jobs):
            print(f"{summary.backend}: {summary.counts()} (expected {len(grid.jobs)} done)", file=sys.stderr)
            return 1
    n = len(grid.jobs)
    busy = sum(o.seconds for o in par.outcomes)
    print(f"grid {grid.name}: {n} jobs ({', '.join(sorted({j.attack for j in grid.jobs}))}), budget {grid.jobs[0].budget}, "
          f"{args.cpus} Ray worker slots, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    print("| path | wall s | s per job |\n|---|---|---|")
    print(f"| sequential, one process | {seq.wall_seconds:.1f} | {seq.wall_seconds / n:.2f} |")
    print(f"| sweep on local Ray | {par.wall_seconds:.1f} | {par.wall_seconds / n:.2f} |")
    print(f"ratio sequential / Ray: {seq.wall_seconds / par.wall_seconds:.2f}x")
    print(f"Ray start-up (once per sweep): {start:.1f} s")
    print(f"Ray per-job overhead: {(par.wall_seconds * args.cpus - busy) / n:.2f} s of worker-slot time per job "
          f"(jobs' own time: {busy / n:.2f} s each on Ray, {sum(o.seconds for o in seq.outcomes) / n:.2f} s in process)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
