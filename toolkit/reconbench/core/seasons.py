"""Seasons of sealed tracks (registry/seasons.json): which scheme each uses and whether it still seals anything.

A *burned* season's membership can be read from public files (2026-s1: its models and pools are public,
and a model's loss tells its members apart), so its draws are public practice draws: they run and are
scored like any track, and no page gives them a verdict, badge or rank (issue 43). A *sealed* season keeps
its draws' models encrypted and its pools secret until `reveal_after`; the board runs entries on them.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

SEASONS_FILE = "seasons.json"


@lru_cache(maxsize=1)
def seasons() -> dict[str, dict]:
    text = (resources.files("reconbench") / "registry" / SEASONS_FILE).read_text(encoding="utf-8")
    return {s["id"]: s for s in json.loads(text)["seasons"]}


def burned(season: str) -> bool:
    """True when the season's membership is public (its draws give no verdict anywhere)."""
    return seasons().get(season, {}).get("status") == "burned"


def burned_why(season: str) -> str | None:
    return seasons().get(season, {}).get("why") if burned(season) else None
