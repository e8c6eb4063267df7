"""`recon-submit reproduce ENTRY_DIR`: re-run an entry from its signed provenance and compare.

    reproduce ENTRY --key K                 re-run, score, compare, write ENTRY/reproduction.json signed by K
    reproduce ENTRY --run-only DIR          only re-run, nothing signed
    reproduce ENTRY --from-run DIR          only score DIR's reconstructions and compare (runs no attack code);
                                            never signed: a record is signed only for a re-run made here
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from reconbench.core.console import console, fail, rich_task


def register(app: typer.Typer) -> None:
    app.command()(reproduce)


def reproduce(
    entry: Path = typer.Argument(..., help="entry folder: submissions/<team>/<entry-id>"),
    key: Optional[Path] = typer.Option(None, help="reproducer's private key: sign the record (listed in the reproducers file)"),
    record: Optional[Path] = typer.Option(None, help="where to write the signed record (default ENTRY/reproduction.json)"),
    run_only: Optional[Path] = typer.Option(None, "--run-only", help="only re-run the attack into this folder"),
    from_run: Optional[Path] = typer.Option(None, "--from-run", help="score and compare this run folder instead of re-running (never signed: --key re-runs here)"),
    max_seconds: Optional[float] = typer.Option(None, help="skip unless the entry's recorded wall time is at most this"),
    reproducers: Optional[Path] = typer.Option(None, help="reproducer keys file (default maintainers/reproducers.toml)"),
    device: str = typer.Option("cpu", help="cpu, cuda, ..."),
    weights_dir: Optional[Path] = typer.Option(None, help="folder with Inception/AlexNet weights for FID/LPIPS"),
    quiet: bool = typer.Option(False, help="no progress bar"),
) -> None:
    """Re-run an entry from its signed provenance; compare every metric with the claim within tolerances.

    Example: recon-submit reproduce submissions/my-lab/ENTRY
    """
    from reconbench.image.attacks import Progress
    from reconbench.cli import USER_ERRORS
    from reconbench.reproduction.record import RecordError
    from reconbench.reproduction.rerun import ReproduceError
    from reconbench.reproduction.sign import reproduce_entry

    if run_only and from_run:
        fail("--run-only and --from-run: give one of them (a run made by --run-only is compared by --from-run, unsigned)")
    try:
        outcome = reproduce_entry(entry, key_path=key, record_path=record, run_only=run_only, from_run=from_run,
                                  max_seconds=max_seconds, reproducers=reproducers, device=device, weights_dir=weights_dir,
                                  progress=Progress(None if quiet else rich_task))
    except (ReproduceError, RecordError, *USER_ERRORS) as exc:
        fail(escape(str(exc)))
    if outcome.record is None:
        console.print(f"re-run written to {escape(str(outcome.run_dir))} (score it with --from-run)")
        return
    rec = outcome.record
    table = Table(title=f"{escape(rec.entry_id)}: [bold]{rec.verdict}[/]", title_justify="left")
    for col in ("metric", "claimed", "obtained", "tolerance", "within"):
        table.add_column(col)
    for c in rec.comparisons:
        cov = lambda v: "" if v is None else f" ({v:.2%})"  # noqa: E731
        table.add_row(c.metric, "-" if c.claimed is None else f"{c.claimed:.6g}{cov(c.claimed_coverage)}",
                      "-" if c.obtained is None else f"{c.obtained:.6g}{cov(c.obtained_coverage)}", escape(c.tolerance),
                      {True: "yes", False: "[red]no[/]", None: "not compared"}[c.within])
    console.print(table)
    for problem in rec.problems:
        console.print(f"  not reproduced: {escape(problem)}")
    run = rec.reported
    console.print(f"reported by the run job, not verified: {escape(run.device)}, {run.wall_seconds:.0f} s, "
                  f"sandbox {escape(run.sandbox or 'not recorded')}", highlight=False)
    if outcome.record_path:
        console.print(f"signed record: {escape(str(outcome.record_path))}")
    else:
        console.print("no record written: only a reproducer listed in maintainers/reproducers.toml signs one, of a "
                      "re-run made by this command (reproduce ENTRY --key KEY; a handed-in run is never signed). Not one? This command records nothing for you; the table above is your comparison: paste "
                      "it into your pull request or an issue, and a maintainer can record the reproduction",
                      highlight=False, soft_wrap=True)
    if rec.verdict != "reproduced":
        raise typer.Exit(1)
