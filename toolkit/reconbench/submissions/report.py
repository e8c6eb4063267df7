"""Rendering a validation: rich text for the terminal, Markdown for a pull request's summary
($GITHUB_STEP_SUMMARY), JSON for tools. Every string that came from a submission is escaped
for the target format (rich markup, Markdown/HTML), so a file name cannot restyle the report."""

from __future__ import annotations

import json
from collections import Counter

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from reconbench.submissions.validate import BoardReport, EntryReport

ICON = {"pass": "✅", "fail": "❌", "not-run": "⏭️", "warn": "⚠️"}
STYLE = {"pass": "green", "fail": "bold red", "not-run": "dim", "warn": "yellow"}
TRUST_STYLE = {"failed": "bold red", "held": "bold yellow", "signed": "yellow", "re-scored": "bold green", "reproduced": "bold cyan"}
MAX_DETAILS = 20


def _label(r: EntryReport) -> str:
    if r.entry_id:
        return f"{r.team}/{r.entry_id}"
    return f"{r.team}/ (team folder)" if r.team else f"{r.path.name} (not in a team folder)"


LONG_REASON = 60  # a parenthesised reason this long, repeated in one entry's rows, is said in full once


def said_once(checks) -> list[str]:
    """The checks' messages with each long parenthesised reason given in full at its first row only; later
    rows say "(as for <check>)", at whatever depth the reason sits. Ten not-run rows all saying where the
    FID/LPIPS weights come from read as ten problems (issue 45, item 7)."""
    first: dict[str, str] = {}
    out = []
    for c in checks:
        out.append(_shorten(c.message, c.name, first))
        for reason in _reasons(c.message):
            first.setdefault(reason, c.name)
    return out


def _shorten(text: str, name: str, first: dict[str, str]) -> str:
    pieces, last = [], 0
    for a, b in _groups(text):
        inner = text[a + 1:b - 1]
        pieces.append(text[last:a])
        if len(inner) >= LONG_REASON and first.get(inner, name) != name:
            pieces.append(f"(as for {first[inner]})")
        else:
            pieces.append(f"({_shorten(inner, name, first)})")
        last = b
    return "".join(pieces) + text[last:]


def _reasons(text: str) -> list[str]:
    """Every parenthesised group of `text` at least LONG_REASON long, at any depth."""
    found = []
    for a, b in _groups(text):
        inner = text[a + 1:b - 1]
        if len(inner) >= LONG_REASON:
            found.append(inner)
        found += _reasons(inner)
    return found


def _groups(message: str) -> list[tuple[int, int]]:
    """(start, end) of each top-level "( ... )" group of `message`, nesting respected."""
    groups, depth, start = [], 0, 0
    for i, ch in enumerate(message):
        if ch == "(":
            start = i if depth == 0 else start
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
            if depth == 0:
                groups.append((start, i + 1))
    return groups


def summary_counts(report: BoardReport) -> dict[str, int]:
    return dict(Counter(r.trust for r in report.entries))


def render_text(report: BoardReport, console: Console) -> None:
    for r in report.entries:
        render_entry(r, console)
    _text_footer(report, console)


def render_entry(r: EntryReport, console: Console, label: str | None = None) -> None:
    """One entry's (or run folder's) checks as a table titled with its label and trust level."""
    table = Table(title=f"{escape(label or _label(r))}: [{TRUST_STYLE[r.trust]}]{r.trust}[/]", title_justify="left",
                  show_header=False, expand=False)
    table.add_column("check", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("message")
    from reconbench.core.console import suggest

    for c, said in zip(r.checks, said_once(r.checks)):
        message = escape(suggest(said))  # a suggested command as it runs in this shell
        if len(c.details) > 1 and c.status == "fail":
            message += "".join(f"\n  - {escape(suggest(d))}" for d in c.details[:MAX_DETAILS])
            message += f"\n  ... and {len(c.details) - MAX_DETAILS} more" if len(c.details) > MAX_DETAILS else ""
        table.add_row(escape(c.name), f"[{STYLE[c.status]}]{c.status}[/]", message)
    console.print(table)


def _text_footer(report: BoardReport, console: Console) -> None:
    for p in report.outside:
        console.print(f"[bold red]outside the submissions folder:[/] {escape(p)}")
    for p in report.removed:
        console.print(f"[dim]removed (nothing to validate): {escape(p)}[/]")
    for p in report.empty:
        console.print(f"[bold red]error:[/] {escape(p)} holds no entry (is the path right?)")
    for change in report.key_changes:
        console.print(f"[bold yellow]⚠ {escape(change.text())}[/]")
    counts = summary_counts(report)
    entries = sum(1 for r in report.entries if r.entry_id)
    text = ", ".join(f"{n} {t}" for t, n in sorted(counts.items())) or "nothing to validate"
    verdict = "[bold green]OK[/]" if report.ok else "[bold red]FAILED[/]"
    console.print(f"{verdict}: {entries} entr{'y' if entries == 1 else 'ies'} checked ({text})")


_MD_ESCAPES = str.maketrans({c: f"&#{ord(c)};" for c in "&<>\"|\\`*_[]#~"} | {"\n": "<br>"})


def md(text: str) -> str:
    """Escape for a Markdown table cell, in one pass: HTML specials, pipes and Markdown's inline markers
    become numeric character references (rendered as the characters, never as markup)."""
    return text.translate(_MD_ESCAPES)


def render_markdown(report: BoardReport) -> str:
    lines = ["## ReconBench submission check", ""]
    if report.key_changes:  # first, above everything: a change of identity is for a person to confirm
        lines += ["> [!WARNING]", "> **Maintainer review required: team keys changed.**"]
        lines += [f"> - ⚠️ {md(c.text())}" for c in report.key_changes]
        lines.append("")
    verdict = "✅ all entries pass" if report.ok else "❌ some entries fail"
    lines += [f"**{verdict}**. Trust levels: `failed` / `held` (near-copies of public images, or a replicate of "
              "an earlier entry's setting: listed, not ranked) / `signed` (schema, signature, registry) / `re-scored` (CI recomputed every claimed "
              "metric; no copied dataset image).", ""]
    if report.entries:
        lines += ["| entry | trust | first problem |", "|---|---|---|"]
        for r in report.entries:
            problem = next((c for c in r.checks if c.status == "fail"), None)
            lines.append(f"| {md(_label(r))} | **{r.trust}** | {md(problem.message) if problem else ''} |")
        lines.append("")
    for r in report.entries:
        lines += [f"<details{' open' if r.failed else ''}><summary>{md(_label(r))}: <b>{r.trust}</b></summary>", "",
                  "| check | status | message |", "|---|---|---|"]
        for c, said in zip(r.checks, said_once(r.checks)):
            message = md(said)
            if len(c.details) > 1 and c.status == "fail":
                message += "".join(f"<br>• {md(d)}" for d in c.details[:MAX_DETAILS])
                message += f"<br>… and {len(c.details) - MAX_DETAILS} more" if len(c.details) > MAX_DETAILS else ""
            lines.append(f"| {md(c.name)} | {ICON[c.status]} {c.status} | {message} |")
        lines += ["", "</details>", ""]
    for p in report.outside:
        lines.append(f"- ❌ outside the submissions folder: {md(p)}")
    for p in report.removed:
        lines.append(f"- removed (nothing to validate): {md(p)}")
    for p in report.empty:
        lines.append(f"- ❌ {md(p)} holds no entry (is the path right?)")
    if not report.entries and not report.outside:
        lines.append("Nothing to validate.")
    return "\n".join(lines).rstrip() + "\n"


def render_json(report: BoardReport) -> str:
    data = {
        "ok": report.ok,
        "summary": summary_counts(report),
        "entries": [r.to_dict() for r in report.entries if r.entry_id],
        "other": [r.to_dict() for r in report.entries if not r.entry_id],
        "outside": report.outside,
        "removed": report.removed,
        "empty": report.empty,
        "key_changes": [c.to_dict() for c in report.key_changes],
    }
    return json.dumps(data, indent=2, ensure_ascii=True) + "\n"
