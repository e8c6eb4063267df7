"""Machine-readable copies of the board: leaderboard.json, leaderboard.csv, the result-file JSON
Schema, and one shields.io endpoint badge per attack (https://shields.io/badges/endpoint-badge).
"""

from __future__ import annotations

import json
import math

import pandas as pd

from reconbench.leaderboard import leakage, seeds
from reconbench.leaderboard.frame import LABELS, rank_metric, ranked, safe_slug, sort_board
from reconbench.image.metrics import METRICS

DOWNLOADS_DIR = "downloads"
JSON_FILE = f"{DOWNLOADS_DIR}/leaderboard.json"
CSV_FILE = f"{DOWNLOADS_DIR}/leaderboard.csv"
SCHEMA_FILE = f"{DOWNLOADS_DIR}/result.schema.json"
BADGES_DIR = f"{DOWNLOADS_DIR}/badges"

# Columns of the downloads: everything a reader needs to redo a ranking, nothing internal
# (entry_dir is a build-machine path, page/gallery are site paths).
EXPORT = [
    "team", "team_name", "entry_id", "trust", "track", "dataset", "architecture", "train_size", "target_size",
    "scenario", "training", "access", "data", "attack", "attack_version", "family", "paper", "code", "registered",
    "budget", "date", "toolkit_version", "git_commit", "git_dirty", "seed", "device", "hardware", "command", "wall_seconds",
    "queries", "count", "seed_group",
    "position", "held_reason",
    # `<m>`: the verified value (recomputed by CI, or reproduced), the only one that ranks;
    # `<m>_claimed`: what the entry claims, verified or not.
] + [f"{m}{s}" for m in METRICS for s in ("", "_coverage", "_claimed", "_claimed_coverage")] + [
    # the membership gap (leaderboard/leakage.py), re-scored by CI against the holdout pinned by its sha256:
    # gap_<m> (positive = closer to the members), its 95% interval, p, both sides; lift_<m> over the
    # best reference baseline of the entry's cell; the verdict badge
    c for c in leakage.COLUMNS if c not in ("membership", "extraction", "recovery")]

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet reads as the start of a formula
TRUST_COLOR = {"reproduced": "brightgreen", "re-scored": "green", "signed": "yellow", "failed": "red"}


def plain(value):
    """JSON-ready scalar: NaN/NA -> None, timestamps -> ISO 8601, numpy -> Python."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def records(frame: pd.DataFrame) -> list[dict]:
    return [{col: plain(row[col]) for col in EXPORT} for _, row in frame.iterrows()]


def leaderboard_json(frame: pd.DataFrame, references: dict | None = None) -> str:
    doc = {
        "schema_version": 1,
        "description": "All ReconBench entries (failed ones included, with trust 'failed' and no metrics); "
                       "metric values are the SoK's S-Dis / FID, *_coverage the coverage alpha in [0, 1]; <m> is "
                       "the verified value (the only one that ranks), <m>_claimed the claimed one; gap_<m> the membership "
                       "gap against the holdout (positive = closer to the training set), gap_<m>_low/_high its 95% "
                       "interval, gap_<m>_p its one-sided p, lift_<m> the value minus the best reference baseline of "
                       "the entry's taxonomy cell (positive = better). position is the entry's place in the ranking of "
                       "its taxonomy cell on its track's board (a seed group's place on each of its members), null when "
                       "it does not rank.",
        "metrics": {m: {"direction": info.direction, "level": info.level, "range": info.range} for m, info in METRICS.items()},
        # each entry's gaps in full (per class too) under "membership", as CI re-scored them
        "entries": [dict(r, membership=json.loads(m) if isinstance(m, str) else None)
                    for r, m in zip(records(frame), frame.get("membership", pd.Series([None] * len(frame))))],
        "seed_groups": seeds.export_groups(frame),  # mean, std and per-seed values of each group
        # trivial non-attacks scored like entries (leaderboard/baselines.py): not entries, never ranked
        "references": references or {},
    }
    return json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def leaderboard_csv(frame: pd.DataFrame) -> str:
    return neutralised_csv(frame, EXPORT)


def neutralised_csv(frame: pd.DataFrame, columns: list[str]) -> str:
    """`columns` of `frame` as CSV, dates in ISO 8601, formula-like text cells neutralised (below)."""
    out = frame[columns].copy()
    out["date"] = out["date"].map(lambda d: None if pd.isna(d) else d.isoformat())
    # A cell starting with = + - @ is a formula to a spreadsheet (CSV injection): team names and
    # commands come from contributors, so such text cells get a leading apostrophe.
    # Every column whatever its dtype (pandas may store text as "str", not object: the old dtype test
    # let formulas through); only str cells change.
    for col in out.columns:
        if not pd.api.types.is_numeric_dtype(out[col]) or out[col].dtype == object:
            out[col] = out[col].map(lambda v: "'" + v if isinstance(v, str) and v[:1] in FORMULA_STARTS else v)
    return out.to_csv(index=False, lineterminator="\n")


def badge(attack: str, frame: pd.DataFrame) -> dict:
    """shields.io endpoint JSON: the attack's best entry on the track where it has most entries."""
    rows = ranked(frame)
    rows = rows[rows["attack"] == attack]
    label = f"ReconBench {attack}"
    if rows.empty:
        return {"schemaVersion": 1, "label": label, "message": "no entries", "color": "lightgrey"}
    track = rows["track"].value_counts().sort_index().idxmax()
    on_track = rows[rows["track"] == track]
    metric = rank_metric(on_track)
    top = sort_board(on_track, order="metric").iloc[0]  # the badge gives the attack's best value
    message = f"{track}: {LABELS.get(metric, metric)} {top[metric]:.3f}" if metric else f"{track}: no metric"
    cov = top.get(f"{metric}_coverage") if metric else None
    if cov is not None and pd.notna(cov):
        message += f" ({100 * cov:.1f}%)"
    return {"schemaVersion": 1, "label": label, "message": f"{message}, {top['trust']}",
            "color": TRUST_COLOR.get(top["trust"], "lightgrey")}


def badge_file(attack: str) -> str:
    return f"{BADGES_DIR}/{safe_slug(attack)}.json"


def schema_json() -> str:
    from reconbench.image.results import result_json_schema

    return json.dumps(result_json_schema(), indent=2, ensure_ascii=False) + "\n"
