"""Discoverable (issue 15 item 6) and private (item 8): help texts with examples, the tracks table,
hints that point to the right command, keys, and what gets recorded or published."""

from __future__ import annotations

import subprocess

import pytest
import typer

from cli_process import one_error_line, recon
from reconbench.core.console import invoked_as  # suggestions name the command as it runs in this shell (issue 45)


def _commands(group, prefix=()):
    """Every command and group under `group` (typer vendors its own click: no isinstance)."""
    for name, cmd in group.commands.items():
        yield (*prefix, name), cmd
        if hasattr(cmd, "commands"):
            yield from _commands(cmd, (*prefix, name))


def test_every_command_has_help_with_an_example():
    from reconbench.cli import app

    missing = [" ".join(path) for path, cmd in _commands(typer.main.get_command(app)) if "Example:" not in (cmd.help or "")]
    assert not missing, f"commands without an example in their help: {missing}"


def test_evaluate_options_are_explained():
    from reconbench.cli import app

    evaluate = typer.main.get_command(app).commands["evaluate"]
    helps = {p.name: p.help or "" for p in evaluate.params}
    assert "first of the attack's scenarios that the track offers" in helps["scenario"]
    assert "seed" in helps["seed"] and "recorded" in helps["seed"]
    assert "recon-submit attacks NAME" in helps["set_"]


def test_tracks_lists_runnable_tracks_with_legend_and_counts():
    from reconbench.core.tracks import all_tracks

    tracks = all_tracks()
    runnable = [t.id for t in tracks if t.status != "unpublished"]
    planned = [t.id for t in tracks if t.status == "unpublished"]
    out = recon("tracks").stdout
    assert f"tracks ({len(runnable)} of {len(tracks)} shown)" in out
    # a sealed twin's draws are one row under the twin's id, the one --track takes (issue 45)
    twins = {t.id: t.seal.group for t in tracks if getattr(t, "seal", None) is not None}
    assert all(twins.get(i, i) in out for i in runnable) and not any(f"│ {i} " in out for i in planned)
    assert twins and not any(f"│ {i} " in out for i in twins)
    assert f"unpublished ({len(planned)}): planned" in out and f"{len(planned)} planned tracks not shown: {invoked_as()} tracks --all" in out
    everything = recon("tracks", "--all").stdout
    assert all(i in everything for i in planned)  # full ids: never truncated with an ellipsis
    assert "…" not in everything and "not runnable yet" in everything


def test_unknown_status_is_an_error_and_unknown_track_suggests_the_closest():
    assert one_error_line(recon("tracks", "--status", "bogus")) == "--status bogus: unknown status (one of embedded, published, unpublished)"
    from reconbench.core.tracks import TrackError, get_track

    with pytest.raises(TrackError) as err:
        get_track("digit-mlp")
    assert str(err.value).startswith("unknown track 'digit-mlp' (did you mean 'digits-mlp'")
    assert len(str(err.value)) < 200  # a hint, not the list of all 72 ids


def test_verify_given_the_reconstructions_file_says_to_pass_the_folder(tmp_path):
    f = tmp_path / "entry" / "reconstructions.safetensors"
    line = one_error_line(recon("verify", str(f)))
    assert line == f"{f}: pass the result folder (or its result.json), not the reconstructions file: {invoked_as()} verify {f.parent}"


def test_keygen_on_an_existing_key_prints_its_public_key(tmp_path):
    key = tmp_path / "k.pem"
    first = recon("keygen", str(key))
    assert first.returncode == 0
    public = first.stdout.split("public key:  ed25519 ")[1].split()[0]
    again = recon("keygen", str(key))
    assert again.returncode == 0 and public in again.stdout and "never overwrites" in again.stdout
    shown = recon("pubkey", str(key))
    assert shown.returncode == 0 and f"ed25519 {public}" in shown.stdout
    assert "key file not found" in one_error_line(recon("pubkey", str(tmp_path / "none.pem")))


def test_validate_outside_a_checkout_is_an_error(tmp_path):
    line = one_error_line(recon("validate", cwd=tmp_path))
    assert line.startswith("--root submissions: no such folder, so nothing to validate")


def test_eta_is_hidden_during_warm_up():
    from rich.progress import Progress

    from reconbench.core.console import WarmETA

    column = WarmETA()
    with Progress(column, transient=True) as bar:
        task_id = bar.add_task("x", total=1000)
        bar.advance(task_id, 1)
        task = bar.tasks[0]
        assert column.render(task).plain == "eta ..."
        task.start_time -= 60  # a minute later, with 30% done: an estimate
        bar.advance(task_id, 299)
        assert column.render(task).plain != "eta ..."


def test_recorded_command_leaves_out_local_paths():
    from reconbench.api import evaluate_command

    cmd = evaluate_command("digits", "/home/me/private/lab/myattack.py:MyAttack", None, 3, "cpu", ["lr=0.1"])
    assert cmd == "recon-submit evaluate --track digits --attack myattack.py:MyAttack --seed 3 --device cpu --set lr=0.1"


def test_git_dirty_means_the_toolkit_code_differs(tmp_path):
    from reconbench.core.envelope import git_state

    pkg = tmp_path / "toolkit" / "reconbench"
    pkg.mkdir(parents=True)
    (pkg / "code.py").write_text("x = 1\n")
    git = ["git", "-C", str(tmp_path), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)
    (tmp_path / "submissions" / "team").mkdir(parents=True)
    (tmp_path / "submissions" / "team" / "result.json").write_text("{}")
    commit, dirty = git_state(pkg)
    assert commit and dirty is False  # new entries under submissions/ are not a change of the code
    (pkg / "code.py").write_text("x = 2\n")
    assert git_state(pkg)[1] is True


def test_contact_is_said_to_be_public_where_it_is_asked_for():
    from pathlib import Path

    from reconbench.cli import app

    submit = typer.main.get_command(app).commands["submit"]
    contact = next(p for p in submit.params if p.name == "contact")
    assert contact.required is False and "PUBLISHED" in contact.help
    page = (Path(__file__).resolve().parents[1] / "site" / "submit.md").read_text()
    assert "`contact` is optional and **public**" in page


def test_submit_given_a_file_says_to_pass_the_folder(tmp_path):
    f = tmp_path / "RESULT" / "result.json"
    f.parent.mkdir()
    f.write_text("{}")
    line = one_error_line(recon("submit", str(f), "--team", "my-lab"))
    assert line == f"{f}: pass the result folder written by evaluate, not a file in it: {invoked_as()} submit {f.parent} --team my-lab"
