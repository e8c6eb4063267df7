"""`recon-submit tracks`: the registry as a table, runnable tracks first, with why a track cannot run."""

from __future__ import annotations

from collections import Counter

from rich.table import Table

from reconbench.core.console import console, escape
from reconbench.core.errors import UserError

STATUSES = {
    "embedded": "ships with the toolkit: runs offline",
    "published": "target model and data pinned on the Hub: downloaded on first use",
    "unpublished": "planned (SoK grid): its target model is not published yet, so it cannot run",
}


def print_tracks(status: str | None = None, include_planned: bool = False) -> None:
    from reconbench.core.tracks import all_tracks

    if status is not None and status not in STATUSES:
        raise UserError(f"--status {status}: unknown status (one of {', '.join(STATUSES)})")
    tracks = all_tracks()
    counts = Counter(t.status for t in tracks)
    shown = [t for t in tracks if (t.status == status if status else include_planned or t.status != "unpublished")]
    title = f"tracks ({len(shown)} of {len(tracks)} shown)"
    rows = []
    for t in shown:
        acc = f"{t.train_accuracy:.3f} / {t.test_accuracy:.3f}" if t.train_accuracy is not None else "-"
        size = f"{t.train_size}" + (f" (update {t.update_size})" if t.update_size else "")
        arch = t.architecture + (f" [{t.variant}]" if t.variant else "")
        state = "planned: not runnable yet" if t.status == "unpublished" else t.status
        if getattr(t, "seal", None) is not None:  # membership from the board's key: the gap is scored at validation
            state += f" · SEALED {t.seal.draw + 1}/{t.seal.draws}"  # short: the table keeps a column per field
        rows.append((t.id, state, t.dataset, arch, size, acc, f"{t.query_budget:,}", "\n".join(t.scenarios)))
    columns = ("status", "dataset", "architecture", "|D_tar|", "accuracy train/test", "query budget", "scenarios")
    console.print(_table(title, columns, rows), crop=False)
    for name, text in STATUSES.items():
        console.print(escape(f"{name} ({counts.get(name, 0)}): {text}"), highlight=False)
    sealed = [t for t in shown if getattr(t, "seal", None) is not None]
    if sealed:
        reveal = ", ".join(sorted({f"{t.seal.season}: revealed after {t.seal.reveal_after}" for t in sealed}))
        console.print("SEALED i/K (draw i of K): which half of the track's public pool the model trained on is drawn "
                      "from the board's secret key; evaluate scores the nearest pool item, the membership gap and the "
                      f"extraction count are scored at validation ({reveal}; docs/sealed.md)", highlight=False)
    if not include_planned and status is None and counts.get("unpublished"):
        console.print(f"{counts['unpublished']} planned tracks not shown: recon-submit tracks --all", highlight=False)
    print_text_tracks(status, include_planned)


def _table(title: str, columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> Table:
    """A column per field when every cell fits the terminal uncut; otherwise (80 columns) the id,
    then every other field as a "name: value" line of one cell, so that nothing is cut to "stat…"."""
    wide = Table(title=title)
    for col in ("id", *columns):
        wide.add_column(col, no_wrap=True)
    for row in rows:
        wide.add_row(*map(escape, row))
    if console.measure(wide, options=console.options.update_width(10_000)).maximum <= console.width:
        return wide
    table = Table(title=title)
    table.add_column("id", no_wrap=True, overflow="fold")
    table.add_column("facts", overflow="fold")
    for row in rows:
        facts = [f"{name}: {value.replace(chr(10), ', ')}" for name, value in zip(columns, row[1:])]
        table.add_row(escape(row[0]), escape("\n".join(facts)))
    return table


def print_text_tracks(status: str | None, include_planned: bool) -> None:
    """The text tracks (registry/text_tracks.json) in a table of their own: two targets, no classes."""
    from reconbench.text.tracks import all_text_tracks

    tracks = all_text_tracks()
    if not tracks:
        return
    shown = [t for t in tracks if (t.status == status if status else include_planned or t.status != "unpublished")]
    rows = []
    for t in shown:
        state = "planned: not runnable yet" if t.status == "unpublished" else t.status
        if getattr(t, "seal", None) is not None:  # membership from the board's key: the gap is scored at validation
            state += f" · SEALED (draw {t.seal.draw + 1} of {t.seal.draws}; revealed after {t.seal.reveal_after})"
        targets = " / ".join(m.architecture if m else "-" for m in (t.generator, t.embedder))
        rows.append((t.id, state, t.dataset, str(t.train_size), targets, "\n".join(t.scenarios)))
    columns = ("status", "dataset", "|D_tar|", "targets (generator / embedder)", "scenarios")
    if shown:
        console.print(_table(f"text tracks ({len(shown)} of {len(tracks)} shown)", columns, rows), crop=False)
    planned = sum(t.status == "unpublished" for t in tracks)
    if not include_planned and status is None and planned:
        console.print(f"{planned} planned text tracks not shown: recon-submit tracks --all", highlight=False)


def print_text_metrics() -> None:
    """The text metrics (SoK App. B) below the image table of `recon-submit metrics`."""
    from reconbench.text.metrics import TEXT_METRICS

    table = Table(title="text metrics (each reconstruction against its own target)")
    for col in ("name", "dir", "range", "definition"):
        table.add_column(col)
    for name, m in TEXT_METRICS.items():
        table.add_row(*map(escape, (name, m.direction, m.range, m.definition)))
    console.print(table)
