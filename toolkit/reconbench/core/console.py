"""Rich output shared by the CLI commands: the console, a progress-bar factory, error printing,
and the command group that turns every exception into one line (reconbench.core.errors)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from typer.core import TyperGroup

# Piped output (CI logs, `| grep`) gets 100 columns instead of rich's 80-column default: wide enough for a
# column per field of most tables, narrow enough to read in a pull request's log or a split terminal
# (200 made every table run off the screen: issue 45, item 7). COLUMNS still sets any width.
PIPED_WIDTH = 100
_WIDTH = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else PIPED_WIDTH
console = Console(width=_WIDTH)
err_console = Console(stderr=True, width=_WIDTH)


class WarmETA(TimeRemainingColumn):
    """Time remaining, shown only after a warm-up: the first steps (model loading, caches, the
    first compiled kernels) are slow, so an early estimate overstates the run (29 min shown for
    3.5 min). Until WARMUP_SECONDS have passed and WARMUP_SHARE of the steps are done: "eta ...".
    """

    WARMUP_SECONDS = 10.0
    WARMUP_SHARE = 0.05

    def render(self, task):  # noqa: ANN001, ANN201 - rich's signature
        from rich.text import Text

        elapsed = task.elapsed or 0.0
        if not task.finished and (elapsed < self.WARMUP_SECONDS or task.completed < self.WARMUP_SHARE * (task.total or 0)):
            return Text("eta ...", style="progress.remaining")
        return super().render(task)


PROGRESS_EVERY_ENV = "RECONBENCH_PROGRESS_EVERY"
PROGRESS_EVERY_S = 30.0


class LineProgress:
    """Progress as plain lines, for output that is not a terminal (CI logs, `| tee`, a file), where
    rich draws no live bar and a run used to stay silent until it ended: a line when the task
    starts, one every `every` seconds (percent, steps, elapsed, ETA after WarmETA's warm-up), and
    one when it ends. `tick` writes one line; the background thread calls it on the clock."""

    def __init__(self, description: str, total: int, every: float, write, clock=None):
        import time

        self.description, self.total, self.every, self.write = description, max(int(total or 0), 0), every, write
        self.clock = clock or time.monotonic
        self.start = self.clock()
        self.done = 0

    def advance(self, steps: int = 1) -> None:
        self.done += steps

    def line(self, final: bool = False) -> str:
        elapsed = self.clock() - self.start
        share = self.done / self.total if self.total else 0.0
        warm = elapsed >= WarmETA.WARMUP_SECONDS and share >= WarmETA.WARMUP_SHARE
        if final:
            tail = "done"
        elif warm and 0 < share < 1:
            tail = f"eta {_clock(elapsed * (1 - share) / share)}"
        else:
            tail = "eta ..."
        return f"{self.description}: {share:.0%} ({self.done:,}/{self.total:,}), {_clock(elapsed)} elapsed, {tail}"

    def tick(self) -> None:
        self.write(self.line())


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def progress_every() -> float:
    """Seconds between progress lines when output is not a terminal (RECONBENCH_PROGRESS_EVERY)."""
    try:
        value = float(os.environ.get(PROGRESS_EVERY_ENV, PROGRESS_EVERY_S))
    except ValueError:
        return PROGRESS_EVERY_S
    return value if value > 0 else PROGRESS_EVERY_S


@contextmanager
def line_task(description: str, total: int) -> Iterator:
    import threading

    def write(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    task = LineProgress(description, total, progress_every(), write)
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(task.every):
            task.tick()

    write(task.line())
    thread = threading.Thread(target=beat, name="progress-lines", daemon=True)
    thread.start()
    finished = False
    try:
        yield task.advance
        finished = True
    finally:
        stop.set()
        thread.join()
        write(task.line(final=True) if finished else f"{task.line()} (stopped)")


@contextmanager
def rich_task(description: str, total: int) -> Iterator:
    if not err_console.is_terminal:  # no live bar there: plain lines on the clock instead
        with line_task(description, total) as advance:
            yield advance
        return
    with Progress(
        TextColumn("{task.description}", markup=False),  # a description is data (an attack's own, too): no markup
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        WarmETA(),
        console=err_console,
        transient=False,
    ) as bar:
        task = bar.add_task(description, total=total)
        yield lambda steps=1: bar.advance(task, steps)


def fail(message: str, code: int = 1, options: list[str] | tuple[str, ...] = ()) -> None:
    """One clear line on stderr, then exit non-zero (no traceback); `options`: what to do instead,
    one line each under it."""
    import typer

    err_console.print("[bold red]error:[/]", escape(suggest(message)), highlight=False, markup=True, soft_wrap=True)
    for option in options:
        err_console.print(f"  - {escape(suggest(option))}", highlight=False, markup=True, soft_wrap=True)
    raise typer.Exit(code)


def escape(text: object) -> str:
    """Data (ids, paths, messages, formulas) printed through rich: `[a-z]` must not read as markup."""
    from rich.markup import escape as _escape

    return _escape(str(text))


def invoked_as() -> str:
    """How to call this command line again in the user's shell: `recon-submit` when that is what the
    shell finds, else the path it was run by (`.venv/bin/recon-submit` in a shell with nothing
    activated), so that printed next steps work as printed. Run as `python -m reconbench.cli` (or from
    a test), the environment's own script where there is one, else `python -m reconbench.cli`. Every
    suggested command goes through here (`suggest` rewrites a message's `recon-submit ...`)."""
    import shlex
    import shutil
    from pathlib import Path

    found = shutil.which("recon-submit")
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is None or script.name != "recon-submit":  # python -m reconbench.cli, tests
        if found:
            return "recon-submit"
        own = Path(sys.prefix) / "bin" / "recon-submit"
        if own.is_file():
            return shlex.quote(_shown(own))
        return f"{shlex.quote(_shown(Path(sys.executable)))} -m reconbench.cli"
    if found and Path(found).resolve() == script.resolve():
        return "recon-submit"
    return shlex.quote(_shown(script))


def _shown(path) -> str:
    """A path as the user would type it here: relative to the working folder when under it."""
    from pathlib import Path

    absolute = Path(os.path.abspath(path))
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        return str(absolute)


_SUGGESTED = None


def suggest(text: str) -> str:
    """`text` with every suggested `recon-submit SUBCOMMAND` written as it runs in this shell (invoked_as):
    messages are composed deep in the package, where nobody knows how the tool was called."""
    import re

    global _SUGGESTED
    prefix = invoked_as()
    if prefix == "recon-submit":
        return text
    if _SUGGESTED is None:
        _SUGGESTED = re.compile(r"(?<![\w/.-])recon-submit(?= [a-z])")
    return _SUGGESTED.sub(lambda _: prefix, text)


def conventional_help() -> None:
    """Usage lines as other command lines write them (`verify [OPTIONS] RESULT`, `keygen [PATH]`),
    not typer's `{result}`, and no `<bool>` type beside a flag, which takes no value."""
    from typer.core import TyperArgument, TyperOption

    def usage_name(self) -> str:
        name = self.display_name_raw.upper()
        name = name if self.required else f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")

    original = TyperOption.display_type

    def display_type(self, ctx) -> str:
        return "" if self.is_flag else original(self, ctx)

    TyperArgument._usage_display_name = usage_name
    TyperArgument._rich_display_name = lambda self: self.display_name_raw.upper() + ("..." if self.nargs != 1 else "")
    TyperOption.display_type = display_type


DEBUG_ENV = "RECONBENCH_DEBUG"
INTERRUPTED = "interrupted: nothing was written (results are written only when a command completes)"


class CliGroup(TyperGroup):
    """Every error of every command ends here: one line and exit 1; `--debug` re-raises instead."""

    def invoke(self, ctx):  # noqa: ANN001, ANN201 - click's signature
        import typer

        from reconbench.core.errors import describe

        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            if _debug(ctx):
                raise
            err_console.print(INTERRUPTED, highlight=False, markup=False)
            raise typer.Exit(130) from None
        except Exception as exc:
            # typer's (vendored) click signals: exit codes, usage errors, aborts; they print themselves
            if type(exc).__module__.split(".")[0] in ("typer", "click") or _debug(ctx):
                raise
            fail(describe(exc))


def _debug(ctx) -> bool:  # noqa: ANN001
    return bool(ctx.params.get("debug")) or os.environ.get(DEBUG_ENV, "") not in ("", "0")
