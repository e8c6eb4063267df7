"""Start-up time of `recon-submit` commands that need no model, as a ratio against `python -c pass`.

    .venv/bin/python benchmarks/bench_cli_startup.py [--repeat 5]

Each command runs in a fresh interpreter (as the console script does); the best of --repeat runs
is reported, with the same for the bare interpreter measured in the same run as the reference.
`import torch` alone is shown too: what the lazy imports save.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

TOOLKIT = Path(__file__).resolve().parents[1] / "toolkit"
COMMANDS = (["--help"], ["tracks"], ["attacks"], ["metrics"], ["schema"], ["version"])


def best_of(argv: list[str], repeat: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(TOOLKIT)}
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    base = best_of([sys.executable, "-c", "pass"], args.repeat)
    torch_t = best_of([sys.executable, "-c", "import torch"], args.repeat)
    print(f"reference: python -c pass  {base * 1000:7.0f} ms")
    print(f"{'command':<28} {'ms':>7} {'x pass':>7}")
    for cmd in COMMANDS:
        t = best_of([sys.executable, "-m", "reconbench.cli", *cmd], args.repeat)
        print(f"recon-submit {' '.join(cmd):<15} {t * 1000:7.0f} {t / base:7.1f}")
    print(f"{'(python -c import torch)':<28} {torch_t * 1000:7.0f} {torch_t / base:7.1f}")


if __name__ == "__main__":
    main()
