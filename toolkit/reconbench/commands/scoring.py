"""`recon-submit score` and `recon-submit memorization`: the metric suite from the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from reconbench.commands.weights import apply_offline, offline_option, weights_dir_option
from reconbench.console import console, fail


def register(app: typer.Typer) -> None:
    app.command()(score)
    app.command()(memorization)


def score(
    reconstructions: Path = typer.Argument(..., help="a reconstructions.safetensors (uint8 images, int64 labels)"),
    track: str = typer.Option("digits", help="track whose target set to score against"),
    dynamic: bool = typer.Option(False, help="score against the update set (dynamic scenarios)"),
    device: str = typer.Option("cpu"),
    weights_dir: Optional[Path] = weights_dir_option(),
    offline: bool = offline_option(),
    as_json: bool = typer.Option(False, "--json", help="print the metrics as JSON"),
) -> None:
    """Score a reconstruction file produced elsewhere against a track's target set."""
    apply_offline(offline)
    from reconbench.io import FileFormatError
    from reconbench.metrics import METRICS
    from reconbench.metrics import score as run_score
    from reconbench.results import load_reconstructions
    from reconbench.tracks import TrackError, get_track, load_splits

    try:
        t = get_track(track)
        images, labels = load_reconstructions(reconstructions)
        part = "update" if dynamic else "target"
        target = getattr(load_splits(t, [part]), part)
        if target is None:
            raise TrackError(f"track '{track}' has no {part} set")
        if tuple(images.shape[1:]) != tuple(t.input_shape):
            raise FileFormatError(f"{reconstructions}: images are {tuple(images.shape[1:])}, track '{track}' needs {tuple(t.input_shape)}")
        if labels.size and (labels.min() < 0 or labels.max() >= t.num_classes):
            raise FileFormatError(f"{reconstructions}: labels outside 0..{t.num_classes - 1}")
        report = run_score(images, labels, target.images, target.labels, device=device, weights_dir=weights_dir, track=t)
    except (FileFormatError, TrackError, ValueError) as exc:
        fail(str(exc))
    if as_json:
        console.print_json(json.dumps(report.to_dict()))
        return
    table = Table(title=f"{reconstructions.name} vs {track} {part} set ({len(labels)} vs {len(target)})")
    table.add_column("metric")
    table.add_column("value (coverage)")
    for name, result in report.metrics.items():
        table.add_row(f"{name} {METRICS[name].direction}", result.format() if result.status == "computed" else (result.note or "not computed"))
    console.print(table)


def memorization(
    track: str = typer.Option("digits", help="an embedded track (Hub tracks: `targets train --memorization K`)"),
    models: int = typer.Option(20, help="K: models trained on random 70% subsets (Feldman & Zhang)"),
    seed: int = typer.Option(0),
    epochs: Optional[int] = typer.Option(None, help="override the recipe's epochs (faster, less faithful)"),
    device: str = typer.Option("cpu"),
    ray: bool = typer.Option(False, "--ray", help="train the K models as Ray tasks (pip install 'reconbench[cluster]')"),
    address: Optional[str] = typer.Option(None, help="with --ray: an existing Ray cluster (default: local Ray)"),
) -> None:
    """Estimate model memorization (SoK Eq. 2) of a track's target, for its track card."""
    import numpy as np

    from reconbench.console import rich_task
    from reconbench.models.memorization import track_memorization
    from reconbench.sweep.cluster import ClusterError
    from reconbench.tracks import TrackError, get_track

    try:
        with rich_task(f"memorization of {track}: models", models) as advance:
            mem = track_memorization(get_track(track), n_models=models, seed=seed, epochs=epochs, device=device,
                                     ray=ray, address=address, on_model=advance)
    except (ClusterError, TrackError, ValueError) as exc:
        fail(str(exc))
    finite = np.isfinite(mem.scores)
    console.print(f"model memorization of '{track}': {mem.model_level:.4f} "
                  f"({int(finite.sum())} of {len(mem.scores)} samples estimable with K={models})")
    console.print(f"to put it on the track's card: set \"memorization\": {round(mem.model_level, 4)} in the registry entry")
