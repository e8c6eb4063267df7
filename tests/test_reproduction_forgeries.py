"""Forged reproductions (issue 36, item 6; issue 43, item 7), without re-running an attack: a run folder
handed to `reproduce --from-run` that claims the sandbox (never signed now, even with the entry's own bytes),
a record of such a handed-in run signed by a listed reproducer (an earlier toolkit's: it lifts nothing), and
a record whose reconstructions hash was swapped and signed again by a listed reproducer. Each is refused or lifts nothing; the genuine case beside it is the
control. (tests/test_reproduce.py re-runs the attack itself: the slow set.)"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from safetensors.numpy import save_file

from reconbench.core.signing import load_private_key
from reconbench.image.results import load_reconstructions
from reconbench.reproduction.record import RECORD_FILE, RecordError, write_record
from reconbench.reproduction.sign import reproduce_entry, sign_record
from submission_helpers import fresh_board, listed_reproducer
from test_submissions_hostile import flip_one_pixel


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    with listed_reproducer(tmp_path_factory.mktemp("reproducers")) as pair:
        yield pair


@pytest.fixture
def board(tmp_path_factory, tmp_path, keys):
    b = fresh_board(tmp_path_factory, tmp_path)
    b.reproducer_key = keys[0]
    return b


def run_folder(board, tmp_path, *, images=None):
    """A run folder as a run job uploads it (result.json and reconstructions), built from the entry's own
    files, whose result.json claims the run was sandboxed by bubblewrap; `images`: other reconstructions."""
    run = tmp_path / "run"
    shutil.copytree(board.entry, run)
    data = json.loads((run / "result.json").read_text())
    data["payload"]["provenance"]["sandbox"] = "bubblewrap 0.11.0"
    (run / "result.json").write_text(json.dumps(data))
    if images is not None:
        _, labels = load_reconstructions(run / "reconstructions.safetensors")
        save_file({"images": np.ascontiguousarray(images), "labels": labels}, str(run / "reconstructions.safetensors"))
    return run


def test_a_run_folder_that_claims_bubblewrap_is_never_signed_even_with_the_entry_s_own_bytes(board, tmp_path):
    """--from-run: the folder's word on the sandbox is not evidence, and neither are its bytes: the entry's
    own file copied into a folder that claims bubblewrap read as a perfect re-run and was signed (issue 43).
    `reproduce` signs only a re-run it made itself; a handed-in folder is compared, unsigned."""
    images, _ = load_reconstructions(board.recon)
    forged = run_folder(board, tmp_path, images=flip_one_pixel(images))
    record = tmp_path / "record.json"
    unsigned = reproduce_entry(board.entry, from_run=forged).record
    assert unsigned.reported.sandbox == "bubblewrap 0.11.0"  # what it claims, filed as the run's report
    assert unsigned.run_seen == "handed-in"
    assert unsigned.verdict == "not-reproduced" and any("not the entry's file" in p for p in unsigned.problems)
    shutil.rmtree(forged)
    own = run_folder(board, tmp_path)  # the entry's own bytes: compared as reproduced, never signed
    assert reproduce_entry(board.entry, from_run=own).record.verdict == "reproduced"
    for folder in (own, board.entry):  # the entry folder itself is a "run folder" too
        with pytest.raises(RecordError, match="signs only a re-run it made itself"):
            reproduce_entry(board.entry, from_run=folder, key_path=board.reproducer_key, record_path=record)
        assert not record.exists()


def test_a_listed_reproducer_s_record_of_a_handed_in_run_lifts_nothing(board, tmp_path):
    """A record of a handed-in run (run_seen "handed-in", as `--from-run --key` of an earlier toolkit signed
    one), for the entry's own bytes and every metric as claimed, signed by a listed reproducer: validation
    lifts nothing with it and says why; the same record for a re-run the signer made lifts the entry."""
    handed = reproduce_entry(board.entry, from_run=run_folder(board, tmp_path)).record
    assert handed.run_seen == "handed-in" and handed.verdict == "reproduced"
    key = load_private_key(board.reproducer_key)
    write_record(board.entry / RECORD_FILE, sign_record(handed, key))
    report = board.only()
    check = next(c for c in report.checks if c.name == "reproduction")
    assert report.trust != "reproduced" and check.status == "warn"
    assert "handed to the signer, not a re-run it made itself" in check.message
    made = handed.model_copy(update={"run_seen": "same-invocation"})
    write_record(board.entry / RECORD_FILE, sign_record(made, key))
    assert board.only().trust == "reproduced"  # the control


def test_a_record_whose_reconstructions_hash_was_swapped_and_re_signed_lifts_nothing(board, tmp_path):
    """Validate compares the record's reconstructions hash with the entry's file: a listed reproducer's
    record for other bytes, every metric within tolerance, leaves the entry where re-scoring put it."""
    # a record that does not say how its signer came by the run (schema version 1 did not): its bytes must
    # be the entry's file
    genuine = reproduce_entry(board.entry, from_run=run_folder(board, tmp_path)).record.model_copy(
        update={"run_seen": None})
    key = load_private_key(board.reproducer_key)
    write_record(board.entry / RECORD_FILE, sign_record(genuine, key))
    assert board.only().trust == "reproduced"  # the control
    swapped = genuine.model_copy(update={"reconstructions_sha256": "ab" * 32})
    write_record(board.entry / RECORD_FILE, sign_record(swapped, key))
    report = board.only()
    check = next(c for c in report.checks if c.name == "reproduction")
    assert report.trust == "signed" and check.status == "warn"
    assert "not the entry's file" in check.message and "abababababab" in check.message
    # A re-run the signer made itself, in its own sandbox, may differ in its bytes (another machine)
    # and still reproduce within the tolerances: the record says so, under the same signature.
    elsewhere = genuine.model_copy(update={"reconstructions_sha256": "ab" * 32, "run_seen": "same-invocation"})
    write_record(board.entry / RECORD_FILE, sign_record(elsewhere, key))
    assert board.only().trust == "reproduced"
