"""`recon-submit check RUN`: every check CI runs that needs no board, on a run folder, before anything
is submitted (issue 37): schema, signature, registry, reconstructions, re-scoring, copies, near-copies,
and the shipped attack source.

It runs the validator's own stages (validate.run_checks), not a copy of them: the run folder is copied
into a throwaway submissions/ folder as the one entry of a team whose team.toml lists the key that
signed it. Left out, because they need the board: the layout of a team folder, the team's identity
and keys, duplicates of other entries, and the held rule that compares with the track's reproduced
entries. `validate` runs those after `submit`.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from reconbench.core.envelope import RESULT_FILE, ResultError, read_result_raw
from reconbench.core.signing import key_id
from reconbench.submissions.board import Board
from reconbench.submissions.checks.base import Check
from reconbench.submissions.layout import ENTRY_ID, SIZE_CAPS, Unit, lexical
from reconbench.submissions.submit import require_run
from reconbench.submissions.team import new_team, write_team
from reconbench.submissions.validate import EntryReport, run_checks

STAGED = "run"  # the staged folder's name when result.json names no entry id (the schema check then says why)
NO_BOARD = ("schema", "signature", "registry", "reconstructions", "rescore", "copies", "nearcopies", "reproduction")
TEAM = "this-run"  # the throwaway team of the staged copy


def is_run_outside(path: Path, root: Path) -> bool:
    """A folder written by evaluate, given to `validate` though it is not under the submissions root."""
    return (Path(path) / RESULT_FILE).is_file() and not lexical(path).is_relative_to(lexical(root))


def check_run(run_dir: Path, *, rescore: bool = True, device: str = "cpu", weights_dir: Path | None = None) -> EntryReport:
    """The no-board checks of a run folder, with messages that name the run folder's own files."""
    run_dir = Path(run_dir)
    result_file = require_run(run_dir)
    try:  # just what staging needs: the schema check parses the file under its modality's schema
        raw = read_result_raw(result_file, max_bytes=SIZE_CAPS[RESULT_FILE])
    except ResultError as exc:
        return EntryReport(team="", entry_id="", path=run_dir, trust="failed", checks=[Check("schema", "fail", str(exc))])
    payload = raw.get("payload") if isinstance(raw, dict) else None
    signature = raw.get("signature") if isinstance(raw, dict) else None
    entry_id = payload.get("entry_id") if isinstance(payload, dict) else None
    public = signature.get("public_key") if isinstance(signature, dict) else None
    entry_id = entry_id if isinstance(entry_id, str) and ENTRY_ID.fullmatch(entry_id) else STAGED
    with tempfile.TemporaryDirectory(prefix="reconbench-check-") as tmp:
        root = Path(tmp) / "submissions"
        entry = root / TEAM / entry_id
        shutil.copytree(run_dir, entry, symlinks=True)  # links stay links: the checks refuse them as validate does
        today = datetime.now(timezone.utc).date()
        if isinstance(public, str):
            try:
                write_team(root / TEAM, new_team(TEAM, "this run", [], None, public, today))
            except ValueError:
                pass  # not a key: the signature check says so
        report = run_checks(Unit(path=entry, team=TEAM, entry_id=entry_id), root, Board(root), rescore=rescore,
                            device=device, weights_dir=weights_dir, stages=NO_BOARD)
    staged, shown = f"submissions/{TEAM}/{entry_id}", str(run_dir).rstrip("/")
    checks = []
    for c in report.checks:
        message = c.message
        if c.name == "signature" and c.status == "pass":  # the staged team.toml is ours, not the user's
            message = f"valid ed25519 signature by key {key_id(public)} (the board also checks that your team lists it)"
        checks.append(Check(c.name, c.status, message.replace(staged, shown), tuple(d.replace(staged, shown) for d in c.details)))
    return replace(report, team="", path=run_dir, checks=checks)


def summary(report: EntryReport, run_dir: Path) -> str:
    """The one line that ends `check`."""
    if report.failed:
        first = next(c for c in report.checks if c.status == "fail")
        return f"FAILED: {run_dir}: {first.name}: {first.message}"
    counted = len({c.name.split(".")[0] for c in report.checks if c.status == "pass"})
    return (f"OK: {run_dir} passes the {counted} checks that need no board (trust when submitted: {report.trust}); "
            "validate adds the board's: your team's key, duplicates, the held rule")
