"""The defenses view (defenses.md): SoK Table 10 on Fashion-MNIST, for a model owner's question
"does DP-SGD at epsilon 8 (or pruning 90 %) stop these attacks, and what does it cost me?"

For each defended track (a registry row with `variant` dp or prune beside the undefended track it
derives from) the page sets out its utility (test accuracy) and its own membership leakage (the
loss-threshold MIA AUC of reconbench.image.models.mia, through the model cards), and for each attack
with evidence on the undefended track (a membership signal or more, leaderboard/leakage.py) the attack's
membership gap, verdict and extraction count there and on the defended track. Everything is read from the
registry and the reproduced entries at build time; a track or an entry that is missing says so. Verdicts
are in the board's words (core/verdict.py, through findings.row_verdict), each p beside its threshold.
"""

from __future__ import annotations

import logging

import pandas as pd

from reconbench.core.verdict import SIGNAL, BY_KEY
from reconbench.leaderboard.findings import entry_gaps, reproduced, row_verdict

log = logging.getLogger(__name__)

PAGE = "defenses.md"
UNDEFENDED = "fashion-n100"
DEFENSES = {"fashion-n100-dp": "DP-SGD", "fashion-n100-prune": "pruning"}  # SoK Table 10's two rows
GAP_METRIC = "ssim"  # the gap shown (the board's first sample-level metric)


def _track(track_id: str):
    from reconbench.core.tracks import TrackError, get_track

    try:
        return get_track(track_id)
    except (TrackError, KeyError, ValueError):
        return None


def utility_rows(mia=None) -> list[dict]:
    """Per track (undefended first): registered?, its title, test accuracy and loss-threshold MIA AUC."""
    from reconbench.leaderboard.track_cards import _mia_auc

    mia = mia or _mia_auc
    rows = []
    for track_id, defense in [(UNDEFENDED, "none"), *DEFENSES.items()]:
        track = _track(track_id)
        rows.append(dict(track=track_id, defense=defense, registered=track is not None,
                         title=track.title if track else None,
                         test_accuracy=track.test_accuracy if track else None,
                         mia_auc=mia(track) if track else None))
    return rows


def _entry_on(frame: pd.DataFrame, track: str, attack: str, cell: str, gaps: dict) -> dict | None:
    rows = frame[(frame["track"] == track) & (frame["attack"] == attack) & (frame["scenario"] == cell)]
    if rows.empty:
        return None
    row = rows.sort_values("date").iloc[-1].to_dict()
    g = gaps.get(row["page"], {})
    v = row_verdict(row, g)
    return dict(page=row["page"], seed=row.get("seed"), budget=row.get("budget"), gap=g.get(GAP_METRIC), **v)


def shows_evidence(entry: dict | None) -> bool:
    """A membership signal or more (core/verdict.py): the attacks a defense has something to stop."""
    t = BY_KEY.get(entry["tier"]) if entry and entry.get("tier") else None
    return t is not None and t.rank >= SIGNAL.rank


def attack_rows(frame: pd.DataFrame) -> list[dict]:
    """Each attack with evidence on the undefended track (board rule), with its entry on every defended track."""
    frame = reproduced(frame)
    gaps = entry_gaps(frame)
    out = []
    base = frame[frame["track"] == UNDEFENDED]
    for (attack, cell), _ in base.groupby(["attack", "scenario"], sort=True):
        undefended = _entry_on(frame, UNDEFENDED, attack, cell, gaps)
        if not shows_evidence(undefended):
            continue
        out.append(dict(attack=attack, cell=cell, undefended=undefended,
                        defended={t: _entry_on(frame, t, attack, cell, gaps) for t in DEFENSES}))
    return out


def uncounted(attacks: list[dict]) -> list[str]:
    """The pages of the listed entries without an extraction count (validated before the count existed, or
    on a track without its calibration): the page names them instead of claiming the column is empty."""
    entries = [e for a in attacks for e in [a["undefended"], *a["defended"].values()] if e]
    return sorted({e["page"] for e in entries if e.get("extraction") is None})


def add_to_bundle(bundle) -> None:
    """The hook's call: render defenses.md."""
    from reconbench.leaderboard.pages import Pages

    pages = Pages()
    attacks = attack_rows(bundle.frame)
    pages.page(PAGE, "defenses.md.j2", utility=utility_rows(), attacks=attacks, defenses=DEFENSES,
               undefended=UNDEFENDED, metric=GAP_METRIC, uncounted=uncounted(attacks))
    bundle.files.update(pages.markdown)
    bundle.fragments.update(pages.fragments)
