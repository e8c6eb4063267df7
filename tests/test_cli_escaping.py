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
