"""`recon-submit`: thin typer commands; the logic lives in the package.

Start-up is kept light (no torch, no attack code) for --help, tracks, attacks, metrics, schema and
version: import heavy modules inside the command that needs them. Errors are handled once, in
console.CliGroup: raise, don't print. A new command module: add its name to commands.MODULES.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from reconbench import __version__
from reconbench.commands.weights import apply_offline, offline_option, weights_dir_option
from reconbench.console import CliGroup, console, escape, fail, rich_task

app = typer.Typer(
    cls=CliGroup, no_args_is_help=True, pretty_exceptions_enable=False,
    help="ReconBench: evaluate data reconstruction attacks and submit signed results.",
)


@app.callback()
def _options(debug: bool = typer.Option(False, "--debug", help="show the full traceback of an error")) -> None:
    """ReconBench: evaluate data reconstruction attacks and submit signed results."""


def __getattr__(name: str):  # USER_ERRORS, computed when asked: importing them all would import torch
    if name == "USER_ERRORS":
        from reconbench.errors import user_error_types

        return user_error_types()
    raise AttributeError(name)


def parse_overrides(items: list[str]) -> dict:
    """`--set iterations=100 --set lr=0.1`: values parsed as JSON when they parse, else strings."""
    config = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--set expects key=value, got '{item}'")
        key, value = item.split("=", 1)
        try:
            config[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            config[key.strip()] = value
    return config


def evaluate_command(track: str, attack: str, scenario: str | None, seed: int, device: str, overrides: list[str],
                     budget: str = "default", surrogate: str | None = None) -> str:
    """The command line that reproduces a run (paths and keys left out: they are the runner's)."""
    args = ["recon-submit", "evaluate", "--track", track, "--attack", attack, "--seed", str(seed), "--device", device]
    if budget != "default":
        args += ["--budget", budget]
    if surrogate:
        args += ["--surrogate", surrogate]
    if scenario:
        args += ["--scenario", scenario]
    for item in overrides:
        args += ["--set", item]
    return shlex.join(args)


@app.command()
def evaluate(
    track: str = typer.Option("digits", help="track id (see `recon-submit tracks`)"),
    attack: str = typer.Option("deepinversion", help="attack name, or path/to/file.py:ClassName"),
    scenario: Optional[str] = typer.Option(None, help="training/access/data, e.g. static/white-box/none"),
    seed: int = typer.Option(0),
    device: str = typer.Option("cpu", help="cpu, cuda, cuda:1, ..."),
    out: Optional[Path] = typer.Option(None, help="output folder (default ./recon-results/<entry-id>/)"),
    key: Optional[Path] = typer.Option(None, help="ed25519 private key (default: created on first use)"),
    set_: list[str] = typer.Option([], "--set", help="attack option override, key=value (repeatable; applied on top of --budget; `recon-submit attacks NAME` lists the options)"),
    budget: str = typer.Option("default", help="budget preset: quick (a minute on digits), default, paper (the paper's full budget)"),
    surrogate: Optional[str] = typer.Option(None, help="run a white-box attack in a black-box cell through a stolen surrogate: dfme or aux (--set surrogate.KEY=VALUE configures it)"),
    weights_dir: Optional[Path] = weights_dir_option(),
    offline: bool = offline_option(),
    quiet: bool = typer.Option(False, help="no progress bar"),
) -> None:
    """Run an attack on a track, score it, and write a signed result folder."""
    apply_offline(offline)
    from reconbench.attacks import Progress
    from reconbench.evaluation import evaluate as run
    from reconbench.signing import default_key_path, generate_key

    key_path = key or default_key_path()
    if key is None and not key_path.exists():
        generate_key(key_path)
        console.print(f"Created a signing key: [bold]{escape(key_path)}[/] (public key: {escape(key_path)}.pub)")
    output = run(
        track_id=track, attack_spec=attack, scenario=scenario, seed=seed, device=device, out=out,
        key_path=key_path, config=parse_overrides(set_), progress=Progress(None if quiet else rich_task),
        command=evaluate_command(track, attack, scenario, seed, device, set_, budget, surrogate), weights_dir=weights_dir,
        budget=budget, surrogate=surrogate,
    )
    payload = output.result.payload
    table = Table(title=escape(f"{payload.attack.name} on {payload.track} ({payload.scenario})"))
    table.add_column("metric")
    table.add_column("value (coverage)")
    from reconbench.metrics import METRICS

    for name, result in payload.metrics.items():
        arrow = METRICS[name].direction if name in METRICS else ""
        shown = result.format() if result.status == "computed" else (result.note or "not computed")
        table.add_row(escape(f"{name} {arrow}"), escape(shown))
    console.print(table)
    console.print(f"wall time: {payload.provenance.wall_seconds:.1f} s on {payload.provenance.device}")
    console.print(f"signed result:   {escape(output.folder / 'result.json')}")
    console.print(f"reconstructions: {escape(output.folder / 'reconstructions.safetensors')}")


@app.command()
def keygen(path: Optional[Path] = typer.Argument(None, help="private key file (default ~/.config/reconbench/keys/ed25519.pem)")) -> None:
    """Create an ed25519 signing key (private file mode 0600; never overwrites)."""
    from reconbench.signing import default_key_path, generate_key, key_id

    written, public = generate_key(path or default_key_path())
    console.print(f"private key: {escape(written)} (mode 0600, keep it secret)")
    console.print(f"public key:  ed25519 {public}  (key id {key_id(public)})")


@app.command()
def verify(result: Path = typer.Argument(..., help="result folder or its result.json")) -> None:
    """Check a result's signature and its reconstruction file's hash."""
    from reconbench.results import verify_result_dir

    parsed = verify_result_dir(result)
    console.print(f"OK: {escape(parsed.payload.entry_id)} signed by key {parsed.signature.key_id}; reconstructions match their sha256")


@app.command()
def tracks(
    status: Optional[str] = typer.Option(None, help="only tracks of this status: embedded, published, unpublished"),
) -> None:
    """List the tracks of the registry (the SoK's grid included) with their status and scenarios."""
    from reconbench.tracks import all_tracks

    table = Table(title="tracks")
    for col in ("id", "status", "dataset", "architecture", "|D_tar|", "accuracy train/test", "scenarios"):
        table.add_column(col)
    for t in all_tracks():
        if status and t.status != status:
            continue
        acc = f"{t.train_accuracy:.3f} / {t.test_accuracy:.3f}" if t.train_accuracy is not None else "-"
        size = f"{t.train_size}" + (f" (update {t.update_size})" if t.update_size else "")
        arch = t.architecture + (f" [{t.variant}]" if t.variant else "")
        table.add_row(*map(escape, (t.id, t.status, t.dataset, arch, size, acc, "\n".join(t.scenarios))))
    console.print(table)


@app.command()
def attacks(name: Optional[str] = typer.Argument(None, help="an attack: show its options, types, ranges and budget presets")) -> None:
    """List the attacks with their paper, family and taxonomy cells (`attacks NAME`: its options).

    The list comes from the catalogue (no attack code is imported); NAME loads that attack's class.
    """
    from reconbench.catalogue import CATALOGUE

    if name:
        from reconbench.commands.attack_info import print_attack

        return print_attack(name)

    table = Table(title="attacks")
    for col in ("name", "family", "scenarios (training/access/data)", "paper"):
        table.add_column(col)
    for a in CATALOGUE:
        table.add_row(*map(escape, (a.name, a.family, "\n".join(a.scenarios), a.paper)))
    console.print(table)


@app.command()
def metrics() -> None:
    """List every metric with its formula, range and direction."""
    from reconbench.metrics import METRICS

    table = Table(title="metrics")
    for col in ("name", "dir", "level", "range", "formula"):
        table.add_column(col)
    for m in METRICS.values():
        table.add_row(*map(escape, (m.name, m.direction, m.level, m.range, m.formula)))
    console.print(table)
    for m in METRICS.values():  # what to know beside the number (the SSIM convention, the accuracy caveat)
        if m.caveat:
            console.print(f"[bold]{escape(m.name)}[/]: {escape(m.caveat)}")


@app.command()
def version() -> None:
    """Print the toolkit version."""
    console.print(__version__)


def _register_groups() -> None:
    import importlib

    from reconbench.commands import MODULES

    for name in MODULES:
        importlib.import_module(f"reconbench.commands.{name}").register(app)


_register_groups()


def main() -> None:
    """The console script: `--debug` is accepted anywhere on the line, not only before the command."""
    argv = sys.argv[1:]
    if "--debug" in argv:
        argv = ["--debug"] + [a for a in argv if a != "--debug"]
    app(args=argv, prog_name="recon-submit")


if __name__ == "__main__":
    main()
