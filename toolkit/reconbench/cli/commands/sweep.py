"""`recon-submit sweep GRID.toml`: a grid of evaluations as jobs on Ray (logic: reconbench.sweep)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from reconbench.core.console import console, escape, fail


def register(app: typer.Typer) -> None:
    app.command()(sweep)


def sweep(
    grid: Path = typer.Argument(..., help="grid file (TOML; see docs/sweep.md)"),
    out: Optional[Path] = typer.Option(None, help="output folder (default ./sweep-results/<grid name>/)"),
    budget: Optional[str] = typer.Option(None, help="quick, default or paper (overrides the grid's budget)"),
    device: str = typer.Option("cpu", help="cpu, cuda, ... (cuda: each job asks Ray for --gpus-per-job GPUs)"),
    gpus_per_job: float = typer.Option(1.0, help="GPUs (or a share) per job when --device is cuda"),
    address: Optional[str] = typer.Option(None, help="an existing Ray cluster (ray://host:10001 or auto); default: local Ray"),
    num_cpus: Optional[int] = typer.Option(None, help="CPUs of the local Ray instance (default: all of this machine)"),
    local: bool = typer.Option(False, "--local", help="run the jobs one after another in this process (no Ray)"),
    key: Optional[Path] = typer.Option(None, help="ed25519 private key (default: created on first use)"),
    weights_dir: Optional[Path] = typer.Option(None, help="folder with Inception/AlexNet weights for FID/LPIPS"),
    dry_run: bool = typer.Option(False, "--dry-run", help="list the jobs and whether they are done; run nothing"),
    quiet: bool = typer.Option(False, help="no progress bar"),
) -> None:
    """Expand a grid (tracks x attacks x scenarios x seeds, one budget) into jobs and run them on Ray.

    Example: recon-submit sweep grid.toml --budget quick --dry-run
    """
    from reconbench.core.console import rich_task
    from reconbench.core.signing import SigningError, default_key_path, generate_key
    from reconbench.sweep import GridError, load_grid, run_sweep
    from reconbench.sweep.cluster import ClusterError
    from reconbench.sweep.run import done_result

    try:
        expanded = load_grid(grid, budget=budget)
    except GridError as exc:
        fail(str(exc))
    folder = out or Path("sweep-results") / expanded.name
    if dry_run:
        table = Table(title=f"{escape(expanded.name)}: {len(expanded.jobs)} jobs ({expanded.not_applicable} not applicable)")
        for col in ("job id", "track", "attack", "scenario", "seed", "budget", "state"):
            table.add_column(col)
        for job in expanded.jobs:
            state = "done" if done_result(folder, job) is not None else "to run"
            table.add_row(*map(escape, (job.id, job.track, job.attack, job.scenario, str(job.seed), job.budget or "-", state)))
        console.print(table)
        return
    key_path = key or default_key_path()
    if key is None and not key_path.exists():
        generate_key(key_path)
        console.print(f"Created a signing key: [bold]{escape(key_path)}[/] (public key: {escape(key_path)}.pub)")
    bar: dict = {}

    def start(total: int) -> None:
        if not quiet and total:
            bar["cm"] = rich_task(f"sweep {expanded.name}: jobs", total)
            bar["advance"] = bar["cm"].__enter__()

    try:
        summary = run_sweep(
            expanded.jobs, out=folder, key_path=key_path, device=device, backend="local" if local else "ray",
            address=address, num_cpus=num_cpus, gpus_per_job=gpus_per_job, weights_dir=weights_dir,
            grid=expanded.name, not_applicable=expanded.not_applicable, on_start=start,
            on_done=lambda outcome: bar.get("advance", lambda: None)(),
        )
    except (ClusterError, SigningError, ValueError) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail(f"interrupted: finished jobs are kept; {folder / 'summary.json'} lists the rest; rerun to continue", 130)
    finally:
        if "cm" in bar:
            bar["cm"].__exit__(None, None, None)
    print_summary(summary)
    if summary.counts()["failed"]:
        raise typer.Exit(1)


def print_summary(summary) -> None:
    table = Table(title=f"sweep {escape(summary.grid)}: {summary.wall_seconds:.1f} s ({summary.backend}, {summary.device})")
    for col in ("job id", "attack", "scenario", "seed", "status", "seconds", "entry / error"):
        table.add_column(col)
    for o in summary.outcomes:
        style = {"failed": "red", "interrupted": "yellow"}.get(o.status, "")
        table.add_row(*map(escape, (o.job.id, o.job.attack, o.job.scenario, str(o.job.seed))),
                      f"[{style}]{o.status}[/]" if style else o.status,
                      "-" if o.seconds is None else f"{o.seconds:.1f}", escape(o.error or o.entry_id or ""))
    console.print(table)
    counts = summary.counts()
    console.print(", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items()) + f"; summary: {summary.out / 'summary.json'}")
