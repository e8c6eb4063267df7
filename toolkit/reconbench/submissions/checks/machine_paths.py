"""Check: no machine path in what an entry signs or publishes (issue 36: a home, checkout, cache or
temporary folder says who ran a command and where; a signed note is public forever).

The entry's result, reproduction record, sealed record and README are read as published, every string
of the JSON files by its field, and refused when one holds an absolute local path: the same patterns
the toolkit cuts before it signs (core/redact.py), so anything the current toolkit signs passes. The
README, the contributor's own prose, is refused for a home, temporary or per-user folder only: a
system path there (/etc/passwd, /usr/share/datasets/...) names nobody's machine.
An entry signed by an older toolkit that published one is re-issued (scripts/reissue_entries.py).
Until it is, the maintainers may list its files' exact bytes (sha256) in maintainers/PENDING_FILE:
those files alone pass with a warning that says so; any other byte, or any other file, fails. The list
only shrinks (tests/test_no_machine_paths.py: every line names a committed file with those bytes)."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path

from reconbench.core.redact import machine_paths, private_paths
from reconbench.submissions.checks.base import Check, CheckFailed, Context
from reconbench.submissions.layout import README_FILE, REPRODUCTION_FILE, SEALED_FILE, SIZE_CAPS, show
from reconbench.core.envelope import RESULT_FILE

PUBLISHED = (RESULT_FILE, REPRODUCTION_FILE, SEALED_FILE, README_FILE)
PENDING_FILE = "machine-paths-pending.toml"
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


def _file_problems(raw: bytes, name: str, where: str) -> list[str]:
    text = raw.decode("utf-8", errors="replace")
    if name.endswith(".json"):
        try:
            found = [(field, p) for field, s in _strings(json.loads(text), "") for p in machine_paths(s)]
        except ValueError:
            return []  # not JSON: the schema and signature checks say so
    else:
        # the README is the contributor's prose: only a home, temporary or per-user folder is someone's
        found = [(f"line {n}", p) for n, line in enumerate(text.splitlines(), 1) for p in private_paths(line)]
    return [f"{where}: {field} holds the machine path {show(p)!r}" for field, p in found]


def _published(entry_dir: Path):
    """(team/entry/file, bytes) of each signed or published file the entry has."""
    from reconbench.submissions.team import read_capped

    entry_dir = Path(entry_dir)
    for name in PUBLISHED:
        path = entry_dir / name
        if path.is_file():
            yield (f"{show(entry_dir.parent.name)}/{show(entry_dir.name)}/{name}",
                   read_capped(path, SIZE_CAPS.get(name, 1_000_000)))


def machine_path_problems(entry_dir: Path) -> list[str]:
    """One line per machine path in the entry's signed or published files ([] when there is none)."""
    return [line for where, raw in _published(entry_dir) for line in _file_problems(raw, Path(where).name, where)]


def pending_path() -> Path:
    """Beside the reproducers file (maintainers/, CODEOWNERS: maintainers; CI passes the base branch's)."""
    from reconbench.reproduction.record import default_reproducers_path

    return default_reproducers_path().parent / PENDING_FILE


def pending(path: Path | None = None) -> dict[str, str]:
    """team/entry/file -> sha256 of the bytes listed as signed before the redaction ({} without the file)."""
    path = Path(path) if path else pending_path()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CheckFailed(f"{path}: cannot be read as TOML ({exc})") from None
    return {item["file"]: item["sha256"] for item in data.get("file", [])
            if isinstance(item, dict) and isinstance(item.get("file"), str) and isinstance(item.get("sha256"), str)}


def check(ctx: Context) -> list[Check]:
    listed = pending()
    problems, waiting = [], []
    for where, raw in _published(ctx.entry_dir):
        found = _file_problems(raw, Path(where).name, where)
        if found and listed.get(where) == hashlib.sha256(raw).hexdigest():
            waiting += found  # the very bytes signed before the redaction, listed for re-issue
        else:
            problems += found
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise CheckFailed(f"{problems[0]}{more}: signed and published files name no local folder "
                          "(re-issue the entry with the current toolkit, which cuts them)", problems)
    if waiting:
        return [Check("paths", "warn", f"{waiting[0].split(':')[0]}: signed before the toolkit cut machine paths "
                                       f"({len(waiting)} found); listed for re-issue in maintainers/{PENDING_FILE}",
                      tuple(waiting))]
    return [Check("paths", "pass", "no machine path in the signed or published files")]
