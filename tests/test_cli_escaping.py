"""Rich markup must not eat data (issue 15 item 5): brackets in ids, formulas and messages survive."""

from __future__ import annotations

from cli_process import one_error_line, recon


def test_metric_formulas_keep_their_brackets():
    from reconbench.image.metrics import METRICS

    out = recon("metrics").stdout
    bracketed = [m.formula for m in METRICS.values() if "[" in m.formula]
    assert bracketed, "no formula with brackets: the test would prove nothing"
    flat = " ".join(out.split())
    for formula in bracketed:
        for piece in formula.split():
            if "[" in piece:
                assert piece in flat, (piece, formula)


def test_track_variants_keep_their_brackets():
    from reconbench.core.tracks import all_tracks

    variants = [t for t in all_tracks() if t.variant]
    assert variants
    out = recon("tracks", "--all").stdout
    assert f"[{variants[0].variant}]" in out


def test_error_messages_keep_their_brackets():
    # the scenario list of "needs one of [...]" and a name pattern used to vanish
    line = one_error_line(recon("evaluate", "--attack", "mi-face", "--scenario", "static/black-box/none"))
    assert "needs one of [static/white-box/none]" in line, line


def test_console_escape_round_trips():
    from io import StringIO

    from rich.console import Console

    from reconbench.core.console import escape

    buf = StringIO()
    Console(file=buf, width=200).print(escape("pattern ^[a-z0-9][a-z0-9._-]{0,79}$ [pretrained] [bold]x[/]"))
    assert buf.getvalue().strip() == "pattern ^[a-z0-9][a-z0-9._-]{0,79}$ [pretrained] [bold]x[/]"


def test_an_own_attack_is_named_by_its_class_in_the_cli_and_on_the_board():
    """Issue 45: "own attack" alone told a reader nothing; its class name is shown, marked as the
    contributor's own, and a hostile class name stays text (rich markup on the CLI, HTML on the board)."""
    from io import StringIO

    from rich.console import Console

    from reconbench.cli.commands.metric_table import print_metrics
    from reconbench.core.attack_source import own_attack_label
    from reconbench.leaderboard.pages import make_env

    assert own_attack_label("attacks/mine.py:GradInversion", "grad-inv", "my-lab") == "GradInversion (my-lab's own attack)"
    assert own_attack_label("mine.py:GradInversion", "grad-inv") == "GradInversion (own attack)"
    assert own_attack_label("x.py:" + "A" * 500, "long", "t") == "A" * 39 + "… (t's own attack)"  # one cell, not a page
    hostile = own_attack_label("x.py:[bold]<b>Evil</b>", "evil", "mallory")
    buf = StringIO()
    print_metrics(Console(file=buf, width=100), f"{hostile} on digits", {}, {})
    assert "[bold]<b>Evil</b> (mallory's own attack) on digits" in " ".join(buf.getvalue().split())
    cell = make_env().from_string('{% from "_macros.html.j2" import attack_cell %}{{ attack_cell(row) }}').render(
        row={"registered": False, "page": "entries/mallory/e.md", "attack_label": hostile}, page_path="leaderboards/digits.md")
    assert "&lt;b&gt;Evil&lt;/b&gt; (mallory&#39;s own attack)</a>" in cell and "<b>" not in cell
    assert ">own attack<" not in cell


def test_a_suggested_command_is_the_one_that_runs_in_this_shell(tmp_path, monkeypatch):
    """Issue 45: where `recon-submit` is not on PATH, a suggestion names the script that ran
    (`.venv/bin/recon-submit` from the checkout); where it is, the bare name. Paths and other words
    that merely contain the name are left alone."""
    import sys

    from reconbench.core import console

    venv = tmp_path / ".venv" / "bin"
    venv.mkdir(parents=True)
    script = venv / "recon-submit"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [str(script), "submit"])
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert console.invoked_as() == ".venv/bin/recon-submit"
    said = console.suggest("run `recon-submit validate submissions/x` (see ~/recon-submit notes; recon-submit-extra stays)")
    assert said == "run `.venv/bin/recon-submit validate submissions/x` (see ~/recon-submit notes; recon-submit-extra stays)"
    monkeypatch.setenv("PATH", str(venv))  # the same script on PATH: the bare name runs it
    assert console.invoked_as() == "recon-submit"
    assert console.suggest("recon-submit tracks") == "recon-submit tracks"
