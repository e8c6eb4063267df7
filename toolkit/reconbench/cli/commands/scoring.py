"""`recon-submit score` and `recon-submit memorization`: the metric suite from the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from reconbench.cli.commands.weights import apply_offline, offline_option, weights_dir_option
from reconbench.core.console import console, escape, fail


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
    """Score a reconstruction file produced elsewhere against a track's target set.

    Example: recon-submit score recon-results/ENTRY/reconstructions.safetensors --track digits
    """
    apply_offline(offline)
    from reconbench.api import score as run_score
    from reconbench.image.metrics import METRICS

    report = run_score(reconstructions, track, dynamic=dynamic, device=device, weights_dir=weights_dir)
    if as_json:
        console.print_json(json.dumps(report.to_dict()))
        return
    part = "update" if dynamic else "target"
    from reconbench.cli.commands.metric_table import print_metrics

    print_metrics(console, f"{reconstructions.name} vs {track} {part} set", report.metrics,
                  {name: info.direction for name, info in METRICS.items()})


def memorization(
    track: str = typer.Option("digits", help="an embedded track (Hub tracks: `targets train --memorization K`)"),
    models: int = typer.Option(20, help="K: models trained on random 70% subsets (Feldman & Zhang)"),
    seed: int = typer.Option(0),
    epochs: Optional[int] = typer.Option(None, help="override the recipe's epochs (faster, less faithful)"),
    device: str = typer.Option("cpu"),
    ray: bool = typer.Option(False, "--ray", help="train the K models as Ray tasks (needs Ray: the cluster extra, installed from the checkout)"),
    address: Optional[str] = typer.Option(None, help="with --ray: an existing Ray cluster (default: local Ray)"),
) -> None:
    """Estimate model memorization (SoK Eq. 2) of a track's target, for its track card.

    Example: recon-submit memorization --track digits --models 4 --epochs 3
    """
    import numpy as np

    from reconbench.core.console import rich_task
    from reconbench.image.models.memorization import track_memorization
    from reconbench.sweep.cluster import ClusterError
    from reconbench.core.tracks import TrackError, get_track

    if models < 2:  # each sample must be inside some models' subsets and outside others'
        fail(f"--models {models}: the estimate needs at least 2 models (Feldman & Zhang use thousands; 20 is the default)")
    try:
        with rich_task(f"memorization of {track}: models", models) as advance:
            mem = track_memorization(get_track(track), n_models=models, seed=seed, epochs=epochs, device=device,
                                     ray=ray, address=address, on_model=advance)
    except (ClusterError, TrackError, ValueError) as exc:
        fail(str(exc))
    if not np.isfinite(mem.model_level):
        fail(f"no sample of '{track}' was both in and out of the {models} models' subsets: use more --models")
    finite = np.isfinite(mem.scores)
    console.print(f"model memorization of '{track}': {mem.model_level:.4f} "
                  f"({int(finite.sum())} of {len(mem.scores)} samples estimable with K={models})")
    console.print(f"to put it on the track's card: set \"memorization\": {round(mem.model_level, 4)} in the registry entry")
