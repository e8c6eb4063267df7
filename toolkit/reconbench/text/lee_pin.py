"""The command line of the two lee-news recipes, and pinning what they build in the text registry (`--pin`)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from reconbench.text.tracks import TextRegistry, text_registry_path
from reconbench.core.tracks import TrackError
from reconbench.zoo.registry_file import read_registry_file, upsert_track

TRACK_ID = "lee-news"


def pin_lee_model(role: str, entry: dict[str, Any], path: Path | None = None) -> Path:
    """Replace the lee-news row's `role` entry (files, sha256s, measured) and rewrite the registry
    atomically, validated against the text-registry schema; no other row is touched."""
    path = Path(path or text_registry_path())
    rows = [t for t in read_registry_file(path)["tracks"] if t.get("id") == TRACK_ID]
    if not rows:
        raise TrackError(f"{path}: no '{TRACK_ID}' row to pin the {role} in")
    upsert_track(path, {**rows[0], role: entry}, TextRegistry)
    return path


def recipe_main(argv: Sequence[str] | None, *, prog: str, doc: str, role: str, training: dict[str, Any],
                build: Callable[..., dict[str, Any]], entry: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]) -> None:
    """`--out FOLDER --epochs N --pin`: build(out, training=..., progress=print), print the summary,
    and with --pin record the files' sha256 and the measured figures as the row's `role` entry."""
    from reconbench.core.tracks import embedded_file

    parser = argparse.ArgumentParser(prog=prog, description=doc.split("\n")[0])
    parser.add_argument("--out", type=Path, default=embedded_file("lee-news"), help="folder for the built files")
    parser.add_argument("--epochs", type=int, default=training["epochs"])
    parser.add_argument("--pin", action="store_true", help="record the files' sha256 and measured figures in the registry")
    args = parser.parse_args(argv)
    training = {**training, "epochs": args.epochs}
    summary = build(args.out, training=training, progress=lambda m: print(m, flush=True))
    print(json.dumps(summary, indent=2))
    if args.pin:
        print(pin_lee_model(role, entry(summary, training)))
