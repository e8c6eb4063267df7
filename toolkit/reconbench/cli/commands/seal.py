"""`recon-submit seal`: the board's sealed runs (reconbench.submissions.sealed_run), and the end of a season
(reconbench.submissions.seal_reveal).

    seal run SUBMISSION --seal-key KEY [--device cpu|cuda] --out PRIVATE   the board runs a sealed submission
    seal check SUBMISSION...                                                check sealed submissions as data
    seal check-runs [--root submissions]                                    check the committed run records
    seal reveal --seal-key KEY --season S --out reveal.json   publish the season's key, with the commitments it opens
    seal verify reveal.json [--runs-out PRIVATE]               open every commitment, recompute every sealed.json
                                                               and run record, decrypt and check every encrypted
                                                               weight file (v2)

A v2 season (2026-s2 on) publishes its season key, derived from the board's key, never the board's key itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from reconbench.cli.commands.seal_key import read_seal_key
from reconbench.core.console import console, escape, fail


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Sealed tracks: publish a season's key, verify what the board published with it.\n\n"
                             "Example: recon-submit seal verify reveal.json",
                        no_args_is_help=True)
    app.add_typer(group, name="seal")
    group.command("check")(check_submissions)
    group.command("run")(run)
    group.command("check-runs")(check_runs)
    group.command("pack-output")(pack_output)
    group.command("unpack-output")(unpack_output)
    group.command("reveal")(reveal)
    group.command("verify")(verify)


def run(
    submission: Path = typer.Argument(..., help="sealed-submissions/<season>/<team>/<run>/submission.toml"),
    seal_key: Path = typer.Option(..., "--seal-key", help="the board's seal key (CI's secret)"),
    device: str = typer.Option("cpu", help="cpu, or cuda on a maintainer's GPU runner (GPU budgets)"),
    out: Path = typer.Option(Path("sealed-run-output"), help="the board's private folder for the runs' result folders "
                                                            "(never committed; published after the reveal)"),
    root: Path = typer.Option(Path("submissions"), help="the submissions folder: the record goes to its sealed-runs/"),
) -> None:
    """The board runs a sealed submission's attack on every draw of its twin, in the sandbox, scores it with the
    key and writes one signed record of numbers (docs/sealed.md, "The board's sealed run").

    Example: recon-submit seal run sealed-submissions/2026-s2/my-lab/first/submission.toml --seal-key ../shared/secrets/seal.key --out /tmp/private
    """
    from reconbench.core.seal import SealError
    from reconbench.submissions.sealed_run import SealedRunError, run as run_sealed
    from reconbench.submissions.sealed_submission import SealedSubmissionError

    key = read_seal_key(seal_key)
    try:
        done = run_sealed(submission, key, out=out, root=root, device=device, seal_key_path=seal_key,
                          echo=lambda line: console.print(escape(line)))
    except (SealedRunError, SealedSubmissionError, SealError) as exc:
        fail(str(exc))
    record = done.record
    scored = sum(d.status == "scored" for d in record.draws)
    console.print(f"{escape(str(done.path))}: {scored} of {len(record.draws)} draws scored; "
                  f"{escape(record.tier or 'no verdict (a draw was not scored)')}"
                  + (f" {record.extracts}" if record.extracts is not None else ""))
    console.print(f"private output (not for the repository before the reveal): {escape(str(done.out))}")


def check_submissions(
    paths: Optional[list[Path]] = typer.Argument(None, help="sealed submissions, or files inside them"),
    paths_from: Optional[Path] = typer.Option(None, help="file listing paths (one a line, or NUL-separated)"),
) -> None:
    """Check sealed submissions as data, before the board runs them: the format, the twin, the attack's files.

    Example: recon-submit seal check sealed-submissions/2026-s2/my-lab/first/submission.toml
    """
    from reconbench.cli.commands.submission import _read_paths
    from reconbench.submissions.sealed_submission import check

    given = list(paths or []) + (_read_paths(paths_from) if paths_from is not None else [])
    found = check(given)
    for path, why in found:
        console.print(f"OK   {escape(str(path))}" if why is None else f"FAIL {escape(why)}")
    if not found:
        console.print("no sealed submission among the paths")
    if any(why is not None for _, why in found):
        raise typer.Exit(1)


def pack_output(
    folder: Path = typer.Argument(..., help="the private output of `seal run` (--out)"),
    seal_key: Path = typer.Option(..., "--seal-key", help="the board's seal key (CI's secret)"),
    season: str = typer.Option(..., help="the season of the runs in it"),
    to: Path = typer.Option(..., help="the encrypted archive to write"),
) -> None:
    """Encrypt a run output into one archive under a key derived from the season's key (the CI artifact).

    Example: recon-submit seal pack-output sealed-run-output --seal-key ../shared/secrets/seal.key --season 2026-s2 --to out.sealed
    """
    from reconbench.submissions.sealed_run import pack_output as pack

    if not folder.is_dir():
        fail(f"{folder}: no such folder")
    pack(folder, read_seal_key(seal_key), season, to)
    console.print(f"{escape(str(to))}: the run output, encrypted (opened by the season's key after the reveal)")


def unpack_output(
    archive: Path = typer.Argument(..., help="an archive written by `seal pack-output`"),
    reveal_file: Path = typer.Option(..., "--reveal", help="the season's reveal file (recon-submit seal reveal)"),
    to: Path = typer.Option(..., help="a new folder to unpack into"),
) -> None:
    """Open a run output archive with a season's revealed key (then `seal verify --runs-out`).

    Example: recon-submit seal unpack-output out.sealed --reveal reveal.json --to runs-out
    """
    from reconbench.core.seal import SealError
    from reconbench.submissions.sealed_run import unpack_output as unpack
    from reconbench.submissions.seal_reveal import read_reveal

    if to.exists():
        fail(f"{to}: already exists")
    try:
        key, season = read_reveal(reveal_file)
        if not isinstance(key, bytes):  # a v1 season's reveal: per-draw openings, no season key (no board runs)
            fail(f"{reveal_file}: season {season} publishes no season key; run outputs are those of v2 seasons")
        unpack(archive, key, season, to)
    except SealError as exc:
        fail(str(exc))
    console.print(f"{escape(str(to))}: the run output of season {escape(season)}")


def check_runs(
    root: Path = typer.Option(Path("submissions"), help="the submissions folder"),
) -> None:
    """Check every sealed run record: schema, the board's signature, the twin's draws, the run limit.

    Example: recon-submit seal check-runs
    """
    from reconbench.submissions.sealed_run_check import check_runs as checked

    found = checked(root)
    for c in found:
        console.print(f"{'OK  ' if c.ok else 'FAIL'} {escape(c.message)}")
    if not found:
        console.print(f"no sealed run record under {escape(str(root))}")
    if not all(c.ok for c in found):
        raise typer.Exit(1)


def reveal(
    seal_key: Path = typer.Option(..., "--seal-key", help="the board's key (the CI secret); a v2 season publishes the season key derived from it"),
    season: str = typer.Option(..., help="the season whose key is published (registry: seal.season)"),
    out: Path = typer.Option(..., help="where to write the reveal file (key + the commitments it opens)"),
) -> None:
    """Publish a season's key, after checking it opens every commitment of the season.

    Example: recon-submit seal reveal --seal-key ../shared/secrets/seal.key --season 2026-s2 --out reveal.json
    """
    from reconbench.core.seal import SealError
    from reconbench.submissions.seal_reveal import reveal as write

    try:
        document = write(read_seal_key(seal_key), season, out)
    except SealError as exc:
        fail(str(exc))
    console.print(f"{escape(str(out))}: the key of season {escape(season)}, opening "
                  f"{len(document['commitments'])} sealed draws")


def verify(
    reveal_file: Path = typer.Argument(..., help="a reveal file written by `recon-submit seal reveal`"),
    root: Path = typer.Option(Path("submissions"), help="the submissions folder"),
    runs_out: Optional[Path] = typer.Option(None, "--runs-out", help="the board's published output of its sealed runs: "
                                                                     "recompute every run record from it too"),
) -> None:
    """Open every commitment of the revealed season and recompute every published sealed.json (and run record).

    Example: recon-submit seal verify reveal.json
    """
    from reconbench.core.seal import SealError
    from reconbench.submissions.seal_reveal import read_reveal, verify as check

    try:
        key, season = read_reveal(reveal_file)
        opened, entries = check(key, season, root, runs_out=runs_out)
    except SealError as exc:
        fail(str(exc))
    console.print(f"season {escape(season)}: the key opens all {len(opened)} commitments")
    for v in entries:
        console.print(f"{'OK  ' if v.ok else 'FAIL'} {escape(v.entry)}: {v.message}")
    if not all(v.ok for v in entries):
        raise typer.Exit(1)
