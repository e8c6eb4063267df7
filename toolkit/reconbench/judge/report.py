"""Judge studies inside `recon-submit validate`: which given paths are studies, and their report.

`validate` (commands/submission.py) hands every path to `split_paths`; paths under the judgements
folder are checked here (check.py), the others by the submissions validator, untouched. With no
paths both are checked in full.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from reconbench.judge.check import StudyReport, check_studies


def _under(path: Path, root: Path) -> bool:
    return Path(os.path.abspath(path)).is_relative_to(Path(os.path.abspath(root)))


def split_paths(paths: list[Path] | None, judgements: Path) -> tuple[list[Path] | None, list[Path] | None, bool]:
    """(paths for the submissions validator, study paths, whether to run the submissions validator)."""
    if paths is None:
        return None, None, True
    studies = [p for p in paths if _under(p, judgements)]
    others = [p for p in paths if not _under(p, judgements)]
    return others, studies, bool(others) or not studies


def run(studies: list[Path] | None, judgements: Path, submissions: Path) -> list[StudyReport]:
    if studies == []:
        return []
    return check_studies(judgements, submissions, studies)


def merge_json(board_json: str, reports: list[StudyReport]) -> str:
    """The submissions report's JSON with the studies added: one document per run."""
    data = json.loads(board_json)
    data["judgements"] = [r.to_dict() for r in reports]
    data["ok"] = bool(data.get("ok")) and all(r.ok for r in reports)
    return json.dumps(data, indent=2, ensure_ascii=True) + "\n"


def render(reports: list[StudyReport], fmt: str, console: Console) -> str:
    """Text goes to the console; markdown and json are returned (the caller writes them)."""
    if fmt == "json":
        return json.dumps({"judgements": [r.to_dict() for r in reports],
                           "ok": all(r.ok for r in reports)}, indent=2, ensure_ascii=True) + "\n"
    if fmt == "markdown":
        if not reports:
            return ""
        lines = ["", "### Judge studies", "", "| study | result | checks |", "|---|---|---|"]
        for r in reports:
            checks = "; ".join(f"{n}: {s}" + (f" ({m})" if s == "fail" else "") for n, s, m in r.checks)
            cell = checks.replace("|", "&#124;").replace("<", "&lt;").replace("\n", " ")
            lines.append(f"| `{r.study_id.replace('`', '')}` | {'ok' if r.ok else '**failed**'} | {cell} |")
        return "\n".join(lines) + "\n"
    for r in reports:
        verdict = "[bold green]ok[/]" if r.ok else "[bold red]failed[/]"
        console.print(f"judge study {escape(r.study_id)}: {verdict}")
        for n, s, m in r.checks:
            console.print(f"  {escape(n)}: {escape(s)} {escape(m)}", highlight=False, soft_wrap=True)
    if reports:
        failed = sum(not r.ok for r in reports)
        console.print(f"{'[bold red]FAILED' if failed else '[bold green]OK'}[/]: {len(reports)} judge "
                      f"stud{'y' if len(reports) == 1 else 'ies'} checked ({failed} failed)")
    return ""
