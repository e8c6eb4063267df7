"""Model memorization of an embedded track's target (SoK Eq. 2), by retraining its recipe on subsets.

Feldman & Zhang's estimator lives in metrics/memorization.py; this module only supplies the
training: the track's own recipe (models/embedded.py) on each random subset of its target set.
Hub tracks estimate it at training time instead (`recon-submit targets train --memorization K`).
"""

from __future__ import annotations

import numpy as np

from reconbench.metrics.memorization import Memorization, estimate_memorization
from reconbench.models.embedded import EMBEDDED_TARGETS
from reconbench.models.registry import build_model
from reconbench.models.training import TrainConfig, train_classifier
from reconbench.tracks import Track, TrackError
from reconbench.track_files import load_splits

_RECIPES = {"digits/" + f"{name}.safetensors": (arch, kwargs, cfg) for name, (arch, kwargs, cfg) in EMBEDDED_TARGETS.items()}


def track_memorization(track: Track, *, n_models: int, seed: int = 0, epochs: int | None = None,
                       device: str = "cpu") -> Memorization:
    if track.source is None or track.source.kind != "embedded" or track.source.model_file not in _RECIPES:
        raise TrackError(
            f"track '{track.id}': memorization is estimated here for the embedded Adam-trained digits targets; "
            "for Hub tracks use `recon-submit targets train TRACK --memorization K`"
        )
    arch, kwargs, config = _RECIPES[track.source.model_file]
    if epochs is not None:
        config = TrainConfig(**{**config.__dict__, "epochs": epochs})
    target = load_splits(track, ["target"]).target
    x = target.as_float(device)

    def train_fn(indices: np.ndarray):
        cfg = TrainConfig(**{**config.__dict__, "seed": config.seed + int(indices.sum()) % 10_000})
        model = train_classifier(build_model(arch, **kwargs), target.subset(indices), cfg, device=device)

        def predict(idx: np.ndarray) -> np.ndarray:
            import torch

            with torch.no_grad():
                return model(x[idx]).argmax(1).cpu().numpy()

        return predict

    return estimate_memorization(train_fn, target.labels, n_models=n_models, seed=seed)
