"""The board's sealed runs (issue 43, item 1): what the board publishes when it runs a contributor's code
on every draw of a sealed twin of a v2 season.

A sealed submission is the attack, not its output: a registered name with its options, or an own
attack folder. The board's sealed job (`recon-submit seal run`, .github/workflows/sealed.yml) opens each
draw with the season's key, runs the attack in the sandbox on the draw's cell, scores what comes back
with the key, and writes one record per run, signed by the season's record signer
(core/seal.record_signer of the season key; the registry pins its public half per draw):

    submissions/sealed-runs/<season>/<team>/<run>/record.json

The record holds numbers only: per draw its status and the scored numbers; never the reconstructions
(they stay with the board until the reveal: pixels can carry the weights out) and never which outputs
matched which pool item. Each run's outcome is a few bits about membership, so a team has RUN_LIMIT runs
per twin and season (Kaggle's daily submission limits are the model); `runs_used` counts them from the
records the board committed.

Readers: the twin page (leaderboard/sealed.py), the held rule of open entries (an own attack's leakage
on an open track is confirmed only by a sealed run of the same source, `confirmed`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA = "reconbench-sealed-run/1"
RUNS_DIR = "sealed-runs"
RECORD_FILE = "record.json"
RUN_LIMIT = 5  # board runs per team, per sealed twin, per season (docs/sealed.md, "Threat model")


class SealedAttack(BaseModel):
    """What the board ran: a registered attack (name, options) or an own attack folder (its source hash)."""

    model_config = ConfigDict(extra="forbid")

    name: str  # the registered attack's name, or the own attack's class label
    source_sha256: str | None = None  # an own attack folder's core/attack_source.source_sha256; None: registered
    options: dict = Field(default_factory=dict)
    budget: str = "default"
    scenario: str
    seed: int = 0


class DrawOutcome(BaseModel):
    """One draw of the run. `held`/`failed` draws carry a reason and give the run no verdict."""

    model_config = ConfigDict(extra="forbid")

    track: str  # the draw's track id
    model_sha256: str  # the plaintext weights' hash (the registry's target_model_sha256)
    status: Literal["scored", "held", "failed"]
    reason: str | None = None  # held/failed: why, in counts only (never which outputs)
    metrics: dict = Field(default_factory=dict)  # the public metrics against the draw's pool (means)
    membership: dict | None = None  # per metric: gap, low, high, p (members against the pool's holdout half)
    extraction: dict | None = None  # image/sealed_scores.extraction_count's record, relabelling strata included
    # HMAC-SHA256(season key, "reconbench-seal/run-output/<track>/<sha256 of the reconstructions file>"): after the
    # reveal it ties the published output to this record; before it, it tells nothing (submissions/sealed_run.py)
    output_mac: str | None = None


class SealedRun(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: Literal["reconbench-sealed-run/1"] = Field(SCHEMA, alias="schema")
    season: str
    twin: str  # the sealed group (e.g. fashion-n100-sealed-s2)
    open_twin: str
    team: str
    run: str  # the run's name, unique per team and twin
    attack: SealedAttack
    device: str = "cpu"
    ran_at: str  # ISO time, UTC
    draws: list[DrawOutcome]
    tier: str | None = None  # core/verdict word across all draws; None unless every draw is scored
    extracts: int | None = None  # members extracted over the draws, when the tier is "extracts"
    signature: dict | None = None


def record_path(root: Path, season: str, team: str, run: str) -> Path:
    return Path(root) / RUNS_DIR / season / team / run / RECORD_FILE


def read_runs(root: Path) -> list[SealedRun]:
    """Every sealed run record under `root` (the submissions folder), unverified: see `verified_runs`."""
    runs = []
    for path in sorted((Path(root) / RUNS_DIR).glob(f"*/*/*/{RECORD_FILE}")):
        runs.append(SealedRun.model_validate(json.loads(path.read_text(encoding="utf-8"))))
    return runs


def decided(run: SealedRun) -> bool:
    """A run gives a verdict only when every draw of the twin was scored (a held or failed draw gives none)."""
    return run.tier is not None and bool(run.draws) and all(d.status == "scored" for d in run.draws)


def runs_used(runs: list[SealedRun], season: str, team: str, twin: str) -> int:
    return sum(1 for r in runs if (r.season, r.team, r.twin) == (season, team, twin))


def confirmed(runs: list[SealedRun]) -> dict[tuple[str, str], str]:
    """(own attack source_sha256, open twin) -> the tier a decided sealed run of that source earned: what lifts
    the hold on an own attack's leakage on the open track (issue 43, item 6)."""
    out: dict[tuple[str, str], str] = {}
    for r in runs:
        if r.attack.source_sha256 and decided(r):
            out[(r.attack.source_sha256, r.open_twin)] = r.tier
    return out
