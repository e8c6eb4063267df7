"""Re-run the image example entries inside the sandbox and check that their reconstructions are
bit-identical to the signed ones (issue 23: "the example entries still reproduce bit-identically
inside the sandbox").

    RECONBENCH_SANDBOX=bubblewrap .venv/bin/python scripts/reproduce_examples_sandboxed.py \
        [--root submissions] [--max-seconds S] [ENTRY_DIR ...]

Each entry is re-run as `recon-submit reproduce ENTRY --run-only DIR` does (reproduction/rerun.py:
its signed attack, configuration, budget, scenario and seed), with bubblewrap required. The
reconstructions file of the re-run is compared byte for byte (sha256) with the one the entry signs,
and the query count with the claim. Nothing is scored or signed here: the reconstructions do not
depend on the evaluation classifier. Prints one row per entry; exits 1 when any differs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("entries", nargs="*", type=Path)
    parser.add_argument("--root", type=Path, default=REPO / "submissions")
    parser.add_argument("--max-seconds", type=float, default=None, help="skip entries whose recorded wall time is longer")
    args = parser.parse_args(argv)
    os.environ["RECONBENCH_SANDBOX"] = "bubblewrap"  # a sandboxed re-run or an error, never a silent fallback

    from reconbench.core.io import sha256_file
    from reconbench.reproduction.rerun import _is_text, load_entry, rerun
    from reconbench.image.results import parse_result_json

    folders = args.entries or sorted(p.parent for p in args.root.glob("*/*/result.json"))
    rows, differ = [], 0
    for folder in folders:
        entry = load_entry(folder)
        if _is_text(entry):
            continue  # text attacks are toolkit code run in the evaluator's process (docs/sandbox.md)
        p = entry.result.payload
        if args.max_seconds is not None and p.provenance.wall_seconds > args.max_seconds:
            rows.append((folder.name, p.attack.name, p.attack.budget, "-", f"{p.provenance.wall_seconds:.0f}", "-", "skipped"))
            continue
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            run = rerun(entry, Path(tmp) / "run")
            took = time.perf_counter() - t0
            again = parse_result_json(run / "result.json").payload
            same = (sha256_file(run / again.reconstructions.file) == p.reconstructions.sha256
                    and again.provenance.queries == p.provenance.queries)
        differ += not same
        rows.append((folder.name, p.attack.name, p.attack.budget, again.provenance.sandbox or "none",
                     f"{p.provenance.wall_seconds:.0f}", f"{took:.0f}", "yes" if same else "NO"))
        print(" | ".join(rows[-1]), flush=True)
    print()
    print("| entry | attack | budget | sandbox | signed run s | re-run s | bit-identical (and queries) |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
