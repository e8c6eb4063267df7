"""A board is one ranking per taxonomy cell, and shows the columns its entries fill.

Entries of different cells answer different questions (a static attack reconstructs the 500
training images of the target model, a dynamic one the 100 images of an update; a black-box
attacker never sees a parameter), so a track's board is split into one table per cell
(training type / model access / data access, SoK Def. 3.1), each ranked on its own, with the
reference baselines that apply to it. Image and text boards share this (modality-neutral: the
caller passes its sort function and its metric columns). The sort functions order a table by evidence
(leaderboard/leakage.by_evidence): verdict tier, then the lead gap's lower bound; the likeness columns
stay sortable on the page.

A metric column that no entry of a table fills (verified or claimed) is hidden, and one line under
the table says which and why, e.g. FID where the Inception weights were not available. Columns are
plain names here (`<m>`, `<m>_claimed`, `<m>_note` in the frame), so a new column (a leakage gap,
a lift) is shown by adding its name to the candidates.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import pandas as pd

from reconbench.leaderboard.leakage import lead_gap

TRAINING_ORDER = ("static", "dynamic")
ACCESS_ORDER = ("white-box", "black-box")
DATA_ORDER = ("none", "similar", "same")
BACKBONES = {"inception": "InceptionV3", "alexnet": "AlexNet"}  # as the metrics' notes name them


def cell_key(scenario: str) -> tuple:
    training, access, data = (scenario.split("/") + ["", "", ""])[:3]
    return (_index(TRAINING_ORDER, training), _index(ACCESS_ORDER, access), _index(DATA_ORDER, data), scenario)


def _index(order: tuple, value: str) -> int:
    return order.index(value) if value in order else len(order)


def cell_title(scenario: str) -> str:
    return " / ".join(scenario.split("/"))


def applies(reference: dict, scenario: str) -> bool:
    """A reference baseline's cell pattern ("static/*/same") covers this scenario."""
    pattern = reference.get("cell", "*/*/*").split("/")
    return all(p in ("*", s) for p, s in zip(pattern, scenario.split("/")))


def reason(notes: list[str], subject: str = "these entries") -> str:
    """Why a metric has no value, from the entries' own notes (one phrase, no paths)."""
    text = " ".join(notes)
    if "weights unavailable" in text:
        names = sorted(set(re.findall(r"(\w+) weights unavailable", text)))
        which = " and ".join(BACKBONES.get(n, n) for n in names) or "backbone"
        return f"not computed: the pinned {which} weights were not available where {subject} ran"
    if "disabled" in text:
        return f"not computed: switched off where {subject} ran"
    return "no entry here reports a value" if subject == "these entries" else "not computed"


def visible_columns(rows: pd.DataFrame, candidates: Sequence[str], labels: dict[str, str]) -> tuple[list[str], list[dict]]:
    """(the metric columns some row fills, [{labels, reason}] of the hidden ones, grouped by reason)."""
    shown, hidden = [], {}  # hidden: kind of reason -> (labels, notes): one line per kind
    for m in candidates:
        has = any(col in rows and rows[col].notna().any() for col in (m, f"{m}_claimed"))
        if has:
            shown.append(m)
            continue
        notes = [str(n) for n in rows.get(f"{m}_note", pd.Series(dtype=object)).dropna()]
        kind = reason(notes).split(":")[0]  # "not computed" (weights, switched off) or "no entry here ..."
        names, all_notes = hidden.setdefault(kind, ([], []))
        names.append(labels.get(m, m))
        all_notes += notes
    return shown, [dict(labels=names, reason=reason(notes)) for names, notes in hidden.values()]


def groups(rows: pd.DataFrame, sort: Callable[[pd.DataFrame], pd.DataFrame], candidates: Sequence[str],
           labels: dict[str, str], rank_metric: Callable[[pd.DataFrame], str | None],
           references: Sequence[dict] = (), by: Sequence[str] = ("scenario",),
           describe: Callable[[str, pd.DataFrame], str] | None = None) -> list[dict]:
    """One table per cell (per (track, cell) with by=("track", "scenario")), in taxonomy order:
    dicts with key, cell, title, rows (sorted, `position` 1.. within the table), references,
    metrics (shown columns), hidden, rank_metric, ranked_count, knowledge (`describe(cell, rows)`:
    what the attacker is given there, in the modality's words)."""
    out = []
    if rows.empty:
        return out
    keys = sorted({tuple(r) for r in rows[list(by)].itertuples(index=False)},
                  key=lambda k: (*k[:-1], cell_key(k[-1])))
    for key in keys:
        mask = pd.Series(True, index=rows.index)
        for col, value in zip(by, key):
            mask &= rows[col] == value
        part = sort(rows[mask])
        scenario = key[-1]
        shown, hidden = visible_columns(part, candidates, labels)
        refs = [r for r in references if applies(r, scenario) and (len(key) == 1 or r.get("track") in (None, key[0]))]
        title = cell_title(scenario) if len(key) == 1 else f"{key[0]} · {cell_title(scenario)}"
        out.append(dict(key=key, cell=scenario, training=scenario.split("/")[0], title=title, rows=part, references=refs, metrics=shown, hidden=hidden,
                        rank_metric=rank_metric(part), ranked_count=int(part["position"].notna().sum()),
                        lead_gap=lead_gap(part[part["position"].notna()]),  # the gap whose interval orders it after the tier
                        knowledge=describe(scenario, part) if describe else ""))
    return out


def place_positions(frame: pd.DataFrame, tables: list[dict]) -> None:
    """Write each table's positions back onto the frame's rows, matched by entry folder (a seed
    group's place goes to every member of the group), never by the index of a rebuilt frame."""
    for table in tables:
        for _, row in table["rows"].iterrows():
            if pd.isna(row["position"]):
                continue
            group = row.get("seed_group") if row.get("n_seeds", 1) and row.get("n_seeds", 1) > 1 else None
            mask = (frame["seed_group"] == group) if group is not None else (frame["entry_dir"] == row["entry_dir"])
            frame.loc[mask, "position"] = int(row["position"])
