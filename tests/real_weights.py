"""Where the real backbone files are on this machine, if anywhere, read at collection time (before
conftest points RECONBENCH_CACHE and the rest at private test folders)."""

from __future__ import annotations

from pathlib import Path

from reconbench.image.metrics.weights import WeightSpec, conversion_source, hub_checkpoint_dir, weights_cache_dir


def real_weights_dir(spec: WeightSpec) -> Path | None:
    """The toolkit cache (a conversion of the pinned file) or the torch hub folder (the file itself)."""
    cached = weights_cache_dir() / spec.safetensors_name
    if cached.is_file() and conversion_source(cached) == spec.sha256:
        return cached.parent
    if (hub_checkpoint_dir() / spec.filename).is_file():
        return hub_checkpoint_dir()
    return None
