"""What a run's end says below its metrics (`evaluate`, `check`): the membership gap of each metric
(value, 95% interval, one-sided p) and the verdict line in the board's words (core/verdict.py, which the
board uses too), with the extraction count and the threshold each p was held to, so the command line
and the board never disagree.

One function, `print_verdict`: what else the end of a run should say (an extraction count, a sealed
track's "scored at validation") goes in here."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from reconbench.core.console import escape
from reconbench.core.verdict import ALPHA, entry_verdict


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
        extraction = getattr(membership, "extraction", None)
        console.print("membership gap: not tested (no metric has a gap with a p-value on this track)"
                      + (", so no verdict" if extraction is None else ""))
        if extraction is not None:
            console.print(f"verdict: {verdict_line(membership, _image(payload))}", soft_wrap=True)
        return
    tests = len(rows)
    level = f"{ALPHA / tests:.2g} = {ALPHA:g} / {tests} metrics" if tests > 1 else f"{ALPHA:g}"
    console.print("membership gap (> 0: closer to the training set than to the holdout, the same metric against both; "
                  f"the verdict holds the smallest p to {level}):", soft_wrap=True)
    table = Table()
    for column in ("metric", "gap", "95% interval", "p (one-sided)"):
        table.add_column(column)
    for row in rows:
        table.add_row(*map(escape, row))
    console.print(table)
    console.print(f"verdict: {verdict_line(membership, _image(payload))}", soft_wrap=True)


def _image(payload) -> bool:
    """An image result's payload (the recovery count exists for images only)."""
    return type(payload).__module__.startswith("reconbench.image")


def verdict_line(membership, image: bool = False) -> str:
    """The verdict line (Rich markup): the tier, then what decided it, the extraction count first."""
    extraction = getattr(membership, "extraction", None)
    v = entry_verdict(dict(membership.metrics), extraction)
    said = [f"extraction count: {v.count}" if v.count is not None else "extraction count: not computed for this run",
            f"mean gap: {v.signal_p}" if v.signal_p is not None else "mean gap: not tested"]
    if image:  # its recovery count ("recovers k") is validation's, never claimed (core/recovery.py)
        said.append("recovery count: computed at validation against the track's public images (the board shows it)")
    means = v.tier.means[:1].upper() + v.tier.means[1:]
    return f"[bold]{escape(v.label)}[/] ({escape('; '.join(said))}). {escape(means)}"
