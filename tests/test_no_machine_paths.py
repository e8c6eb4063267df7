"""No machine path in anything signed or published (issue 36, item 5): a result signed on this machine
(its metric notes say which backbone weights were missing, not where this machine keeps them), and a
reproduction record, name no home folder, checkout, cache or temporary folder."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from reconbench.core.redact import no_machine_paths
from reconbench.image.metrics.weights import missing_note, pinned
from reconbench.reproduction.sign import reproduce_entry
from submission_helpers import base, fresh_board

REPO = Path(__file__).resolve().parents[1]


def machine_paths() -> list[str]:
    """The folders of this machine a signed file could leak: home, checkout, caches, the temporary folder."""
    from reconbench.core.cache import cache_root

    found = {str(Path.home()), str(REPO), str(cache_root()), tempfile.gettempdir(), os.getcwd()}
    return sorted(p for p in found if p not in ("", "/"))


def leaks(text: str) -> list[str]:
    return [p for p in machine_paths() if p in text]


def test_the_weights_note_names_no_folder():
    note = missing_note("FID", pinned("inception"))
    assert leaks(note) == [] and "recon-submit weights status" in note and "recon-submit weights fetch" in note
    failed = missing_note("FID", pinned("inception"), reason=f"cannot write {Path.home()}/.cache/reconbench/weights/x.part")
    assert leaks(failed) == [] and "…/x.part" in failed


def test_a_signed_result_and_a_reproduction_record_name_no_machine_path(tmp_path_factory, tmp_path):
    b = base(tmp_path_factory)  # the session's MI-Face result, signed here (backbone weights absent: notes)
    signed = (b.result_dir / "result.json").read_text()
    assert "weights unavailable" in signed  # the notes are there to leak, and do not
    assert leaks(signed) == []
    board = fresh_board(tmp_path_factory, tmp_path)
    run = tmp_path / "run"
    shutil.copytree(board.entry, run)
    record = reproduce_entry(board.entry, from_run=run).record
    assert leaks(json.dumps(record.model_dump(mode="json"))) == []


def test_the_redaction_keeps_urls_and_cuts_paths():
    assert no_machine_paths("see https://example.org/a/b and /home/someone/x/y.pth") == \
        "see https://example.org/a/b and …/y.pth"
