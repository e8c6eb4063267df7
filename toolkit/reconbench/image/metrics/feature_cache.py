"""On-disk cache of Inception features of target sets, keyed by content.

A target set is scored again and again (every submission on a track), so its features are
computed once. Key = sha256 over (dtype, shape, uint8 bytes) of the image array, stored under
a folder named by the extractor's tag (weights digest + feature layer): features of stand-in
weights can never be served for the real network. Files are safetensors (no pickle); writes
go through a temporary file and an atomic rename; a file that fails to load or does not match
is recomputed and overwritten.

Location: $RECONBENCH_CACHE/features, default ~/.cache/reconbench/features (reconbench.core.cache.cache_root).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file


def default_cache_dir() -> Path:
    from reconbench.core.cache import cache_root

    return cache_root() / "features"


def content_key(images: torch.Tensor) -> str:
    """sha256 of the uint8 array's bytes and its shape."""
    h = hashlib.sha256()
    h.update(f"uint8{tuple(images.shape)}".encode())
    h.update(images.contiguous().numpy().tobytes())
    return h.hexdigest()


def cached_features(extractor, images: torch.Tensor, cache_dir: str | os.PathLike | None = None) -> tuple[np.ndarray, bool]:
    """(features, True if they came from the cache). `extractor` needs .tag, .dims, .features()."""
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = folder / extractor.tag / f"{content_key(images)}.safetensors"
    if path.is_file():
        try:
            feats = load_file(str(path))["features"]
            if tuple(feats.shape) == (images.shape[0], extractor.dims):
                return feats.numpy(), True
        except Exception:  # truncated or foreign file: fall through and rewrite it
            pass
    feats = extractor.features(images)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(fd)
    try:
        save_file({"features": torch.from_numpy(np.ascontiguousarray(feats))}, tmp, metadata={"tag": extractor.tag})
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return feats, False
