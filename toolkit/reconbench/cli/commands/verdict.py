"""What a run's end says below its metrics (`evaluate`, `check`): the membership gap of each metric
(value, 95% interval, one-sided p) and the verdict in the board's words, from the board's own rule
(core/verdict.py, which the board uses too), so the command line and the board never disagree.

One function, `print_verdict`: what else the end of a run should say (an extraction count, a sealed
track's "scored at validation") goes in here."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from reconbench.core.console import escape
from reconbench.core.verdict import VERDICT_TEXT, verdict


def gap_rows(membership) -> list[tuple[str, str, str, str]]:
    """(metric, gap, interval, p) of every metric with a tested gap, as printed."""
    rows = []
    for name, g in (membership.metrics if membership is not None else {}).items():
        if g.status == "computed" and g.p is not None:
            interval = f"[{g.low:+.4g}, {g.high:+.4g}]" if g.low is not None and g.high is not None else "—"
            rows.append((name, f"{g.gap:+.4g}", interval, f"{g.p:.3g}"))
    return rows


def print_verdict(console: Console, payload) -> None:
    """The membership gap table and the verdict line of a result's payload (image or text)."""
    sealed = getattr(payload, "sealed", None)
    if sealed is not None:  # the members are the key's secret: nothing membership-based can be said here
        from reconbench.core.sealed_next import draw_line

        pending = " and ".join(sealed.pending) or "membership gap"
        console.print(f"{escape(pending)}: {escape(sealed.status)} (sealed track {escape(sealed.group)}, draw "
                      f"{sealed.draw}: only the board's key opens the members; the board publishes them, so no "
                      "verdict here)", soft_wrap=True)
        said = draw_line(payload.track)  # which draw of how many, what comes next and when (issue 45)
        if said:
            console.print(escape(said), soft_wrap=True, highlight=False)
        return
    membership = getattr(payload, "membership", None)
    rows = gap_rows(membership)
    if not rows:
        console.print("membership gap: not tested (no metric has a gap with a p-value on this track), so no verdict")
        return
    console.print("membership gap (> 0: closer to the training set than to the holdout, the same metric against both):")
    table = Table()
    for column in ("metric", "gap", "95% interval", "p (one-sided)"):
        table.add_column(column)
    for row in rows:
        table.add_row(*map(escape, row))
    console.print(table)
    _, label = verdict(dict(membership.metrics))
    console.print(f"verdict: [bold]{escape(label)}[/]: {escape(VERDICT_TEXT[label])}", soft_wrap=True)
