"""A re-run of an entry already on the board (issue 24, point 2): `submit` refuses the same file before
writing anything and `validate` fails it, both with one line that names the original ("this reproduces
entry X; nothing new to rank") and the two ways on; another seed is a new entry. The same run with
other images (another thread count or device: issue 45, item 6) is accepted as a replicate of the
setting: listed beside the original, held, never ranked on its own."""

from __future__ import annotations

import json
import shutil

import pandas as pd
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
    # issue 45: said plainly that it records nothing for someone who is not a listed reproducer
    assert "maintainers/reproducers.toml" in record and "it writes nothing" in record and "re-running the entry itself" in record
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
    failed = reproduces.finding(parse_any_result(far / RESULT_FILE).payload,
                                [(board.entry, parse_any_result(board.result_json).payload)])
    # the same run with other bytes and another SSIM: a replicate, said plainly to be a failed reproduction
    assert failed.kind == reproduces.REPLICATE and not failed.agrees and "ssim" in failed.how
    assert "failed attempt" in reproduces.replicate_line(failed)


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
    assert f"--from-run submissions/beta/{twin.name} compares every metric" in check.details[0]
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


def _same_run_with(board, tmp_path, name, images, labels):
    """A run folder of alpha's run (same attack, settings and seed) whose reconstructions are `images`,
    signed by beta: what a re-run at another thread count or on another device writes."""
    import numpy as np

    from reconbench.core.io import save_arrays, sha256_file

    run = tmp_path / name
    shutil.copytree(board.result_dir, run)
    save_arrays(run / "reconstructions.safetensors", {"images": np.ascontiguousarray(images, dtype=np.uint8),
                                                      "labels": labels})
    rerun_of(board, tmp_path / f"{name}-signed", board.beta_key,
             lambda p: p["reconstructions"].update(sha256=sha256_file(run / "reconstructions.safetensors")))
    shutil.copyfile(tmp_path / f"{name}-signed" / RESULT_FILE, run / RESULT_FILE)
    return run


def _board_rows(reports):
    from reconbench.leaderboard.frame import entries_frame, ranked, sort_board

    frame = sort_board(entries_frame([r for r in reports if r.entry_id]))
    return frame, ranked(frame)


def test_a_rerun_at_another_thread_count_is_accepted_as_a_replicate(board, tmp_path):
    """Issue 45, item 6: the same attack, settings and seed, images whose bytes differ a little (float
    sums in another order round some pixels to the next grey level) is an honest replicate: submit
    writes it and says so, validate holds it beside the original, and the board ranks the setting once."""
    import numpy as np

    from reconbench.image.results import load_reconstructions

    images, labels = load_reconstructions(board.recon)
    rng = np.random.default_rng(3)
    nudged = np.clip(images.astype(np.int16) + rng.integers(-1, 2, images.shape) * (rng.random(images.shape) < 0.3),
                     0, 255).astype(np.uint8)
    assert not np.array_equal(nudged, images)
    run = _same_run_with(board, tmp_path, "threads-1", nudged, labels)
    out = submit_result(run, "beta", root=board.root, key_path=board.beta_key)  # not refused
    assert out.entry.is_dir() and out.note.startswith(f"a replicate of entry alpha/{board.entry.name}")
    assert "reproduces that entry in all but bytes" in out.note and "never ranked on its own" in out.note
    reports = board.validate().entries
    by_path = {r.path: r for r in reports}
    assert by_path[board.entry].trust == "signed"  # the original is untouched
    replicate = by_path[out.entry]
    assert replicate.trust == "held" and replicate.held_reason.startswith(f"a replicate of entry alpha/{board.entry.name}")
    (dup,) = [c for c in replicate.checks if c.name == "duplicates"]
    assert dup.status == "warn" and "same attack, settings and seed" in dup.message
    frame, ranked = _board_rows(reports)
    # the board lists both rows; only the original ranks (position 1), the replicate has no position
    assert set(frame["entry_id"]) == {board.entry.name, out.entry.name}
    assert list(ranked["entry_id"]) == [board.entry.name]
    row = frame[frame["entry_id"] == out.entry.name].iloc[0]
    assert row["trust"] == "held" and "replicate" in row["held_reason"] and pd.isna(row["position"])


def test_the_same_settings_and_seed_with_other_images_are_a_failed_reproduction_attempt(board, tmp_path):
    """Issue 37 and 45: a "reproduction" compares the reconstructions too. Same run, every metric as claimed
    by the original, but entirely other images (here: the originals inverted) is not called a
    reproduction: it is a replicate, said plainly to be a failed reproduction attempt, and not ranked."""
    from reconbench.image.results import load_reconstructions

    images, labels = load_reconstructions(board.recon)
    run = _same_run_with(board, tmp_path, "diverged", 255 - images, labels)
    out = submit_result(run, "beta", root=board.root, key_path=board.beta_key)  # compared before it writes, not refused
    assert out.note.startswith(f"a replicate of entry alpha/{board.entry.name}")
    assert "0% of the reconstructions are near its" in out.note and "a failed attempt" in out.note
    reports = board.validate().entries
    replicate = {r.path: r for r in reports}[out.entry]
    assert replicate.trust == "held" and "failed attempt" in replicate.held_reason
    assert list(_board_rows(reports)[1]["entry_id"]) == [board.entry.name]


def test_a_replicate_that_copies_another_teams_images_never_ranks(board, tmp_path):
    """Hostile: beta copies alpha's reconstructions with one pixel changed each and claims alpha's very run
    (a reproduction record would lift any other held entry). It is a replicate: held, listed as a
    copy in all but bytes, and never ranked, so nobody ranks another team's reconstructions this way."""
    import numpy as np

    from reconbench.image.results import load_reconstructions

    images, labels = load_reconstructions(board.recon)
    copied = np.ascontiguousarray(images).copy()
    flat = copied.reshape(len(copied), -1)  # one full-range pixel changed per image (test_submissions_hostile)
    rows, idx = np.arange(len(flat)), np.random.default_rng(1).integers(0, flat.shape[1], len(flat))
    flat[rows, idx] = np.where(flat[rows, idx] > 127, 0, 255)
    run = _same_run_with(board, tmp_path, "copied", copied, labels)
    staged = board.root / "beta" / json.loads((run / RESULT_FILE).read_text())["payload"]["entry_id"]
    shutil.copytree(run, staged)  # past submit, by hand
    reports = board.validate().entries
    replicate = {r.path: r for r in reports}[staged]
    assert replicate.trust == "held" and "of the reconstructions are near-duplicates" in replicate.held_reason
    assert "it reproduces that entry in all but bytes" in replicate.held_reason
    assert list(_board_rows(reports)[1]["entry_id"]) == [board.entry.name]
    # even a reproduction record does not make a replicate rank: its setting ranks once, by the original
    from reconbench.submissions.checks.base import Context
    from reconbench.submissions.layout import Unit
    from reconbench.submissions.validate import _trust

    ctx = Context(unit=Unit(path=staged, team="beta", entry_id=staged.name), root=board.root, board=None)
    ctx.replicate_of, ctx.reproduced = board.entry, True
    assert _trust(ctx, replicate.checks) == "held"


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


def _other_team_run(board, tmp_path, name, images, labels, mutate):
    """beta's entry of alpha's attack under `mutate`d settings, with `images` as its reconstructions."""
    import numpy as np

    from reconbench.core.io import save_arrays, sha256_file

    run = tmp_path / name
    shutil.copytree(board.result_dir, run)
    save_arrays(run / "reconstructions.safetensors", {"images": np.ascontiguousarray(images), "labels": labels})

    def edit(p):
        p["reconstructions"]["sha256"] = sha256_file(run / "reconstructions.safetensors")
        mutate(p)
    rerun_of(board, tmp_path / f"{name}-signed", board.beta_key, edit)
    shutil.copyfile(tmp_path / f"{name}-signed" / RESULT_FILE, run / RESULT_FILE)
    staged = board.root / "beta" / json.loads((run / RESULT_FILE).read_text())["payload"]["entry_id"]
    shutil.copytree(run, staged)
    return staged


def _one_pixel_each(images, seed=1):
    import numpy as np

    out = np.ascontiguousarray(images).copy()
    flat = out.reshape(len(out), -1)
    rows, idx = np.arange(len(flat)), np.random.default_rng(seed).integers(0, flat.shape[1], len(flat))
    flat[rows, idx] = np.where(flat[rows, idx] > 127, 0, 255)
    return out


def test_a_registered_attack_that_converges_under_other_options_is_held_not_refused(board, tmp_path):
    """Issue 45, item 6: MI-Face converges, so another iteration count can give near-identical images to an
    earlier team's entry. The toolkit's own code re-run tells convergence from a copy, so the entry is held
    until reproduced (listed, not ranked), not failed as a copy."""
    from reconbench.image.results import load_reconstructions
    from submission_helpers import recorded

    images, labels = load_reconstructions(board.recon)

    def fifty(p):
        p["attack"]["config"]["iterations"] = 50
        recorded(p, {"iterations": 50})
    staged = _other_team_run(board, tmp_path, "fifty", _one_pixel_each(images), labels, fifty)
    reports = board.validate().entries
    mine = {r.path: r for r in reports}[staged]
    (dup,) = [c for c in mine.checks if c.name == "duplicates"]
    assert mine.trust == "held" and dup.status == "warn", [c.to_dict() for c in mine.checks]
    assert f"near-duplicates of those of alpha/{board.entry.name}" in mine.held_reason
    assert "same attack (mi-face) under other options" in mine.held_reason and "until reproduced" in mine.held_reason
    assert list(_board_rows(reports)[1]["entry_id"]) == [board.entry.name]


def test_a_near_copy_under_another_seed_alone_still_fails(board, tmp_path):
    """Hostile: the same copy claiming only another seed is no convergence of other options (MI-Face from
    zeros gives the same bytes for every seed, so an honest run would be the same file): it fails."""
    from reconbench.image.results import load_reconstructions
    from submission_helpers import with_seed

    images, labels = load_reconstructions(board.recon)
    staged = _other_team_run(board, tmp_path, "seed9", _one_pixel_each(images), labels, lambda p: with_seed(p, 9))
    check = failure({r.path: r for r in board.validate().entries}[staged])
    assert check.name == "duplicates" and f"near-duplicates of those of alpha/{board.entry.name}" in check.message


def test_recording_a_reproduction_says_plainly_when_it_writes_nothing(board, tmp_path):
    """Issue 45, item 7: `reproduce X --from-run RUN`, as the refusal offers it, writes a record only for a
    reproducer listed in maintainers/reproducers.toml; anyone else is told that nothing was recorded and
    what to do instead, not left to find no file."""
    run = rerun_of(board, tmp_path / "my-run", board.beta_key)
    res = runner.invoke(app, ["reproduce", str(board.entry), "--from-run", str(run), "--quiet"])
    assert res.exit_code == 0, res.output
    flat = " ".join(res.output.split())
    assert "no record written: only a reproducer listed in maintainers/reproducers.toml signs one" in flat
    assert "This command records nothing for you" in flat and "pull request or an issue" in flat
    assert not (board.entry / "reproduction.json").exists()
    # a key that is not listed: refused before anything runs, and said to have written nothing
    res = runner.invoke(app, ["reproduce", str(board.entry), "--from-run", str(run), "--key", str(board.beta_key)])
    assert res.exit_code == 1 and "not a reproducer key" in res.output and "nothing was written" in " ".join(res.output.split())
    assert not (board.entry / "reproduction.json").exists()
