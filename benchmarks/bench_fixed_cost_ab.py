"""`evaluate`'s start-up CPU, per process, with the toolkit of an earlier commit and of this checkout, alternately.

    .venv/bin/python benchmarks/bench_fixed_cost_ab.py --before 023b7e9 [--repeat 3]

Each round runs `evaluate --attack deepinversion --set iterations=5` (one torch thread, offline, the
sandbox RECONBENCH_SANDBOX chooses) with the toolkit as it was at --before (`git archive` of toolkit/ into a
temporary folder, its own PYTHONPATH: the attack's process follows it) and with this checkout's, then the
reference loop (reference_deepinversion.py, 5 iterations). Both toolkits byte-compiled first
(bench_cpu.byte_compile); CPU of each process of the tree (bench_cpu.run_tree), best of --repeat.
What changed between the two is the cut (the machine, the libraries and the load are shared).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from bench_cpu import adopt_orphans, byte_compile, run_tree  # noqa: E402
from bench_fixed_cost_parts import role  # noqa: E402


def export_toolkit(commit: str, into: Path) -> Path:
    archive = into / "toolkit.tar"
    with archive.open("wb") as f:
        subprocess.run(["git", "-C", str(REPO), "archive", commit, "toolkit"], stdout=f, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "toolkit"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", required=True, help="the earlier commit")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    adopt_orphans()
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-ab-") as tmp:
        work = Path(tmp)
        toolkits = {args.before: export_toolkit(args.before, work), "this checkout": REPO / "toolkit"}
        for folder in toolkits.values():
            byte_compile(folder)
        base = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "RECONBENCH_CACHE": str(work / "cache")}
        subprocess.run([sys.executable, "-c", f"from reconbench.core.signing import generate_key; generate_key({str(work / 'k.pem')!r})"],
                       env={**base, "PYTHONPATH": str(REPO / "toolkit")}, check=True)
        for i in range(args.repeat):
            for j, (name, toolkit) in enumerate(toolkits.items()):
                env = {**base, "PYTHONPATH": str(toolkit)}
                procs: dict = {}
                _, total = run_tree([sys.executable, "-m", "reconbench.cli", "evaluate", "--attack", "deepinversion", "--set",
                                     "iterations=5", "--threads", "1", "--quiet", "--offline", "--key", str(work / "k.pem"),
                                     "--out", str(work / f"run-{i}-{j}")], env=env, cwd=toolkit.parent,
                                    by_process=procs, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                parts = {f"{name}: evaluate (whole tree)": total}
                for cmd, cpu in procs.values():
                    parts[f"{name}:   {role(cmd)}"] = parts.get(f"{name}:   {role(cmd)}", 0.0) + cpu
                for k, v in parts.items():
                    best[k] = min(best.get(k, float("inf")), v)
            _, ref = run_tree([sys.executable, str(REPO / "benchmarks" / "reference_deepinversion.py"), "--iterations", "5",
                               "--out", str(work / f"ref{i}.safetensors")], env={**base, "PYTHONPATH": str(REPO / "toolkit")},
                              stdout=subprocess.DEVNULL)
            best["reference 5 iterations"] = min(best.get("reference 5 iterations", float("inf")), ref)
    ref = best["reference 5 iterations"]
    print(f"one torch thread, best of {args.repeat}; load average {os.getloadavg()[0]:.1f} at the end, {os.cpu_count()} CPUs")
    print("| part | CPU-s | x reference |")
    print("|---|---|---|")
    for k, v in best.items():
        print(f"| {k} | {v:.2f} | {v / ref:.2f} |")


if __name__ == "__main__":
    main()
