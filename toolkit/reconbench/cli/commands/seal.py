"""`recon-submit seal`: a season of sealed tracks ends (reconbench.submissions.seal_reveal).

    seal reveal --seal-key KEY --season S --out reveal.json   publish the season's key, with the commitments it opens
    seal verify reveal.json                                    open every commitment, recompute every sealed.json,
                                                               decrypt and check every encrypted weight file (v2)

A v2 season (2026-s2 on) publishes its season key, derived from the board's key, never the board's key itself.
"""

from __future__ import annotations

from pathlib import Path

import typer

from reconbench.core.console import console, escape, fail


def read_seal_key(path: Path) -> bytes:
    """The key at `path` (validate --seal-key, seal reveal), or one line naming the file and the problem."""
    from reconbench.core.seal import SealError, read_key

    try:
        return read_key(path)
    except SealError as exc:
        fail(str(exc))


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Sealed tracks: publish a season's key, verify what the board published with it.\n\n"
                             "Example: recon-submit seal verify reveal.json",
                        no_args_is_help=True)
    app.add_typer(group, name="seal")
    group.command("reveal")(reveal)
    group.command("verify")(verify)


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
) -> None:
    """Open every commitment of the revealed season and recompute every published sealed.json.

    Example: recon-submit seal verify reveal.json
    """
    from reconbench.core.seal import SealError
    from reconbench.submissions.seal_reveal import read_reveal, verify as check

    try:
        key, season = read_reveal(reveal_file)
        opened, entries = check(key, season, root)
    except SealError as exc:
        fail(str(exc))
    console.print(f"season {escape(season)}: the key opens all {len(opened)} commitments")
    for v in entries:
        console.print(f"{'OK  ' if v.ok else 'FAIL'} {escape(v.entry)}: {v.message}")
    if not all(v.ok for v in entries):
        raise typer.Exit(1)
