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
from submission_helpers import failure, fresh_board, with_seed

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
    # MI-Face starts from zeros: another seed gives the same bytes, so what changes the output is offered
    assert "does not depend on the seed" in again and "init=uniform" in again and "--seed" not in again
    assert sorted(p.relative_to(board.root) for p in board.root.rglob("*")) == before  # nothing written


def test_submit_on_the_command_line_prints_the_line_and_the_options(board, tmp_path, monkeypatch):
    run = rerun_of(board, tmp_path / "my-run", board.beta_key)
    monkeypatch.chdir(board.root.parent)
    result = runner.invoke(app, ["submit", str(run), "--team", "beta", "--key", str(board.beta_key)])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines[0].startswith("error: this reproduces entry alpha/") and lines[0].endswith("nothing new to rank")
    assert lines[1].startswith("  - record it as an independent reproduction of alpha/")
    assert lines[2].startswith("  - or change what the output depends on: mi-face's output does not depend on the seed")


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
    run = rerun_of(board, tmp_path / "seed1", board.beta_key, lambda p: with_seed(p, 1))
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
    assert "does not depend on the seed" in check.details[1]
    result = runner.invoke(app, ["validate", str(twin), "--root", str(board.root), "--no-rescore"])
    assert result.exit_code == 1 and "nothing new to rank" in result.output
    assert "independent reproduction" in result.output


def test_a_seeded_configuration_is_offered_another_seed(board, tmp_path):
    """Issue 37: only where the seed changes the output is another seed the way to a new point."""
    run = rerun_of(board, tmp_path / "uniform", board.beta_key, lambda p: p["attack"]["config"].update(init="uniform"))
    payload = parse_any_result(run / RESULT_FILE).payload
    assert reproduces.seed_ignored(payload) is None
    assert "another seed or budget" in reproduces.new_point(payload) and "--seed 1" in reproduces.new_point(payload)
    zeros = parse_any_result(board.result_json).payload
    assert "init=zeros" in reproduces.seed_ignored(zeros)


def test_the_same_settings_and_seed_with_other_images_do_not_reproduce_it(board, tmp_path):
    """Issue 37: a "reproduction" compares the reconstructions too. Same run, every metric as claimed by
    the original, but entirely other images (here: the originals inverted) is a diverging re-run:
    said so, and not called a reproduction."""
    import numpy as np

    from reconbench.core.io import save_arrays, sha256_file
    from reconbench.image.results import load_reconstructions

    images, labels = load_reconstructions(board.recon)
    run = tmp_path / "diverged"
    shutil.copytree(board.result_dir, run)
    save_arrays(run / "reconstructions.safetensors", {"images": (255 - images).astype(np.uint8), "labels": labels})
    rerun_of(board, tmp_path / "signed", board.beta_key,
             lambda p: p["reconstructions"].update(sha256=sha256_file(run / "reconstructions.safetensors")))
    shutil.copyfile(tmp_path / "signed" / RESULT_FILE, run / RESULT_FILE)
    twin = board.root / "beta" / json.loads((run / RESULT_FILE).read_text())["payload"]["entry_id"]
    with pytest.raises(SubmitError) as err:  # submit compares the images too, before it writes
        submit_result(run, "beta", root=board.root, key_path=board.beta_key)
    assert str(err.value).startswith(f"this re-runs entry alpha/{board.entry.name} without reproducing it")
    assert "a diverging re-run" in str(err.value) and "0% of the reconstructions are near its" in str(err.value)
    shutil.copytree(run, twin)
    check = failure({r.path: r for r in board.validate().entries}[twin])
    assert check.name == "duplicates" and check.message.startswith(f"this re-runs entry alpha/{board.entry.name} without")
    assert "reproduction attempt" in check.details[0]


def test_another_seed_of_a_seed_free_attack_says_what_changes_the_output(board, tmp_path):
    """Issue 37: MI-Face from zeros gives the same bytes for any seed (not the same run: another seed).
    validate names the file already on the board and says that a budget or an option, not a seed,
    changes the output."""
    run = rerun_of(board, tmp_path / "seed4242", board.beta_key, lambda p: with_seed(p, 4242))
    twin = board.root / "beta" / json.loads((run / RESULT_FILE).read_text())["payload"]["entry_id"]
    shutil.copytree(run, twin)
    check = failure({r.path: r for r in board.validate().entries}[twin])
    assert check.name == "duplicates" and check.message.startswith("the same reconstruction file")
    assert f"alpha/{board.entry.name}" in check.message
    assert "does not depend on the seed there" in check.message and "another seed does not" in check.message
