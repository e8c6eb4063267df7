"""A re-run of an entry already on the board (issue 24, point 2): `submit` refuses it before writing
anything and `validate` fails it, both with one line that names the original ("this reproduces
entry X; nothing new to rank") and the two ways on; another seed is a new entry."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from reconbench.cli import app
from reconbench.core.envelope import RESULT_FILE
from reconbench.core.signing import load_private_key, sign_payload
from reconbench.submissions import reproduces
from reconbench.submissions.submit import SubmitError, submit_result
from reconbench.text.results import parse_any_result
from submission_helpers import failure, fresh_board

runner = CliRunner()


@pytest.fixture
def board(tmp_path_factory, tmp_path):
    return fresh_board(tmp_path_factory, tmp_path)


def rerun_of(board, dst, key, mutate=lambda p: None):
    """The same run as alpha's entry made again (another started time, so another entry_id), signed by `key`."""
    shutil.copytree(board.result_dir, dst)
    data = json.loads((dst / RESULT_FILE).read_text())
    data["payload"]["entry_id"] = data["payload"]["entry_id"][:-8] + "00000000"
    mutate(data["payload"])
    data["signature"] = sign_payload(data["payload"], load_private_key(key))
    (dst / RESULT_FILE).write_text(json.dumps(data))
    return dst


def test_submit_says_a_rerun_reproduces_the_entry_and_writes_nothing(board, tmp_path):
    run = rerun_of(board, tmp_path / "my-run", board.beta_key)
    before = sorted(p.relative_to(board.root) for p in board.root.rglob("*"))
    with pytest.raises(SubmitError) as err:
        submit_result(run, "beta", root=board.root, key_path=board.beta_key)
    message = str(err.value)
    assert message.startswith(f"this reproduces entry alpha/{board.entry.name}")
    assert message.endswith("nothing new to rank") and "\n" not in message
    assert "the same reconstruction file" in message
    (record, again) = err.value.options
    assert f"recon-submit reproduce submissions/alpha/{board.entry.name} --from-run {run}" in record
    assert "--seed 1" in again  # the run's own command with the next seed
    assert sorted(p.relative_to(board.root) for p in board.root.rglob("*")) == before  # nothing written


def test_submit_on_the_command_line_prints_the_line_and_the_options(board, tmp_path, monkeypatch):
    run = rerun_of(board, tmp_path / "my-run", board.beta_key)
    monkeypatch.chdir(board.root.parent)
    result = runner.invoke(app, ["submit", str(run), "--team", "beta", "--key", str(board.beta_key)])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines[0].startswith("error: this reproduces entry alpha/") and lines[0].endswith("nothing new to rank")
    assert lines[1].startswith("  - record it as an independent reproduction of alpha/")
    assert lines[2].startswith("  - or run again with another seed or budget")


def test_metrics_within_tolerance_are_a_reproduction_too(board, tmp_path):
    """Another machine: other bytes, every metric within the reproduction tolerances."""
    def nudge(p):
        p["reconstructions"]["sha256"] = "0" * 64  # stands for other bytes (only the payload is compared)
        p["metrics"]["ssim"]["value"] += 0.01  # tolerance 0.02
    run = rerun_of(board, tmp_path / "elsewhere", board.beta_key, nudge)
    found = reproduces.finding(parse_any_result(run / RESULT_FILE).payload,
                               [(board.entry, parse_any_result(board.result_json).payload)])
    assert found is not None and found.original == board.entry and "tolerances" in found.how

    def beyond(p):
        nudge(p)
        p["metrics"]["ssim"]["value"] += 0.05
    far = rerun_of(board, tmp_path / "far", board.beta_key, beyond)
    assert reproduces.finding(parse_any_result(far / RESULT_FILE).payload,
                              [(board.entry, parse_any_result(board.result_json).payload)]) is None


def test_another_seed_is_not_a_reproduction(board, tmp_path):
    run = rerun_of(board, tmp_path / "seed1", board.beta_key, lambda p: p["provenance"].update(seed=1))
    other = parse_any_result(run / RESULT_FILE).payload
    assert reproduces.finding(other, [(board.entry, parse_any_result(board.result_json).payload)]) is None


def test_validate_names_the_original_and_the_ways_on(board, tmp_path):
    run = rerun_of(board, tmp_path / "my-run", board.beta_key)
    twin = board.root / "beta" / json.loads((run / RESULT_FILE).read_text())["payload"]["entry_id"]
    shutil.copytree(run, twin)  # submitted by hand, past `submit`
    reports = {r.path: r for r in board.validate().entries if r.entry_id}
    assert reports[board.entry].trust == "signed"  # the original is untouched
    check = failure(reports[twin])
    assert check.name == "duplicates"
    assert check.message.startswith(f"this reproduces entry alpha/{board.entry.name}, already on the board, which came first")
    assert check.message.endswith("nothing new to rank")
    assert check.details[0].endswith(f"--from-run submissions/beta/{twin.name}")
    assert "another seed or budget" in check.details[1]
    result = runner.invoke(app, ["validate", str(twin), "--root", str(board.root), "--no-rescore"])
    assert result.exit_code == 1 and "nothing new to rank" in result.output
    assert "independent reproduction" in result.output
