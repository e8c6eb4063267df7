"""The real board's site build (submissions/ as committed) from an empty cache, then again warm.

    .venv/bin/python benchmarks/bench_site_real.py [--warm] [--keep-log FILE] [--keep-site DIR]

Runs `mkdocs build --strict` as `make site` does, in a fresh interpreter with an empty toolkit cache
(RECONBENCH_CACHE: no validation records, no cached features), offline, into a temporary folder, with
the thread settings of a clean shell (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and MKL_NUM_THREADS
removed from its environment: the build's own policy applies, as in a user's `make site`); then
(--warm) a second build with the cache the first one left, as after `recon-submit validate`. For each
build: CPU seconds of the whole process tree, wall time, peak resident memory (the largest process's,
getrusage), the seconds until the build printed its first progress line (a "reconbench:" line), and
from the build's own progress lines (leaderboard/build.py: one per validated entry and one per stage,
each with the process's CPU and peak memory so far) the CPU seconds and the peak growth of each entry,
the costliest listed; last, one table of the builds. Targets (issue 45): the first progress line within
10 s; the cold build <= 180 CPU-s on 2 cores and <= 2 GB peak; the warm build re-scores nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from bench_cpu import adopt_orphans, run_tree  # noqa: E402

ENTRY = re.compile(r"validation (\d+)/(\d+) (\S+): (\S+), (.+?) in ([\d.]+) s \(process so far: ([\d.]+) CPU-s, peak (\d+) MB\)")
STAGE = re.compile(r"reconbench: (.+?) done in ([\d.]+) s \(process so far: ([\d.]+) CPU-s, peak (\d+) MB\)")


THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def first_line_watch(log: Path, t0: float, stop: threading.Event, found: list) -> None:
    """Record the seconds from the start until `log` holds a "reconbench:" progress line."""
    while not stop.is_set():
        try:
            if b"reconbench:" in log.read_bytes()[:65536]:
                found.append(time.perf_counter() - t0)
                return
        except OSError:
            pass
        time.sleep(0.05)


def build(cache: Path, out: Path, log: Path) -> tuple[float, float, float, float | None]:
    """(wall s, CPU s of the tree, peak MB of the largest process, s to the first progress line) of one
    strict build."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    env.update({"RECONBENCH_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "NO_MKDOCS_2_WARNING": "1",
                "PYTHONPATH": str(REPO / "toolkit")})
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    stop, found = threading.Event(), []
    with log.open("w") as f:
        watcher = threading.Thread(target=first_line_watch, args=(log, time.perf_counter(), stop, found), daemon=True)
        watcher.start()
        try:
            wall, cpu = run_tree([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)], cwd=REPO,
                                 env=env, stdout=f, stderr=subprocess.STDOUT)
        finally:
            stop.set()
            watcher.join()
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # kB, the largest child so far
    return wall, cpu, max(peak, before) / 1024, (found[0] if found else None)


def report(name: str, wall: float, cpu: float, peak: float, first: float | None, log: Path, top: int) -> tuple:
    """Print one build's lines; return its row of the summary table."""
    text = log.read_text(errors="replace")
    entries = [m.groups() for m in ENTRY.finditer(text)]
    # the build's own peak, from its last progress line (getrusage's maximum covers every earlier child too)
    own = [int(x) for x in re.findall(r"peak (\d+) MB\)", text)]
    peak = max(own) if own else peak
    rescored, cached = sum('re-scored' in e[4] for e in entries), sum('cache' in e[4] for e in entries)
    first_text = "none" if first is None else f"{first:.1f} s"
    print(f"{name}: {cpu:.0f} CPU-s, {wall:.0f} s wall, peak {peak:.0f} MB, first progress line after {first_text}; "
          f"{len(entries)} entries validated ({rescored} re-scored, {cached} from the cache)")
    rows, last_cpu, last_peak = [], 0.0, 0
    for done, total, entry, trust, how, seconds, cpu_so_far, peak_so_far in entries:
        rows.append((float(cpu_so_far) - last_cpu, int(peak_so_far) - last_peak, entry, how, float(seconds)))
        last_cpu, last_peak = float(cpu_so_far), max(last_peak, int(peak_so_far))
    if rows:
        print(f"  per entry: mean {sum(r[0] for r in rows) / len(rows):.1f} CPU-s, max {max(r[0] for r in rows):.1f} CPU-s")
        print("  | entry | how | CPU-s | wall s | peak growth MB |")
        print("  |---|---|---|---|---|")
        for cpu_e, grow, entry, how, seconds in sorted(rows, reverse=True)[:top]:
            print(f"  | {entry} | {how} | {cpu_e:.1f} | {seconds:.1f} | {grow} |")
    for stage, seconds, cpu_so_far, peak_so_far in STAGE.findall(text):
        print(f"  stage {stage}: {float(seconds):.1f} s wall (process so far {cpu_so_far} CPU-s, peak {peak_so_far} MB)")
    return name.split(" (")[0], cpu, wall, peak, first_text, rescored, len(entries)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--warm", action="store_true", help="build a second time with the cache the first left")
    p.add_argument("--keep-log", type=Path, help="copy the cold build's log here")
    p.add_argument("--top", type=int, default=8, help="costliest entries listed")
    p.add_argument("--keep-site", type=Path, help="copy the last build's site here (for screenshots)")
    args = p.parse_args()
    adopt_orphans()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-site-real-") as tmp:
        work = Path(tmp)
        runs = [("cold (empty cache)", work / "cold.log")] + ([("warm (the cold build's cache)", work / "warm.log")] if args.warm else [])
        rows = []
        for name, log in runs:
            t0 = time.time()
            try:
                wall, cpu, peak, first = build(work / "cache", work / "public", log)
            finally:  # the log of a build that failed (or was killed) is the one worth keeping
                if args.keep_log and log.name == "cold.log" and log.exists():
                    args.keep_log.write_text(log.read_text(errors="replace"))
            rows.append(report(name, wall, cpu, peak, first, log, args.top))
            print(f"  ({time.strftime('%H:%M', time.gmtime(t0))} UTC start)")
        if args.keep_site:
            shutil.copytree(work / "public", args.keep_site, dirs_exist_ok=True)
    print("| build | CPU-s | wall s | peak MB | first progress line | entries re-scored |")
    print("|---|---|---|---|---|---|")
    for name, cpu, wall, peak, first_text, rescored, total in rows:
        print(f"| {name} | {cpu:.0f} | {wall:.0f} | {peak:.0f} | {first_text} | {rescored} of {total} |")
    print(f"{os.cpu_count()} CPUs, load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; "
          f"threads: the build's own (thread variables unset)")


if __name__ == "__main__":
    main()
