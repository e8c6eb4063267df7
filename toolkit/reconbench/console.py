"""Rich output shared by the CLI commands: the console, a progress-bar factory, error printing,
and the command group that turns every exception into one line (reconbench.errors)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from typer.core import TyperGroup

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

    err_console.print("[bold red]error:[/]", escape(message), highlight=False, markup=True, soft_wrap=True)
    raise typer.Exit(code)


def escape(text: object) -> str:
    """Data (ids, paths, messages, formulas) printed through rich: `[a-z]` must not read as markup."""
    from rich.markup import escape as _escape

    return _escape(str(text))


DEBUG_ENV = "RECONBENCH_DEBUG"
INTERRUPTED = "interrupted: nothing was written (results are written only when a command completes)"


class CliGroup(TyperGroup):
    """Every error of every command ends here: one line and exit 1; `--debug` re-raises instead."""

    def invoke(self, ctx):  # noqa: ANN001, ANN201 - click's signature
        import click
        import typer

        from reconbench.errors import describe

        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, typer.Exit):
            raise
        except KeyboardInterrupt:
            if _debug(ctx):
                raise
            err_console.print(INTERRUPTED, highlight=False, markup=False)
            raise typer.Exit(130) from None
        except Exception as exc:
            if _debug(ctx):
                raise
            fail(describe(exc))


def _debug(ctx) -> bool:  # noqa: ANN001
    return bool(ctx.params.get("debug")) or os.environ.get(DEBUG_ENV, "") not in ("", "0")
