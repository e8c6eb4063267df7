"""Site build time against the number of entries: it must grow linearly.

    .venv/bin/python benchmarks/bench_site_build.py [--sizes 0 10 100 1000] [--repeat 3] [--keep DIR]

Makes one real MI-Face entry with the toolkit (evaluate + sign), derives the others from it
(tests/site_entries.py: unique reconstructions, own entry_id, re-signed by one of 20 teams), then
runs the same build as `mkdocs build --strict` on the repository's mkdocs.yml for each size, with
RECONBENCH_SITE_RESCORE=0 (re-scoring 1,000 entries would time the metrics, not the site; the
validator still checks structure, schema, signature, registry, reconstructions, copies and
duplicates of every entry).

The builds run in this process (mkdocs' own build function, strict), so that Python and torch
imports (~10-20 s, paid once by a real `mkdocs build`) do not drown the per-entry cost; each size
is built `--repeat` times and the fastest run counts (other processes on a shared machine only
ever add time). Printed: wall time per size, the hook's phases, and the time per entry above the
empty build (its fixed cost: theme, the registry's track and attack pages), which stays flat when
the build is linear.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from site_entries import clone_entries, evaluate_entry, make_key  # noqa: E402


def build_once(submissions: Path, site_dir: Path) -> tuple[float, dict[str, float], int]:
    """One strict build; returns (seconds, the hook's phase timings, pages written)."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    os.environ["RECONBENCH_SUBMISSIONS"] = str(submissions)
    os.environ["RECONBENCH_SITE_RESCORE"] = "0"
    shutil.rmtree(site_dir, ignore_errors=True)
    t0 = time.perf_counter()
    config = load_config(config_file=str(REPO / "mkdocs.yml"), site_dir=str(site_dir), strict=True)
    build(config)  # raises mkdocs.exceptions.Abort on any warning (strict)
    seconds = time.perf_counter() - t0
    hook = next(iter(config.hooks.values()))  # the loaded module of mkdocs.yml's `hooks:`
    timings = dict(hook._bundle.timings)
    return seconds, timings, sum(1 for _ in site_dir.rglob("index.html"))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[0, 10, 100, 1000])
    p.add_argument("--repeat", type=int, default=3, help="builds per size (the fastest counts); 1 for the largest")
    p.add_argument("--keep", type=Path, help="keep the generated submissions and sites here")
    args = p.parse_args(argv)
    logging.getLogger("mkdocs").setLevel(logging.WARNING)
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")

    work = Path(args.keep or tempfile.mkdtemp(prefix="bench-site-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        template = evaluate_entry(work, make_key(work, "template"), seed=0, iterations=30)
        print(f"template entry (mi-face, 30 iterations, real evaluate): {time.perf_counter() - t0:.1f} s")
        sizes = sorted(set(args.sizes))
        rows = []
        for n in sizes:
            subs = work / f"submissions-{n}"
            shutil.rmtree(subs, ignore_errors=True)
            subs.mkdir()
            clone_entries(template, subs, n, work / "keys", teams=min(20, max(1, n)))
            repeat = 1 if n == sizes[-1] and n >= 500 else args.repeat
            runs = [build_once(subs, work / f"public-{n}") for _ in range(repeat)]
            seconds, timings, pages = min(runs, key=lambda r: r[0])
            rows.append((n, seconds, timings, pages, [r[0] for r in runs]))
            print(f"  {n:5d} entries: {pages} pages, builds {', '.join(f'{r[0]:.2f}' for r in runs)} s")
        base = rows[0][1] if rows[0][0] == 0 else None
        print()
        print(f"{'entries':>7} {'pages':>6} {'build s':>8} {'ms/entry':>9} {'ms/entry above empty':>21}   hook phases (s)")
        for n, seconds, timings, pages, _ in rows:
            per = f"{1000 * seconds / n:9.1f}" if n else f"{'-':>9}"
            above = f"{1000 * (seconds - base) / n:21.1f}" if n and base is not None else f"{'-':>21}"
            phases = " ".join(f"{k}={v:.2f}" for k, v in timings.items())
            print(f"{n:7d} {pages:6d} {seconds:8.2f} {per} {above}   {phases}")
        marginal = [(n, (s - base) / n) for n, s, *_ in rows if n and base is not None]
        if len(marginal) >= 2:
            (n_small, small), (n_big, big) = marginal[0], marginal[-1]
            print(f"\nper-entry cost, {n_big} vs {n_small} entries: {1000 * big:.1f} vs {1000 * small:.1f} ms "
                  f"(ratio {big / small:.2f}; about 1 = linear, well above 1 = superlinear)")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
