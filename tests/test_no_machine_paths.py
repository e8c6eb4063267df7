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


def test_validate_refuses_a_signed_machine_path_naming_file_and_field(tmp_path_factory, tmp_path):
    """A forged entry, signed by its own team: a metric note that names a home folder (as results signed
    before the redaction did) fails the paths check with one line naming the file and the field."""
    from submission_helpers import failure

    board = fresh_board(tmp_path_factory, tmp_path)
    assert board.only().trust != "failed"  # the honest entry passes the same check

    def leak(payload):
        payload["metrics"]["fid"]["note"] = "FID: not computed (pt_inception.pth is not in /home/alice/.cache/reconbench/weights)"
    board.resign(leak)
    fail = failure(board.only())
    assert fail.name == "paths"
    assert f"alpha/{board.entry.name}/result.json: payload.metrics.fid.note holds the machine path " \
           "'/home/alice/.cache/reconbench/weights'" in fail.message and "\n" not in fail.message


def test_the_rule_reads_every_published_file_and_each_platforms_paths(tmp_path):
    from reconbench.submissions.checks.machine_paths import machine_path_problems

    entry = tmp_path / "team" / "entry"
    entry.mkdir(parents=True)
    (entry / "result.json").write_text(json.dumps({
        "payload": {"provenance": {"command": "recon-submit evaluate --weights-dir C:\\Users\\bob\\w"},
                    "attack": {"paper": "https://example.org/a/b.pdf", "scenario": "static/white-box/none"}},
        "signature": {"public_key": "Drs6OYBD7EaYD1Q3PenXcaEi41e6NGbT+/co2/4YSkA=", "value": "/gF7Wd/ILR+/x=="}}))
    (entry / "reproduction.json").write_text(json.dumps({"record": {"problems": ["ran in /tmp/tmpab12/run"]}}))
    (entry / "README.md").write_text("# an entry\n\nSee https://example.org/x/y.\nWeights: /Users/carol/w/alexnet.pth\n"
                                     "Data: /usr/share/datasets/fashion-mnist, not /etc/passwd\n")  # system paths: nobody's
    assert machine_path_problems(entry) == [
        "team/entry/result.json: payload.provenance.command holds the machine path 'C:\\\\Users\\\\bob\\\\w'",
        "team/entry/reproduction.json: record.problems[0] holds the machine path '/tmp/tmpab12/run'",
        "team/entry/README.md: line 4 holds the machine path '/Users/carol/w/alexnet.pth'",
    ]
    assert no_machine_paths("C:\\Users\\bob\\w and /root/.cache/x") == "…/w and …/x"


def test_bytes_listed_as_signed_before_the_redaction_warn_and_any_other_byte_fails(tmp_path_factory, tmp_path, monkeypatch):
    import hashlib

    from reconbench.reproduction.record import REPRODUCERS_ENV
    from reconbench.submissions.checks.machine_paths import PENDING_FILE
    from submission_helpers import failure, status

    board = fresh_board(tmp_path_factory, tmp_path)
    board.resign(lambda p: p["metrics"]["fid"].update(note="FID: not computed (no weights in /root/.cache/w)"))
    where = f"alpha/{board.entry.name}/result.json"
    maintainers = tmp_path / "maintainers"
    maintainers.mkdir()
    monkeypatch.setenv(REPRODUCERS_ENV, str(maintainers / "reproducers.toml"))
    (maintainers / PENDING_FILE).write_text(
        f'[[file]]\nfile = "{where}"\nsha256 = "{hashlib.sha256(board.result_json.read_bytes()).hexdigest()}"\n')
    report = board.only()
    assert status(report, "paths") == "warn" and report.trust != "failed"
    assert f"{where}: signed before the toolkit cut machine paths (1 found)" in \
        next(c.message for c in report.checks if c.name == "paths")
    board.resign(lambda p: p["metrics"]["fid"].update(note="FID: not computed (no weights in /root/.cache/v)"))
    assert failure(board.only()).name == "paths"  # other bytes: the list does not cover them


def test_the_committed_entries_name_no_machine_path_but_the_listed_bytes():
    """Every committed entry passes the rule, or its files are listed by their exact bytes; and every
    listed line still names a committed file with those bytes (the list only shrinks)."""
    import hashlib

    from reconbench.submissions.checks.machine_paths import _published, machine_path_problems, pending

    listed = pending(REPO / "maintainers" / "machine-paths-pending.toml")
    found = {}
    for entry in sorted((REPO / "submissions").glob("*/*/")):
        for where, raw in _published(entry):
            found[where] = hashlib.sha256(raw).hexdigest()
        unlisted = [line for line in machine_path_problems(entry) if listed.get(line.split(":")[0]) != found[line.split(":")[0]]]
        assert unlisted == [], unlisted
    stale = {where: sha for where, sha in listed.items() if found.get(where) != sha}
    assert stale == {}, "listed files no longer committed with those bytes: remove their lines"


def test_a_result_made_from_python_records_its_command_without_machine_paths(monkeypatch):
    """evaluate() called from a script records the script's command line (no `command` given): its paths
    are cut there too, or the entry would fail the paths check it was made to pass."""
    import sys

    from reconbench.core.redact import machine_paths, this_command

    monkeypatch.setattr(sys, "argv", ["/home/alice/experiments/run.py", "--out", "/tmp/x/runs", "--seed", "3"])
    assert this_command() == "…/run.py --out …/runs --seed 3" and not machine_paths(this_command())
