"""Where the toolkit caches what it can rebuild: $RECONBENCH_CACHE, default ~/.cache/reconbench."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    root = os.environ.get("RECONBENCH_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "reconbench"
