"""The attack x variant matrix: one page per dataset and architecture (the SoK's Tables 2 and 10).

Rows are the registered attacks (an unregistered attack's name appears only on its entries' pages,
so its rows stay on the boards, labelled as the team's own attack); columns are
that dataset's and architecture's tracks: the plain models by training-set size, then each
variant (pre-trained, BN-frozen, bottlenecks, DP, pruning, backdoor) by size. A cell holds the best
verified board row of that attack on that track (a seed group counts with its mean) by the
track's rank metric (FID when any row of the track has it, else the next metric of
frame.RANK_PREFERENCE), with its trust level; an empty cell says "no entry yet".
"""

from __future__ import annotations

import pandas as pd

from reconbench.leaderboard.frame import LABELS, rank_metric, ranked, sort_board

# The SoK's order of target-model variants (Table 10), the plain models first.
VARIANT_ORDER = ("", "pretrained", "bn-frozen", "bottleneck512", "bottleneck128", "dp", "prune", "backdoor")
VARIANT_TITLES = {"": "plain", "pretrained": "pre-trained", "bn-frozen": "BN-frozen", "bottleneck512": "bottleneck 512",
                  "bottleneck128": "bottleneck 128", "dp": "DP-SGD", "prune": "pruned", "backdoor": "backdoor"}


def matrix_page(dataset: str, architecture: str) -> str:
    from reconbench.leaderboard.frame import safe_slug

    return f"matrix/{safe_slug(dataset)}-{safe_slug(architecture)}.md"


def _variant_rank(variant: str) -> int:
    return VARIANT_ORDER.index(variant) if variant in VARIANT_ORDER else len(VARIANT_ORDER)


def matrices(tracks: list, board: pd.DataFrame, attacks: list[str]) -> list[dict]:
    """One matrix per (dataset, architecture) of the registry: columns, rows of cells (None = empty)."""
    families: dict[tuple[str, str], list] = {}
    for track in tracks:
        families.setdefault((track.dataset, track.architecture), []).append(track)
    out = []
    for (dataset, architecture), members in families.items():
        members.sort(key=lambda t: (_variant_rank(t.variant or ""), t.variant or "", t.train_size))
        ids = [t.id for t in members]
        rows_here = ranked(board[board["track"].isin(ids)])  # held and failed entries never fill a cell
        rows_here = rows_here[rows_here["attack"].isin(attacks)]
        names = list(attacks)
        groups: list[dict] = []
        for t in members:
            variant = t.variant or ""
            if not groups or groups[-1]["variant"] != variant:
                groups.append({"variant": variant, "title": VARIANT_TITLES.get(variant, variant), "span": 0})
            groups[-1]["span"] += 1
        metrics = {tid: rank_metric(rows_here[rows_here["track"] == tid]) for tid in ids}
        body = []
        for name in names:
            cells = []
            for t in members:
                rows = rows_here[(rows_here["track"] == t.id) & (rows_here["attack"] == name)]
                metric = metrics[t.id]
                rows = rows[rows[metric].notna()] if metric else rows.iloc[0:0]
                if rows.empty:
                    cells.append(None)
                    continue
                best = sort_board(rows, order="metric").iloc[0].to_dict()  # the best value of the rows' own rank metric
                cells.append({"row": best, "metric": metric, "label": LABELS[metric]})
            body.append({"attack": name, "cells": cells})
        out.append({
            "dataset": dataset, "architecture": architecture, "page": matrix_page(dataset, architecture),
            "tracks": members, "groups": groups, "rows": body, "entries": int(len(rows_here)),
            "unpublished": all(t.status == "unpublished" for t in members),
        })
    return out
