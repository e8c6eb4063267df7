"""Each track's calibration of the board's two tests (benchmarks/calibrate_tracks.py writes it to
reconbench/data/calibration.json; the track's board shows it, leaderboard.md.j2). Read, never computed
here: the site build stays fast, and the numbers are those the script measured."""

from __future__ import annotations

import json
import logging
from functools import lru_cache
from importlib import resources

log = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def _all() -> dict:
    path = resources.files("reconbench") / "data" / "calibration.json"
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("tracks", {})
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("%s: unreadable calibration (%s): boards show none", path, exc)
        return {}


def track_calibration(track_id: str) -> dict | None:
    return _all().get(track_id)
