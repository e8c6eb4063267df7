"""Seed groups: entries that differ only in their seed become one board row with mean ± std.

A group is the verified entries (those `frame.ranked` lets rank) of one team that share track,
attack (name and version), scenario and attack configuration, with two or more distinct seeds.
The team is part of the key, so nobody can pull another team's mean down (or up) with their own
runs. Each seed counts once: a second entry with a seed the group already has (the earliest entry
of each seed joins) stays a single row. A metric of a group is its mean over the seeds, shown
only when every seed has it (no cherry-picking the seeds that computed), with the sample standard
deviation (ddof=1) beside it; coverage is the mean coverage. The group's trust is its members'
lowest, its date the latest. Single runs are left exactly as they are.

Columns added: `seed_group` (group id, on the member entries of the frame and on the group row),
`n_seeds` (1 for single runs), `<m>_std` (NaN for single runs), `seed_members` (the group's
entries: seed, entry id, page, values; empty for single runs).
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd

from reconbench.leaderboard.frame import TRUST_LEVELS, ranked
from reconbench.image.metrics import METRICS

KEY = ("team", "track", "attack", "attack_version", "scenario", "config")


def group_ids(frame: pd.DataFrame) -> pd.Series:
    """Group id per row of `frame` (None for rows in no group); only verified rows are grouped."""
    ids = pd.Series([None] * len(frame), index=frame.index, dtype=object)
    rows = ranked(frame).dropna(subset=["attack", "seed"])
    if rows.empty:
        return ids
    rows = rows.sort_values(["date", "entry_id"], kind="stable")
    for key, group in rows.groupby(list(KEY), sort=False, dropna=False):
        first_of_seed = group.drop_duplicates("seed", keep="first")
        if len(first_of_seed) < 2:
            continue
        digest = hashlib.sha256(json.dumps([str(k) for k in key]).encode()).hexdigest()[:12]
        ids.loc[first_of_seed.index] = f"seeds-{digest}"
    return ids


def _member(row: pd.Series) -> dict:
    values = {m: (None if pd.isna(row[m]) else float(row[m])) for m in METRICS}
    return {"seed": int(row["seed"]), "entry_id": row["entry_id"], "page": row["page"], "trust": row["trust"],
            "metrics": values}


def _group_row(members: pd.DataFrame) -> dict:
    members = members.sort_values("seed", kind="stable")
    row = members.iloc[0].to_dict()
    for m in METRICS:
        values = members[m]
        complete = values.notna().all()
        row[m] = float(values.mean()) if complete else np.nan
        row[f"{m}_std"] = float(values.std(ddof=1)) if complete else np.nan
        coverage = members[f"{m}_coverage"]
        row[f"{m}_coverage"] = float(coverage.mean()) if complete and coverage.notna().all() else np.nan
    lowest = int(members["trust_rank"].min())
    row.update(trust=TRUST_LEVELS[lowest], trust_rank=lowest, date=members["date"].max(),
               n_seeds=len(members), seed_members=[_member(r) for _, r in members.iterrows()])
    return row


def collapse(frame: pd.DataFrame) -> pd.DataFrame:
    """The board's rows: each seed group as one row (means, stds), every other row unchanged."""
    out = frame.copy()
    out["seed_group"] = group_ids(frame)
    out["n_seeds"] = 1
    out["seed_members"] = [[] for _ in range(len(out))]
    for m in METRICS:
        out[f"{m}_std"] = np.nan
    grouped = out["seed_group"].notna()
    if not grouped.any():
        return out
    rows = [_group_row(members) for _, members in out[grouped].groupby("seed_group", sort=True)]
    return pd.concat([out[~grouped], pd.DataFrame(rows, columns=out.columns)], ignore_index=True)


def export_groups(frame: pd.DataFrame) -> list[dict]:
    """The groups for leaderboard.json: key, seeds, mean and std of each metric, and per-seed values."""
    board = collapse(frame)
    out = []
    for _, row in board[board["n_seeds"] > 1].iterrows():
        complete = [m for m in METRICS if pd.notna(row[m])]
        out.append({
            "seed_group": row["seed_group"], **{k: row[k] for k in KEY if k != "config"},
            "config": json.loads(row["config"]) if isinstance(row["config"], str) else None,
            "trust": row["trust"], "n_seeds": int(row["n_seeds"]),
            "seeds": [m["seed"] for m in row["seed_members"]],
            "mean": {m: row[m] for m in complete}, "std": {m: row[f"{m}_std"] for m in complete},
            "per_seed": [{k: v for k, v in m.items() if k != "page"} for m in row["seed_members"]],
        })
    return out
