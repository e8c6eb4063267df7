"""Where the toolkit caches what it can rebuild: one root for weights, features and GAN priors,
importable from the attack's process too (the metrics package is blocked there)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    root = os.environ.get("RECONBENCH_CACHE")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "reconbench"
