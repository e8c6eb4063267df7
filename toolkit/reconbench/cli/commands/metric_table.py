"""The table of metrics that `evaluate` and `score` print: one row a metric, each distinct note
once below the table (FID and the four PRDC values share one missing-weights note), and a
"coverage" header only when a metric has a coverage (the text metrics have none)."""

from __future__ import annotations

import re

from rich.console import Console
from rich.table import Table

from reconbench.core.console import escape, suggest


def print_metrics(console: Console, title: str, metrics: dict, directions: dict[str, str]) -> None:
    """metrics: name -> MetricResult; directions: name -> ↑/↓ (a name missing from it: ↑)."""
    with_coverage = any(m.coverage is not None for m in metrics.values())
    table = Table(title=escape(title))
    table.add_column("metric")
    table.add_column("value (coverage)" if with_coverage else "value")
    notes: list[str] = []
    for name, result in metrics.items():
        if result.status == "computed":
            shown = result.format()
        else:
            note = _reason(result.note or "")
            if note and note not in notes:
                notes.append(note)
            shown = f"not computed [{notes.index(note) + 1}]" if note else "not computed"
        table.add_row(escape(f"{name} {directions.get(name, '↑')}"), escape(shown))
    console.print(table)
    for i, note in enumerate(notes, 1):
        console.print(f"[{i}] {escape(suggest(note))}", highlight=False, soft_wrap=True)


def _reason(note: str) -> str:
    """'FID: not computed (inception weights unavailable: ...)' -> the part in brackets, which FID
    and PRDC share."""
    match = re.fullmatch(r"[\w -]+: not computed \((.*)\)", note, flags=re.S)
    return match.group(1) if match else note
