"""`recon-submit tracks`: the registry as a table, runnable tracks first, with why a track cannot run."""

from __future__ import annotations

from collections import Counter

from rich.table import Table

from reconbench.core.console import console, escape, suggest
from reconbench.core.errors import UserError

STATUSES = {
    "embedded": "ships with the toolkit: runs offline",
    "published": "target model and data pinned on the Hub: downloaded on first use",
    "unpublished": "planned (SoK grid): its target model is not published yet, so it cannot run",
}


def print_tracks(status: str | None = None, include_planned: bool = False) -> None:
    from reconbench.core.sealed_next import short_kind
    from reconbench.core.tracks import all_tracks

    if status is not None and status not in STATUSES:
        raise UserError(f"--status {status}: unknown status (one of {', '.join(STATUSES)})")
    tracks = all_tracks()
    counts = Counter(t.status for t in tracks)
    shown = [t for t in tracks if (t.status == status if status else include_planned or t.status != "unpublished")]
    title = f"tracks ({len(shown)} of {len(tracks)} shown)"
    rows = []
    for t in _twins_as_one(shown):
        acc = f"{t.train_accuracy:.3f} / {t.test_accuracy:.3f}" if t.train_accuracy is not None else "-"
        size = f"{t.train_size}" + (f" (update {t.update_size})" if t.update_size else "")
        arch = t.architecture + (f" [{t.variant}]" if t.variant else "")
        state = "planned: not runnable yet" if t.status == "unpublished" else t.status
        seal = getattr(t, "seal", None)
        twin = seal is not None and t.id == seal.group
        if twin:  # one row per sealed twin, under the id --track takes: its K draws are runs of it
            state += f" · SEALED twin, {seal.draws} draws\n{short_kind(seal)}"
        elif seal is not None:  # one draw alone (tracks --status, or a twin whose other draws are not shown)
            state += f" · SEALED draw {seal.draw + 1}/{seal.draws}\n{short_kind(seal)}"
        rows.append((t.id, state, t.dataset, arch, size, acc, f"{t.query_budget:,}", "\n".join(t.scenarios)))
    columns = ("status", "dataset", "architecture", "|D_tar|", "accuracy train/test", "query budget", "scenarios")
    console.print(_table(title, columns, rows), crop=False)
    for name, text in STATUSES.items():
        console.print(escape(f"{name} ({counts.get(name, 0)}): {text}"), highlight=False)
    sealed = [t for t in shown if getattr(t, "seal", None) is not None]
    if sealed:
        console.print(escape(sealed_footer(sealed)), highlight=False)
    if not include_planned and status is None and counts.get("unpublished"):
        console.print(escape(suggest(f"{counts['unpublished']} planned tracks not shown: recon-submit tracks --all")),
                      highlight=False)
    print_text_tracks(status, include_planned)


def _twins_as_one(tracks: list) -> list:
    """The tracks with each sealed twin's draws folded into one row named by the twin (`--track` takes
    that id and runs every draw): the first draw's facts under the twin's id, where all K are shown."""
    out, seen = [], set()
    draws: dict[str, int] = Counter(t.seal.group for t in tracks if getattr(t, "seal", None) is not None)
    for t in tracks:
        seal = getattr(t, "seal", None)
        if seal is None or draws[seal.group] != seal.draws:
            out.append(t)
        elif seal.group not in seen:
            seen.add(seal.group)
            out.append(t.model_copy(update={"id": seal.group}))
    return out


def _reveals(tracks: list) -> str:
    """When each season of these draws has its key revealed, one clause per season."""
    return ", ".join(sorted({f"season {t.seal.season}: key revealed after {t.seal.reveal_after}" for t in tracks}))


def sealed_footer(sealed: list) -> str:
    """What a sealed twin is, which ids --track takes, what evaluate does on one, and when its score is
    published (docs/sealed.md): the practice draws of a burned season, and the board-run twins."""
    from reconbench.core.console import invoked_as
    from reconbench.core.sealed_next import kind

    practice = [t for t in sealed if getattr(t.seal, "scheme", "v1") != "v2"]
    board = [t for t in sealed if getattr(t.seal, "scheme", "v1") == "v2"]
    parts = []
    if practice:
        groups = sorted({t.seal.group for t in practice})
        reveal = _reveals(practice)
        parts.append(
            f"SEALED twins ({', '.join(groups)}): {kind(practice[0].seal)}; each draw's model trained on one half of a "
            "public pool, drawn from the board's secret key. --track takes the twin's id and runs all its draws (one "
            f"draw alone: --track <twin>-d0, -d1, ...); to try one draw: {invoked_as()} evaluate --track {groups[0]} "
            "--draws 1 --budget quick. evaluate scores against the nearest pool item; the membership gap and the "
            "extraction count are scored by CI's keyed validation of your pull request; anyone can recompute "
            f"them once the key is revealed ({reveal}).")
    if board:
        groups = sorted({t.seal.group for t in board})
        reveal = _reveals(board)
        parts.append(
            f"SEALED twins ({', '.join(groups)}): {kind(board[0].seal).replace('recon-submit', invoked_as())}; their "
            "pools are drawn from the whole sealed block and their models ship only encrypted, so evaluate refuses "
            "them: develop on the open twin or the practice draws, then the board runs your attack on every draw "
            f"and publishes its scores ({reveal}).")
    return " ".join(parts) + " More: docs/sealed.md"


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
        console.print(escape(suggest(f"{planned} planned text tracks not shown: recon-submit tracks --all")), highlight=False)


def print_text_metrics() -> None:
    """The text metrics (SoK App. B) below the image table of `recon-submit metrics`."""
    from reconbench.text.metrics import TEXT_METRICS

    table = Table(title="text metrics (each reconstruction against its own target)")
    for col in ("name", "dir", "range", "definition"):
        table.add_column(col)
    for name, m in TEXT_METRICS.items():
        table.add_row(*map(escape, (name, m.direction, m.range, m.definition)))
    console.print(table)
