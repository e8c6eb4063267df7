"""Model memorization of an embedded track's target (SoK Eq. 2), by retraining its recipe on subsets.

Feldman & Zhang's estimator lives in metrics/memorization.py; this module only supplies the
training: the track's own recipe (models/embedded.py) on each random subset of its target set.
Hub tracks estimate it at training time instead (`recon-submit targets train --memorization K`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from reconbench.image.metrics.memorization import Memorization, draw_subsets, from_predictions
from reconbench.image.models.embedded import EMBEDDED_TARGETS
from reconbench.image.models.registry import build_model
from reconbench.image.models.training import TrainConfig, train_classifier
from reconbench.core.tracks import Track, TrackError
from reconbench.image.track_files import load_splits

_RECIPES = {"digits/" + f"{name}.safetensors": (arch, kwargs, cfg) for name, (arch, kwargs, cfg) in EMBEDDED_TARGETS.items()}


def _recipe(track: Track, epochs: int | None):
    if track.source is None or track.source.kind != "embedded" or track.source.model_file not in _RECIPES:
        raise TrackError(
            f"track '{track.id}': memorization is estimated here for the embedded Adam-trained digits targets; "
            "for Hub tracks use `recon-submit targets train TRACK --memorization K`"
        )
    arch, kwargs, config = _RECIPES[track.source.model_file]
    if epochs is not None:
        config = TrainConfig(**{**config.__dict__, "epochs": epochs})
    return arch, kwargs, config


def train_and_predict(track_id: str, subset: np.ndarray, epochs: int | None = None, device: str = "cpu") -> np.ndarray:
    """One model of the estimator: the track's recipe on `subset` of its target set; its predicted
    labels of the whole target set. A plain function of picklable arguments, so that a Ray worker runs it
    exactly as this process would (the model's seed comes from the subset, not from where it runs)."""
    import torch

    from reconbench.core.tracks import get_track

    track = get_track(track_id)
    arch, kwargs, config = _recipe(track, epochs)
    target = load_splits(track, ["target"]).target
    cfg = TrainConfig(**{**config.__dict__, "seed": config.seed + int(subset.sum()) % 10_000})
    torch.manual_seed(cfg.seed)  # the initial weights too: before, they came from whatever the global RNG held
    model = train_classifier(build_model(arch, **kwargs), target.subset(subset), cfg, device=device)
    with torch.no_grad():
        return model(target.as_float(device)).argmax(1).cpu().numpy()


def track_memorization(track: Track, *, n_models: int, seed: int = 0, epochs: int | None = None,
                       device: str = "cpu", ray: bool = False, address: str | None = None,
                       on_model: Callable[[], None] | None = None) -> Memorization:
    """Feldman-Zhang on the embedded track; `ray=True` trains the K models as Ray tasks (local Ray,
    or the cluster at `address`), with the same subsets and seeds, so the same numbers."""
    _recipe(track, epochs)  # refuse a track without a recipe before training anything
    labels = load_splits(track, ["target"]).target.labels
    subsets = draw_subsets(len(labels), n_models, seed=seed)
    calls = [(track.id, subset, epochs, device) for subset in subsets]
    if ray:
        from reconbench.sweep.cluster import ray_map

        predictions = ray_map(train_and_predict, calls, device=device, address=address,
                              on_done=(lambda i, _: on_model()) if on_model else None)
    else:
        predictions = []
        for call in calls:
            predictions.append(train_and_predict(*call))
            if on_model:
                on_model()
    return from_predictions(predictions, subsets, labels)
