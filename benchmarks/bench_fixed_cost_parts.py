"""Where `evaluate`'s fixed cost goes, per process: the evaluator, bubblewrap, the attack's interpreter.

    .venv/bin/python benchmarks/bench_fixed_cost_parts.py [--repeat 2]

bench_fixed_cost.py gives evaluate's fixed cost against the reference loop's; this splits it. Each
command runs in a fresh interpreter, one torch thread, offline, best of --repeat (CPU seconds):
  evaluate 5 iterations   recon-submit evaluate --attack deepinversion --set iterations=5: the CPU of
                          each process of its tree (bench_cpu.run_tree), grouped by command line
  reference 5 iterations  benchmarks/reference_deepinversion.py --iterations 5
  import torch            python -c "import torch"
  import torch._dynamo    what the first call of torch.optim's optimisers imports (torch._disable_dynamo),
                          in the reference and in the attack's process alike (measured after torch)
The last lines: evaluate and the floor of any two-interpreter design against the reference: the attack's
process does at least the reference's work, and the evaluator imports torch at least (it holds the
model and scores), so the floor is (reference + import torch) / reference.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from bench_cpu import adopt_orphans, byte_compile, run_tree  # noqa: E402

DYNAMO = "import time, torch; t = time.process_time(); import torch._dynamo; print(time.process_time() - t)"


def role(cmdline: str) -> str:
    if "isolation.child" in cmdline:
        return "attack's interpreter"
    if "bwrap" in cmdline:
        return "bubblewrap"
    if "reconbench.cli" in cmdline:
        return "evaluator"
    return "other (" + cmdline.split(" ")[0].rsplit("/", 1)[-1] + ")"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=2)
    args = p.parse_args()
    adopt_orphans()
    byte_compile(REPO / "toolkit")  # the steady state of every run after the first (bench_cpu.byte_compile)
    env = {**os.environ, "PYTHONPATH": str(REPO / "toolkit"), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-parts-") as tmp:
        work = Path(tmp)
        env["RECONBENCH_CACHE"] = str(work / "cache")
        from reconbench.core.signing import generate_key

        generate_key(work / "key.pem")
        for i in range(args.repeat):
            procs: dict = {}
            _, total = run_tree([sys.executable, "-m", "reconbench.cli", "evaluate", "--attack", "deepinversion", "--set",
                                 "iterations=5", "--threads", "1", "--quiet", "--offline", "--key", str(work / "key.pem"),
                                 "--out", str(work / f"run{i}")], env=env, cwd=REPO, by_process=procs,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            parts: dict[str, float] = {"evaluate 5 iterations (whole tree)": total}
            for cmd, cpu in procs.values():
                key = f"  {role(cmd)}"
                parts[key] = parts.get(key, 0.0) + cpu
            _, parts["reference 5 iterations"] = run_tree(
                [sys.executable, str(REPO / "benchmarks" / "reference_deepinversion.py"), "--iterations", "5", "--out",
                 str(work / f"ref{i}.safetensors")], env=env, cwd=REPO, stdout=subprocess.DEVNULL)
            _, parts["import torch"] = run_tree([sys.executable, "-c", "import torch"], env=env, stdout=subprocess.DEVNULL)
            out = subprocess.run([sys.executable, "-c", DYNAMO], env=env, capture_output=True, text=True, check=True)
            parts["import torch._dynamo (after torch)"] = float(out.stdout.strip())
            for k, v in parts.items():
                best[k] = min(best.get(k, float("inf")), v)
    print(f"one torch thread, best of {args.repeat}; load average {os.getloadavg()[0]:.1f} at the end, {os.cpu_count()} CPUs")
    print("| part | CPU-s |")
    print("|---|---|")
    for k, v in best.items():
        print(f"| {k} | {v:.2f} |")
    ref, torch_import = best["reference 5 iterations"], best["import torch"]
    print(f"evaluate / reference: {best['evaluate 5 iterations (whole tree)'] / ref:.2f}x; two interpreters' floor, "
          f"(reference + import torch) / reference: {(ref + torch_import) / ref:.2f}x")


if __name__ == "__main__":
    main()
