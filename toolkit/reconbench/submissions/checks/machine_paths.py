"""Check: no machine path in what an entry signs or publishes (issue 36: a home, checkout, cache or
temporary folder says who ran a command and where; a signed note is public forever).

The entry's result, reproduction record, sealed record and README are read as published, every string
of the JSON files by its field, and refused when one holds an absolute local path: the same patterns
the toolkit cuts before it signs (core/redact.py), so anything the current toolkit signs passes.
An entry signed by an older toolkit that published one is re-issued (scripts/reissue_entries.py)."""

from __future__ import annotations

import json
from pathlib import Path

from reconbench.core.redact import machine_paths
from reconbench.submissions.checks.base import Check, CheckFailed, Context
from reconbench.submissions.layout import README_FILE, REPRODUCTION_FILE, SEALED_FILE, SIZE_CAPS, show
from reconbench.core.envelope import RESULT_FILE

PUBLISHED = (RESULT_FILE, REPRODUCTION_FILE, SEALED_FILE, README_FILE)


# The signature block holds a base64 key and signature (checked by the schema and signature stages), not text.
ENCODED = ("signature",)


def _strings(value, where: str):
    """(field path, string) for every key and string value of parsed JSON."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not where and key in ENCODED:
                continue
            yield where, key
            yield from _strings(item, f"{where}.{key}" if where else key)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{where}[{i}]")
    elif isinstance(value, str):
        yield where, value


def machine_path_problems(entry_dir: Path) -> list[str]:
    """One line per machine path in the entry's signed or published files ([] when there is none)."""
    from reconbench.submissions.team import read_capped

    problems = []
    for name in PUBLISHED:
        path = Path(entry_dir) / name
        if not path.is_file():
            continue
        text = read_capped(path, SIZE_CAPS.get(name, 1_000_000)).decode("utf-8", errors="replace")
        if name.endswith(".json"):
            try:
                found = [(field, p) for field, s in _strings(json.loads(text), "") for p in machine_paths(s)]
            except ValueError:
                continue  # not JSON: the schema and signature checks say so
        else:
            found = [(f"line {n}", p) for n, line in enumerate(text.splitlines(), 1) for p in machine_paths(line)]
        where = f"{show(Path(entry_dir).parent.name)}/{show(Path(entry_dir).name)}/{name}"
        problems += [f"{where}: {field} holds the machine path {show(p)!r}" for field, p in found]
    return problems


def check(ctx: Context) -> list[Check]:
    problems = machine_path_problems(ctx.entry_dir)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise CheckFailed(f"{problems[0]}{more}: signed and published files name no local folder "
                          "(re-issue the entry with the current toolkit, which cuts them)", problems)
    return [Check("paths", "pass", "no machine path in the signed or published files")]
