"""Validation and site build against the number of entries, with entries that pass every check.

    .venv/bin/python benchmarks/bench_site_build.py [--sizes 10 100 1000] [--keep DIR]

Entries: one real MI-Face run (evaluate + sign) is the template payload; the reconstructions are
blends of real runs' reconstructions (tests/site_entries.py blend_entries: three images of one class,
Dirichlet weights), scored by the toolkit's own score(), signed by fresh team keys, five entries a team
(the seeds of one configuration: a board of N entries has N / 5 teams). Every one passes every check, re-scoring and the near-duplicate search included (the script fails otherwise).

For each size N, on a board of the first N entries and an empty cache (RECONBENCH_CACHE):
  validate   validate_board over the whole board, as `recon-submit validate --root` does: every check
             of every entry, nothing cached (the full re-validation, the nightly job's work)
  build      the strict MkDocs build of the repository's mkdocs.yml (the hook validates again, reusing
             the cached check outcomes and near-duplicate features, then renders every page)
  search     the size of the built search/search_index.json
Then the pull-request case on the largest board: one more entry (another team) validated alone
against the board, with the cache the full validation left (what validate.yml restores from main),
and with an empty cache.

Times are CPU seconds of this process (time.process_time, one torch thread): other sessions on a
shared machine add wall time, not CPU time. The builds run in this process (mkdocs' own build
function), so Python and torch imports are paid once, before the first measurement.
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

from site_entries import blend_entries, diverse_sources, evaluate_entry, make_key  # noqa: E402


def timed(fn, *args, **kw):
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn(*args, **kw)
    return out, time.process_time() - c0, time.perf_counter() - w0


def board_of(pool: Path, entries: list[Path], dest: Path) -> Path:
    """A submissions/ folder holding `entries` (from `pool`) and their teams' team.toml."""
    shutil.rmtree(dest, ignore_errors=True)
    for entry in entries:
        team = dest / entry.parent.name
        if not team.exists():
            team.mkdir(parents=True)
            shutil.copy2(entry.parent / "team.toml", team / "team.toml")
        shutil.copytree(entry, team / entry.name)
    return dest


def validate(root: Path, paths=None):
    from reconbench.submissions.validate import validate_board

    report = validate_board(paths, root)
    bad = [(r.team, r.entry_id, next((c.message for c in r.checks if c.status == "fail"), r.trust))
           for r in report.entries if r.trust not in ("re-scored", "reproduced")]
    if bad:
        raise SystemExit(f"{len(bad)} entries do not pass every check, e.g. {bad[:3]}")
    return report


def build(submissions: Path, site_dir: Path) -> dict:
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config

    os.environ["RECONBENCH_SUBMISSIONS"] = str(submissions)
    os.environ["RECONBENCH_SITE_RESCORE"] = "1"
    shutil.rmtree(site_dir, ignore_errors=True)
    config = load_config(config_file=str(REPO / "mkdocs.yml"), site_dir=str(site_dir), strict=True)
    mkdocs_build(config)  # raises mkdocs.exceptions.Abort on any warning (strict)
    hook = next(iter(config.hooks.values()))  # the loaded module of mkdocs.yml's `hooks:`
    return dict(hook._bundle.timings)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    p.add_argument("--keep", type=Path, help="keep the generated entries, boards, caches and sites here")
    args = p.parse_args(argv)
    logging.getLogger("mkdocs").setLevel(logging.WARNING)
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch

    torch.set_num_threads(1)
    sizes = sorted(set(args.sizes))
    work = Path(args.keep or tempfile.mkdtemp(prefix="bench-site-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        os.environ["RECONBENCH_CACHE"] = str(work / "cache-setup")
        template = work / "run-mi-face-0-30-default"  # evaluate_entry's folder (kept by --keep)
        if not (template / "result.json").is_file():
            shutil.rmtree(template, ignore_errors=True)
            template = evaluate_entry(work, make_key(work, "template"), seed=0, iterations=30)
        examples = sorted((REPO / "submissions").glob("*/*/reconstructions.safetensors"))
        from reconbench.image.results import load_reconstructions

        shape = load_reconstructions(template / "reconstructions.safetensors")[0].shape
        sources = diverse_sources([e.parent for e in examples], shape)
        pool = work / "pool"
        made = sorted(pool.glob("*/*/result.json"))
        if len(made) < sizes[-1] + 1:  # (entries an interrupted run made are kept)
            _, cpu, wall = timed(blend_entries, template, sources, pool, sizes[-1] + 1, work / "keys")
            print(f"made {sizes[-1] + 1} blended entries from {len(sources)} real runs: {cpu:.0f} CPU-s ({wall:.0f} s wall)")
        entries = sorted((e.parent for e in pool.glob("*/*/result.json")), key=lambda e: e.name)
        validate(board_of(pool, entries[:2], work / "warm-up"))  # imports, registry, public pool: paid once
        rows = []
        for n in sizes:
            root = board_of(pool, entries[:n], work / f"board-{n}" / "submissions")
            os.environ["RECONBENCH_CACHE"] = str(work / f"cache-{n}")
            shutil.rmtree(work / f"cache-{n}", ignore_errors=True)
            report, v_cpu, v_wall = timed(validate, root)
            timings, b_cpu, b_wall = timed(build, root, work / f"site-{n}")
            index = work / f"site-{n}" / "search" / "search_index.json"
            rows.append(dict(n=n, v_cpu=v_cpu, v_wall=v_wall, b_cpu=b_cpu, b_wall=b_wall, timings=timings,
                             search=index.stat().st_size, checked=len(report.entries)))
            print(f"  N={n}: validate {v_cpu:.1f} CPU-s ({v_wall:.1f} s wall), build {b_cpu:.1f} CPU-s "
                  f"({b_wall:.1f} s wall), search index {index.stat().st_size / 1e6:.2f} MB", flush=True)
        # the pull-request case: one more entry, validated alone against the largest board
        n = sizes[-1]
        root = work / f"board-{n}" / "submissions"
        new = entries[n]
        team = root / new.parent.name
        if not (team / "team.toml").is_file():  # its team's first entry: the PR adds the team too
            team.mkdir(parents=True, exist_ok=True)
            shutil.copy2(new.parent / "team.toml", team / "team.toml")
        shutil.copytree(new, team / new.name)
        _, pr_cpu, pr_wall = timed(validate, root, [team / new.name])
        os.environ["RECONBENCH_CACHE"] = str(work / "cache-empty")
        shutil.rmtree(work / "cache-empty", ignore_errors=True)
        _, cold_cpu, cold_wall = timed(validate, root, [team / new.name])

        print(f"\nload average at the end: {os.getloadavg()[0]:.1f} (1 min), {os.getloadavg()[2]:.1f} (15 min); "
              f"{os.cpu_count()} CPUs; CPU seconds of this process, 1 torch thread")
        print(f"| entries | validate CPU-s | build CPU-s | validate+build CPU-s per entry | x per entry at N={sizes[0]} "
              f"| search index MB | kB per entry |")
        print("|---|---|---|---|---|---|---|")
        base = (rows[0]["v_cpu"] + rows[0]["b_cpu"]) / rows[0]["n"]
        for r in rows:
            per = (r["v_cpu"] + r["b_cpu"]) / r["n"]
            print(f"| {r['n']:,} | {r['v_cpu']:.1f} | {r['b_cpu']:.1f} | {per:.2f} | {per / base:.2f} "
                  f"| {r['search'] / 1e6:.2f} | {r['search'] / r['n'] / 1e3:.1f} |")
        if len(rows) >= 2:  # cost(N) = a + b*N through the two largest sizes, extrapolated to 10,000 entries
            (n1, c1), (n2, c2) = [(r["n"], r["v_cpu"] + r["b_cpu"]) for r in rows[-2:]]
            b = (c2 - c1) / (n2 - n1)
            a = c2 - b * n2
            s1, s2 = rows[-2]["search"], rows[-1]["search"]
            search = s2 + (s2 - s1) / (n2 - n1) * (10_000 - n2)
            print(f"extrapolation to N=10,000 through N={n1:,} and N={n2:,}: validate+build CPU-s = a + b*N with "
                  f"b = ({c2:.1f} - {c1:.1f}) / ({n2} - {n1}) = {b:.3f} CPU-s per entry, a = {a:.1f} CPU-s: "
                  f"{a + b * 10_000:,.0f} CPU-s ({(a + b * 10_000) / 3600:.2f} CPU-hours); "
                  f"search index {search / 1e6:.1f} MB")
        for r in rows:
            print(f"  N={r['n']}: hook phases " + " ".join(f"{k}={v:.1f}" for k, v in r["timings"].items()))
        print(f"pull request adding one entry to the {n:,}-entry board: {pr_cpu:.1f} CPU-s ({pr_wall:.1f} s wall) "
              f"with main's cache; {cold_cpu:.1f} CPU-s ({cold_wall:.1f} s wall) with an empty cache")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
