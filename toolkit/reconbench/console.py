"""Rich output shared by the CLI commands: the console, a progress-bar factory, error printing."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

import os
import sys

# Piped output (CI logs, `| grep`) gets a wide table instead of rich's 80-column default.
_WIDTH = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 200
console = Console(width=_WIDTH)
err_console = Console(stderr=True, width=_WIDTH)


@contextmanager
def rich_task(description: str, total: int) -> Iterator:
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=False,
    ) as bar:
        task = bar.add_task(description, total=total)
        yield lambda steps=1: bar.advance(task, steps)


def fail(message: str, code: int = 1) -> None:
    """One clear line on stderr, then exit non-zero (no traceback)."""
    import typer

    err_console.print(f"[bold red]error:[/] {message}", highlight=False, markup=True)
    raise typer.Exit(code)
