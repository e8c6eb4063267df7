"""The test suite's two sets, timed as CI runs them: the default set (`pytest -m "not slow"`, make
test-fast) and the slow set (`-m slow`, make test-slow), each in its own pytest run with one process
per CPU (pytest-xdist, --dist loadfile), one after the other.

    .venv/bin/python benchmarks/bench_test_split.py [--sets fast slow] [--workers 2]

Prints each set's wall time, its outcome, and the modules that cost the most worker-seconds (from
pytest's JUnit XML: setup + call + teardown of every test, a module's shared fixtures included), so a
module that grows can be moved to the slow set (its `pytestmark = pytest.mark.slow`). Issue 26's target:
the default set under 10 minutes on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MARKS = {"fast": "not slow", "slow": "slow"}


def module_seconds(junit: Path) -> tuple[Counter, Counter]:
    seconds, tests = Counter(), Counter()
    for case in ET.parse(junit).iter("testcase"):
        module = (case.get("classname") or "?").split(".")[-1]
        seconds[module] += float(case.get("time") or 0.0)
        tests[module] += 1
    return seconds, tests


def run_set(name: str, workers: int, out: Path) -> dict:
    junit = out / f"{name}.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", MARKS[name], f"--junitxml={junit}"]
    if workers:
        cmd += ["-n", str(workers), "--dist", "loadfile"]
    env = os.environ | {"PYTHONPATH": str(REPO / "toolkit")}
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    summary = next((line for line in reversed(done.stdout.splitlines()) if " in " in line and "=" not in line[:1]), "")
    seconds, tests = module_seconds(junit) if junit.is_file() else (Counter(), Counter())
    return {"name": name, "wall": wall, "rc": done.returncode, "summary": summary.strip(), "seconds": seconds,
            "tests": tests, "tail": done.stdout[-3000:] if done.returncode else ""}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", nargs="+", choices=list(MARKS), default=list(MARKS))
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="pytest-xdist processes (0: one process)")
    p.add_argument("--top", type=int, default=12, help="modules listed per set")
    args = p.parse_args(argv)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-tests-") as tmp:
        rows = [run_set(name, args.workers, Path(tmp)) for name in args.sets]
    print(f"{os.cpu_count()} CPUs, {args.workers} pytest workers, load average {load:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end")
    print("| set | pytest -m | wall min | worker-s in tests | modules | outcome |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['name']} | {MARKS[r['name']]} | {r['wall'] / 60:.1f} | {sum(r['seconds'].values()):.0f} "
              f"| {len(r['seconds'])} | {r['summary']} |")
    for r in rows:
        print(f"\n{r['name']}: the {args.top} costliest modules (worker-s, tests)")
        for module, s in r["seconds"].most_common(args.top):
            print(f"  {s:7.1f}  {r['tests'][module]:4d}  {module}")
        if r["rc"]:
            print(r["tail"])
    return max((r["rc"] for r in rows), default=0)


if __name__ == "__main__":
    raise SystemExit(main())
