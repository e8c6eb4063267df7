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

from reconbench._version import __version__
from reconbench.api import evaluate_command  # noqa: F401 - also used by reconbench.sweep
from reconbench.cli.commands.weights import apply_offline, offline_option, weights_dir_option
from reconbench.core.console import CliGroup, console, conventional_help, escape, fail, rich_task

conventional_help()

app = typer.Typer(
    cls=CliGroup, no_args_is_help=True, pretty_exceptions_enable=False,
    help="ReconBench: evaluate data reconstruction attacks and submit signed results.",
)


@app.callback()
def _options(debug: bool = typer.Option(False, "--debug", help="show the full traceback of an error")) -> None:
    """ReconBench: evaluate data reconstruction attacks and submit signed results."""


def __getattr__(name: str):  # USER_ERRORS, computed when asked: importing them all would import torch
    if name == "USER_ERRORS":
        from reconbench.core.errors import user_error_types

        return user_error_types()
    raise AttributeError(name)


def parse_limits(items: list[str]) -> dict[str, str] | None:
    """`--limit memory=64GiB --limit wall=24h` (values checked against the budget's limits by the run)."""
    from reconbench.pipeline.isolation.limits import parse_overrides as parse

    return parse(items) or None


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


@app.command()
def evaluate(
    track: str = typer.Option("digits", help="track id (see `recon-submit tracks`)"),
    attack: str = typer.Option("deepdream", help="attack name (see `recon-submit attacks`), or path/to/file.py:ClassName"),
    scenario: Optional[str] = typer.Option(None, help="training/access/data, e.g. static/white-box/none; default: the first of the attack's scenarios that the track offers"),
    seed: int = typer.Option(0, help="seed of every random choice of the attack (recorded in the result)"),
    device: str = typer.Option("cpu", help="cpu, cuda, cuda:1, mps (checked before the run)"),
    out: Optional[Path] = typer.Option(None, help="output folder, must not exist (default ./recon-results/<entry-id>/)"),
    key: Optional[Path] = typer.Option(None, help="ed25519 private key (default: keygen's, created on first use)"),
    set_: list[str] = typer.Option([], "--set", help="attack option, key=value (repeatable; applied on top of --budget; `recon-submit attacks NAME` lists the options, types and defaults)"),
    budget: str = typer.Option("default", help="budget preset: quick (the fewest steps: for trying things out), default, paper (the paper's full budget)"),
    surrogate: Optional[str] = typer.Option(None, help="run a white-box attack in a black-box cell through a stolen surrogate: dfme or aux (--set surrogate.KEY=VALUE configures it)"),
    weights_dir: Optional[Path] = weights_dir_option(),
    offline: bool = offline_option(),
    quiet: bool = typer.Option(False, help="no progress bar"),
    limit: list[str] = typer.Option([], "--limit", help="raise one of the attack's resource limits above its budget's, NAME=VALUE (repeatable; memory, pids, cpu, wall, tmp, shm, e.g. memory=64GiB wall=24h; recorded in the result: docs/sandbox.md)"),
    threads: Optional[int] = typer.Option(None, min=1, help="torch threads for this run and the attack's process "
                                          "(default: RECONBENCH_THREADS, else torch's default capped at the CPUs "
                                          "this process may use; docs/performance.md)"),
    draws: Optional[str] = typer.Option(None, help="with a sealed twin as --track (e.g. fashion-n100-sealed): all "
                                        "(the default; what the board's verdict needs) or N, the first N draws; one "
                                        "signed result per draw, in --out/<draw>/ (docs/sealed.md)"),
) -> None:
    """Run an attack on a track, score it, and write a signed result folder (one per draw on a sealed twin).

    Example: recon-submit evaluate --track digits --attack mi-face --budget quick --out runs/mi-face
    """
    apply_offline(offline)
    from reconbench.api import check_track_and_key, evaluate as run, evaluate_draws
    from reconbench.core.signing import default_key_path, generate_key
    from reconbench.core.threads import set_threads
    from reconbench.core.tracks import pick_draws, sealed_draws

    set_threads(threads)  # the attack's process gets the same count (isolation/parent.py)
    if key is None and not default_key_path().exists():
        generate_key(default_key_path())
        console.print(f"Created a signing key: [bold]{escape(default_key_path())}[/] (public key: {escape(default_key_path())}.pub)")
    twin = bool(draws is not None or sealed_draws(track))
    check_track_and_key(pick_draws(track, draws or "all")[0].id if twin else track, key or default_key_path())
    from reconbench.image.attacks import Progress  # torch: after the checks that need none
    common = dict(scenario=scenario, seed=seed, device=device, key=key, options=parse_overrides(set_), budget=budget,
                  weights_dir=weights_dir, surrogate=surrogate, progress=Progress(None if quiet else rich_task),
                  limits=parse_limits(limit))
    command_for = lambda t: evaluate_command(t, attack, scenario, seed, device, set_, budget, surrogate)  # noqa: E731
    outputs = (evaluate_draws(attack, track, draws=draws or "all", out=out, command_for_track=command_for, **common)
               if twin else [run(attack, track, out=out, command=command_for(track), **common)])
    for output in outputs:
        _print_run(output)
    if twin:  # N of K draws ran, what a partial run means, what comes next and when the score is published
        from reconbench.core.sealed_next import ran_line

        from reconbench.core.console import invoked_as

        console.print(escape(ran_line([o.result.payload.track for o in outputs]) or ""), highlight=False, soft_wrap=True)
        for o in outputs:
            console.print(f"  {escape(invoked_as())} submit {escape(shlex.quote(str(o.folder)))} --team YOUR-TEAM",
                          highlight=False, soft_wrap=True)


def _print_run(output) -> None:
    payload = output.result.payload
    from reconbench.cli.commands.metric_table import print_metrics
    from reconbench.image.metrics import METRICS

    from reconbench.core.attack_source import is_file_attack, own_attack_label

    attack = payload.attack
    shown = own_attack_label(attack.code, attack.name) if is_file_attack(attack.code) else attack.name
    print_metrics(console, f"{shown} on {payload.track} ({payload.scenario})", payload.metrics,
                  {name: info.direction for name, info in METRICS.items()})  # the text metrics are all ↑
    from reconbench.cli.commands.verdict import print_verdict

    print_verdict(console, payload)  # the membership gap and the board's verdict, where the run ends
    console.print(f"wall time: {payload.provenance.wall_seconds:.1f} s on {payload.provenance.device}; "
                  f"sandbox: {escape(payload.provenance.sandbox or 'none')}")
    console.print(f"signed result:   {escape(output.folder / 'result.json')}")
    console.print(f"reconstructions: {escape(output.folder / payload.reconstructions.file)}")


@app.command()
def keygen(path: Optional[Path] = typer.Argument(None, help="private key file (default ~/.config/reconbench/keys/ed25519.pem)")) -> None:
    """Create an ed25519 signing key (private file mode 0600). An existing key is never overwritten:
    its public key is printed instead.

    Example: recon-submit keygen            (then: recon-submit pubkey)
    """
    from reconbench.core.signing import default_key_path, generate_key, key_id

    target = path or default_key_path()
    if target.exists():
        pubkey(target)
        console.print("(it exists already and was left as it is; keygen never overwrites a key)", highlight=False)
        return
    written, public = generate_key(target)
    console.print(f"private key: {escape(written)} (mode 0600, keep it secret)")
    console.print(f"public key:  ed25519 {public}  (key id {key_id(public)})")


@app.command()
def pubkey(path: Optional[Path] = typer.Argument(None, help="private key file (default: keygen's)")) -> None:
    """Print the public part of your signing key (what team.toml lists).

    Example: recon-submit pubkey
    """
    from reconbench.core.signing import default_key_path, key_id, load_private_key, public_key_b64

    target = path or default_key_path()
    public = public_key_b64(load_private_key(target).public_key())
    console.print(f"key:         {escape(target)}")
    console.print(f"public key:  ed25519 {public}  (key id {key_id(public)})")


@app.command()
def verify(result: Path = typer.Argument(..., help="result folder or its result.json")) -> None:
    """Check a result's signature and its reconstruction file's hash.

    Example: recon-submit verify recon-results/ENTRY
    """
    from reconbench.core.errors import UserError
    from reconbench.text.results import verify_any_result_dir

    if result.suffix in (".safetensors", ".jsonl"):
        raise UserError(f"{result}: pass the result folder (or its result.json), not the reconstructions file: "
                        f"recon-submit verify {result.parent}")
    parsed = verify_any_result_dir(result)
    console.print(f"OK: {escape(parsed.payload.entry_id)} signed by key {parsed.signature.key_id}; reconstructions match their sha256")


@app.command()
def tracks(
    status: Optional[str] = typer.Option(None, help="only tracks of this status: embedded, published, unpublished"),
    all_: bool = typer.Option(False, "--all", help="also the planned (unpublished) tracks of the SoK grid"),
) -> None:
    """List the tracks you can run (embedded and published); --all adds the planned ones.

    Example: recon-submit tracks --all
    """
    from reconbench.cli.commands.listing import print_tracks

    print_tracks(status=status, include_planned=all_)


@app.command()
def attacks(name: Optional[str] = typer.Argument(None, help="an attack: show its options, types, ranges and budget presets")) -> None:
    """List the attacks with their paper, family and taxonomy cells (`attacks NAME`: its options).

    The list comes from the catalogue (no attack code is imported); NAME loads that attack's class.

    Example: recon-submit attacks mi-face
    """
    from reconbench.core.catalogue import CATALOGUE, TEXT_CATALOGUE

    if name:
        from reconbench.cli.commands.attack_info import print_attack

        return print_attack(name)

    table = Table(title="attacks")
    for col in ("name", "family", "scenarios (training/access/data)", "paper"):
        table.add_column(col)
    for a in (*CATALOGUE, *TEXT_CATALOGUE):  # text attacks: their cell says which target model they attack
        table.add_row(*map(escape, (a.name, a.family, "\n".join(a.cells), a.paper)))
    console.print(table)


@app.command()
def metrics() -> None:
    """List every metric (image and text) with its formula, range and direction.

    Example: recon-submit metrics
    """
    from reconbench.image.metrics import METRICS

    table = Table(title="metrics")
    for col in ("name", "dir", "level", "range", "formula"):
        table.add_column(col)
    for m in METRICS.values():
        table.add_row(*map(escape, (m.name, m.direction, m.level, m.range, m.formula)))
    console.print(table)
    for m in METRICS.values():  # what to know beside the number (the SSIM convention, the accuracy caveat)
        if m.caveat:
            console.print(f"[bold]{escape(m.name)}[/]: {escape(m.caveat)}")
    from reconbench.cli.commands.listing import print_text_metrics

    print_text_metrics()


@app.command()
def version() -> None:
    """Print the toolkit version.

    Example: recon-submit version
    """
    console.print(__version__)


def _register_groups() -> None:
    import importlib

    from reconbench.cli.commands import MODULES

    for name in MODULES:
        importlib.import_module(f"reconbench.cli.commands.{name}").register(app)


_register_groups()


def main() -> None:
    """The console script: `--debug` is accepted anywhere on the line, not only before the command."""
    argv = sys.argv[1:]
    if "--debug" in argv:
        argv = ["--debug"] + [a for a in argv if a != "--debug"]
    app(args=argv, prog_name="recon-submit")


if __name__ == "__main__":
    main()
