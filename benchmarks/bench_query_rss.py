"""The evaluator's peak memory against the size of one black-box query (issue 36).

    python benchmarks/bench_query_rss.py                       # digits: 1k, 10k, 100k, 200k, 1M images
    python benchmarks/bench_query_rss.py --sizes 1000,200000 --unchunked

Each size runs in a fresh interpreter (so one size's peak cannot hide another's): one warm-up run
(a 1,000-image query: the model's first batch, the allocators' pools), then the peak resident set
(VmHWM) is reset through /proc/self/clear_refs and the attack tests/attacks/surface.py:BigQuery
sends one query of N images (in budget: digits allows 1,000,000). Reported: the evaluator's peak RSS
growth during that run, and per image. `--unchunked` also runs each size with the evaluator's model
seeing a whole query message at once (QUERY_CHUNK set past the message size), the behaviour before
issue 36 within one message; the attack's process still splits a query into 16 MiB messages.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = r'''
import json, os, sys
from pathlib import Path
import torch
from reconbench.image.attacks import Progress
from reconbench.image.evaluation import attack_run
from reconbench.core.tracks import get_track
from reconbench.pipeline.isolation import parent

n, unchunked = int(sys.argv[1]), sys.argv[2] == "1"
if unchunked:
    parent.QUERY_CHUNK = 1 << 40
track, spec = get_track("digits"), sys.argv[3]
def run(size):
    attack_run(track, spec, None, config={"n": size}, seed=0, device=torch.device("cpu"), progress=Progress())
def hwm():
    return int(next(l.split()[1] for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("VmHWM:"))) * 1024
run(1000)
Path("/proc/self/clear_refs").write_text("5")
before = hwm()
run(n)
print(json.dumps({"n": n, "before": before, "peak": hwm()}))
'''


def measure(n: int, unchunked: bool) -> dict:
    spec = f"{ROOT / 'tests' / 'attacks' / 'surface.py'}:BigQuery"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", CHILD, str(n), "1" if unchunked else "0", spec], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000,200000,1000000")
    parser.add_argument("--unchunked", action="store_true")
    args = parser.parse_args()
    print("| query (images) | input MB | evaluator peak RSS before, MB | growth, MB | growth per image, bytes |"
          + (" unchunked growth, MB |" if args.unchunked else ""))
    print("|---|---|---|---|---|" + ("---|" if args.unchunked else ""))
    for n in map(int, args.sizes.split(",")):
        got = measure(n, False)
        grown = got["peak"] - got["before"]
        row = f"| {n:,} | {n * 64 * 4 / 1e6:.1f} | {got['before'] / 2**20:.0f} | {grown / 2**20:.1f} | {grown / n:.0f} |"
        if args.unchunked:
            raw = measure(n, True)
            row += f" {(raw['peak'] - raw['before']) / 2**20:.1f} |"
        print(row, flush=True)


if __name__ == "__main__":
    main()
