"""Validated entries -> one pandas DataFrame: the single table every page, chart and download reads.

One row per entry folder. Failed entries keep a row (their page shows why they failed) but carry
no metrics and never rank. Metric columns: `<m>` (value, NaN when not computed), `<m>_coverage`
(the SoK coverage alpha in [0, 1], sample-level metrics only) and `<m>_note`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable

import numpy as np
import pandas as pd

from reconbench.leaderboard import leakage
from reconbench.image.metrics import METRICS
from reconbench.core.tracks import TrackError, all_tracks
from reconbench.core.attack_source import own_attack_label
from reconbench.submissions.identity import shown

# ascending trust; "held" (near-copies of public images) is listed, never ranked, until reproduced
TRUST_LEVELS = ("failed", "held", "signed", "re-scored", "reproduced")
UNRANKED = ("failed", "held")
TRUST_RANK = {name: rank for rank, name in enumerate(TRUST_LEVELS)}

# The SoK's table columns (Table 2: FID, SSIM, PSNR, MSE), then our LPIPS addition.
BOARD_METRICS = ("fid", "ssim", "psnr", "mse", "lpips")
LABELS = {"fid": "FID", "ssim": "SSIM", "psnr": "PSNR", "mse": "MSE", "lpips": "LPIPS"}
# The rank metric: FID when any entry of the group has it (SoK Def. 4.1, the dataset-level view),
# otherwise the best available sample-level metric in this order.
RANK_PREFERENCE = ("fid", "ssim", "lpips", "psnr", "mse")

_SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]{0,79}$")

COLUMNS = [
    "team", "team_name", "entry_id", "entry_dir", "page", "gallery", "trust", "trust_rank",
    "track", "dataset", "architecture", "train_size", "target_size",
    "scenario", "training", "access", "data",
    "attack", "attack_version", "family", "paper", "code", "registered", "config", "budget",
    "date", "toolkit_version", "git_commit", "git_dirty", "seed", "device", "hardware", "command",
    "wall_seconds", "queries", "count",
    "attack_label", "held_reason", "position", "practice",
] + [f"{m}{suffix}" for m in METRICS for suffix in ("", "_coverage", "_note", "_claimed", "_claimed_coverage")] + leakage.COLUMNS


def safe_slug(text: str) -> str:
    """A folder or id name as a URL path segment: kept when already a slug, else cleaned + hashed.

    Entry ids inside a valid result are slugs already; a failed entry may have any folder name,
    and that name must not become markup or a path outside entries/.
    """
    if _SLUG.match(text) and text not in {".", ".."}:
        return text
    cleaned = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")[:40] or "x"
    return f"{cleaned}-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def entry_folder(team: str, entry: str) -> str:
    """Every file the site generates for one entry lives in this folder of its own, so no name of
    one entry can collide with another entry's files (`X` and `X.png` used to: a gallery and a page)."""
    return f"entries/{safe_slug(team)}/{safe_slug(entry)}"


def entry_page(team: str, entry: str) -> str:
    return f"{entry_folder(team, entry)}/index.md"


def entry_gallery(team: str, entry: str) -> str:
    return f"{entry_folder(team, entry)}/gallery.png"


def entry_evidence(team: str, entry: str) -> str:
    """Side by side: reconstructions held as near-copies above the public images they are near."""
    return f"{entry_folder(team, entry)}/near-copies.png"


def attack_page(name: str) -> str:
    """Docs path of an attack's page; a user's attack may be called 'index' (a valid slug)."""
    return f"attacks/{safe_slug(name)}.md" if name != "index" else "attacks/index-attack.md"


def _track_facts() -> dict[str, dict]:
    try:
        return {t.id: t for t in all_tracks()}
    except TrackError:
        return {}


def entries_frame(reports: Iterable) -> pd.DataFrame:
    """EntryReport list (reconbench.submissions) -> DataFrame with COLUMNS, sorted by track then page."""
    from reconbench.core.catalogue import BY_NAME  # the board reads the catalogue, never attack code

    tracks = _track_facts()
    rows = []
    for report in reports:
        result = getattr(report, "result", None)
        team_info = getattr(report, "team_info", None)
        row: dict = dict.fromkeys(COLUMNS, None)
        row.update(
            team=str(report.team),
            team_name=shown(team_info.name) if team_info is not None else str(report.team),
            entry_id=str(report.entry_id),
            entry_dir=str(report.path),
            page=entry_page(str(report.team), str(report.entry_id)),
            gallery=entry_gallery(str(report.team), str(report.entry_id)),
            trust=str(report.trust),
            trust_rank=TRUST_RANK.get(str(report.trust), 0),
        )
        for m in METRICS:
            row[m] = np.nan
            row[f"{m}_coverage"] = np.nan
        if result is not None:
            p = result.payload
            training, access, data = p.scenario.split("/")
            track = tracks.get(p.track)
            prov = p.provenance
            row.update(
                track=p.track, scenario=p.scenario, training=training, access=access, data=data,
                attack=p.attack.name, attack_version=p.attack.version, family=p.attack.family,
                # a registered attack's paper is the registry's: the entry's copy of it is the contributor's text
                paper=BY_NAME[p.attack.name].paper if p.attack.name in BY_NAME else p.attack.paper,
                code=p.attack.code, registered=p.attack.name in BY_NAME,
                config=json.dumps(p.attack.config, sort_keys=True, default=str),  # seed groups compare it
                budget=p.attack.budget,
                date=pd.Timestamp(prov.finished).tz_convert("UTC") if prov.finished.tzinfo else pd.Timestamp(prov.finished, tz="UTC"),
                toolkit_version=prov.toolkit_version, git_commit=prov.git_commit, git_dirty=prov.git_dirty,
                seed=prov.seed, device=prov.device, hardware=prov.hardware, command=prov.command,
                wall_seconds=prov.wall_seconds, queries=prov.queries, count=p.reconstructions.count,
            )
            if track is not None:
                row.update(dataset=track.dataset, architecture=track.architecture, train_size=track.train_size,
                           practice=practice_track(track))
                try:
                    from reconbench.core.scenario import Scenario

                    row["target_size"] = track.target_size(Scenario.parse(p.scenario))
                except (TrackError, ValueError):
                    pass
            # A failed entry's numbers are claims nobody checked (its signature may not even
            # verify): its page shows why it failed, but no metric of it is published.
            # `<m>` holds a value only when it was verified (recomputed by CI, or reproduced);
            # `<m>_claimed` holds what the entry claims. Only `<m>` ranks, sorts or is charted.
            verified = set(getattr(report, "verified", ()) or ())
            for name, metric in (p.metrics.items() if row["trust"] != "failed" else ()):
                if metric.status == "computed" and metric.value is not None:
                    coverage = np.nan if metric.coverage is None else float(metric.coverage)
                    row[f"{name}_claimed"], row[f"{name}_claimed_coverage"] = float(metric.value), coverage
                    if name in verified:
                        row[name], row[f"{name}_coverage"] = float(metric.value), coverage
                row[f"{name}_note"] = metric.note
            row["attack_label"] = p.attack.name if row["registered"] else own_attack_label(p.attack.code, p.attack.name,
                                                                                           report.team)
            leakage.fill_row(row, report, p, pinned_holdout)
            # Held is held everywhere (issue 43, item 5): a held entry, and any entry on a burned season's draw
            # (practice), keeps its numbers on the board and gets no verdict, no badge and no rank.
            if row.get("practice") or row["trust"] == "held":
                row.update(leaks=None, tier=None, verdict=None, verdict_p=None, extracts=None)
        row["held_reason"] = getattr(report, "held_reason", None)
        rows.append(row)
    frame = pd.DataFrame(rows, columns=COLUMNS)
    for m in METRICS:
        for col in (m, f"{m}_coverage", f"{m}_claimed", f"{m}_claimed_coverage"):
            frame[col] = frame[col].astype(float)
    frame = leakage.typed(frame).copy()  # one block: the gap columns were added one by one
    frame["train_size"] = frame["train_size"].astype("Int64")
    frame["target_size"] = frame["target_size"].astype("Int64")
    frame["date"] = pd.to_datetime(frame["date"], utc=True)
    return frame.sort_values(["track", "page"], na_position="last", kind="stable").reset_index(drop=True)


def listed(frame: pd.DataFrame) -> pd.DataFrame:
    """Entries shown on a board: every trust level but 'failed' (held ones below the ranked)."""
    return frame[frame["trust"] != "failed"]


def practice_track(track) -> bool:
    """A draw of a burned season (core/seasons.burned: 2026-s1, whose members are public): its entries are
    practice, listed with their numbers, never ranked nor given a verdict anywhere (issue 43)."""
    from reconbench.core.seasons import burned

    seal = getattr(track, "seal", None)
    return seal is not None and burned(seal.season)


def practice(frame: pd.DataFrame) -> pd.Series:
    """Per row: an entry on a burned season's draw (practice_track); False where the frame has no such column."""
    if "practice" not in frame:
        return pd.Series(False, index=frame.index, dtype=bool)
    return frame["practice"].map(lambda v: v is True or v is np.True_).astype(bool)


def ranked(frame: pd.DataFrame) -> pd.DataFrame:
    """Entries that may rank (by their verified values): neither failed nor held, nor a burned season's practice."""
    return frame[~frame["trust"].isin(UNRANKED) & ~practice(frame)]


def rank_metric(frame: pd.DataFrame) -> str | None:
    """FID when any rankable row has a verified FID, else the best available verified metric (see
    RANK_PREFERENCE); None if none. Held and failed rows never decide it."""
    if "trust" in frame:
        frame = ranked(frame)
    for m in RANK_PREFERENCE:
        if m in frame and frame[m].notna().any():
            return m
    return None


def sort_board(frame: pd.DataFrame, order: str = "evidence") -> pd.DataFrame:
    """Ranked rows first; then every row without a verified value of the rank metric, or held, in trust
    then date order. Adds `position`: 1, 2, ... for ranked rows, <NA> for the rest (a claimed value never
    earns a place). order "evidence" (a board's default, issue 45): the ranked rows by verdict tier, then
    the lead gap's lower bound (leakage.by_evidence), then the rank metric; "metric": best first by the
    verified rank metric alone (the best value of an attack: the matrix, the badges). Ties: trust, date."""
    metric = rank_metric(ranked(frame))
    can_rank = ~frame["trust"].isin(UNRANKED) & ~practice(frame)
    if metric is not None:
        can_rank &= frame[metric].notna()
    top = frame[can_rank] if metric is not None else frame.iloc[0:0]
    rest = frame[~can_rank] if metric is not None else frame
    if metric is not None:
        then, ascending = [metric, "trust_rank", "date"], [METRICS[metric].direction == "↓", False, False]
        top = leakage.by_evidence(top, then, ascending) if order == "evidence" else \
            top.sort_values(then, ascending=ascending, kind="stable")
    rest = rest.sort_values(["trust_rank", "date"], ascending=[False, False], kind="stable")
    out = pd.concat([top, rest]) if len(rest) else top.copy()
    out["position"] = pd.array(list(range(1, len(top) + 1)) + [pd.NA] * len(rest), dtype="Int64")
    return out


def best_per_dataset(frame: pd.DataFrame) -> list[dict]:
    """The entry of each dataset with the strongest evidence among the entries with some (a membership
    signal or more, core/verdict.py): its strongest verdict tier, then its rank metric (a dataset's tracks
    differ in size, and gaps compare only within one size, so no gap breaks the tie here): the home
    page's summary. An entry that only draws typical samples of each class is no "best reconstruction attack"."""
    best = []
    board = ranked(frame)
    ranks = pd.Series([leakage.tier_rank(r) for r in board.to_dict("records")], index=board.index, dtype=int)
    board = board[ranks >= leakage.SIGNAL.rank]
    for dataset, group in board.groupby("dataset", sort=True):
        group = group[ranks[group.index] == ranks[group.index].max()]
        metric = rank_metric(group)
        if metric is None:
            continue
        top = sort_board(group, order="metric").iloc[0]
        best.append({"dataset": dataset, "metric": metric, "row": top})
    return best


def last_update(frame: pd.DataFrame) -> pd.Timestamp | None:
    dates = ranked(frame)["date"].dropna()
    return None if dates.empty else dates.max()


def pinned_holdout(payload) -> str | None:
    """The holdout set an image track pins for the entry's scenario (a dynamic run's: its update holdout)."""
    from reconbench.core.tracks import TrackError, get_track

    try:
        track = get_track(payload.track)
    except TrackError:
        return None
    return track.update_holdout_set_sha256 if payload.scenario.startswith("dynamic/") else track.holdout_set_sha256
