"""How long the README's first submission takes: `evaluate --budget quick --seed 7` and `validate`.

    .venv/bin/python benchmarks/bench_first_submission.py [--threads 1]

Runs the two README commands as a newcomer does (the console script, a fresh signing key, a copy
of this checkout's submissions/ so that nothing here changes) and prints the wall time of each, the
attack time the signed result records, and the machine (OS, CPU, cores, load average before and
after). `submit` is in between (seconds; not timed). The numbers quoted in README.md come from here.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EVALUATE = ["evaluate", "--budget", "quick", "--seed", "7", "--out", "runs/first"]  # as README.md


def recon(args: list[str], cwd: Path, env: dict) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "reconbench.cli", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"recon-submit {' '.join(args)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return time.perf_counter() - t0, proc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None, help="OMP_NUM_THREADS for the runs (default: unset)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-first-") as tmp:
        work = Path(tmp)
        shutil.copytree(REPO / "submissions", work / "submissions")
        env = {**os.environ, "HOME": str(work / "home"), "PYTHONPATH": str(REPO / "toolkit"), "HF_HUB_OFFLINE": "1",
               "RECONBENCH_CACHE": str(work / "cache")}
        if args.threads:
            env["OMP_NUM_THREADS"] = str(args.threads)
        before = os.getloadavg()
        t_eval, _ = recon(EVALUATE, work, env)
        recon(["submit", "runs/first", "--team", "my-lab", "--name", "My Lab"], work, env)
        t_val, proc = recon(["validate", "submissions/my-lab"], work, env)
        after = os.getloadavg()
        import json

        payload = json.loads((work / "runs" / "first" / "result.json").read_text())["payload"]
        verdict = proc.stdout.strip().splitlines()[-1]
    print(f"machine: {platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
          f"threads {args.threads or 'default'}, load average {before[0]:.1f} before, {after[0]:.1f} after")
    print(f"evaluate --budget quick --seed 7: {t_eval:.0f} s wall "
          f"(attack {payload['provenance']['wall_seconds']:.0f} s as the result records, {payload['provenance']['hardware']})")
    print(f"validate submissions/my-lab: {t_val:.0f} s wall ({verdict})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
