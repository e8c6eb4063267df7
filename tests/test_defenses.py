"""SoK Table 10 on Fashion-MNIST: the DP-SGD and pruned tracks, their model cards' utility beside their
own membership leakage, and the defenses view (leaderboard/defenses.py)."""

import json

import numpy as np
import pandas as pd
import pytest

from reconbench.core.tracks import get_track
from reconbench.image.models.mia import auc, loss_threshold_auc
from reconbench.leaderboard import defenses
from reconbench.leaderboard.frame import COLUMNS


def test_mann_whitney_auc_matches_sklearn():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    members, nonmembers = rng.normal(0.5, 1, 60).round(1), rng.normal(1.0, 1, 50).round(1)  # rounded: ties
    labels = np.r_[np.ones(60), np.zeros(50)]
    assert auc(members, nonmembers) == pytest.approx(roc_auc_score(labels, -np.r_[members, nonmembers]))


def test_defended_tracks_are_registered_with_their_recipe_and_cost():
    plain, dp, prune = (get_track(t) for t in ("fashion-n100", "fashion-n100-dp", "fashion-n100-prune"))
    assert (dp.variant, prune.variant) == ("dp", "prune") and dp.architecture == "mcnn-gn"
    assert "ε = 8 at δ = 1e-05" in dp.title and "90 %" in prune.title
    assert dp.target_set_sha256 == plain.target_set_sha256 == prune.target_set_sha256  # same data, other training
    assert dp.test_accuracy < prune.test_accuracy < plain.test_accuracy
    # the defenses lower the target's own membership leakage (loss threshold, D_tar vs the holdout)
    aucs = [loss_threshold_auc(t) for t in (plain, dp, prune)]
    assert aucs[0] > aucs[2] > aucs[1] > 0.5 - 0.1


def _entry(track, attack, cell, folder, p):
    row = {c: np.nan for c in COLUMNS}
    row.update(track=track, attack=attack, scenario=cell, trust="reproduced", date=pd.Timestamp("2026-12-01"),
               page=f"entries/t/{track}-{attack}.md", entry_dir=str(folder), seed=0, budget="default")
    folder.mkdir()
    (folder / "result.json").write_text(json.dumps({"payload": {"membership": {"metrics": {
        "ssim": {"value": 0.02, "p": p, "low": 0.01, "high": 0.03}, "knn_dist": {"value": 1.0, "p": 0.5}}}}}))
    return row


def test_view_lists_attacks_with_evidence_undefended_beside_their_defended_entries(tmp_path):
    cell = "static/white-box/none"
    f = pd.DataFrame([_entry("fashion-n100", "deepdream", cell, tmp_path / "a", 0.001),
                      _entry("fashion-n100", "mi-face", cell, tmp_path / "b", 0.3),  # no evidence: not listed
                      _entry("fashion-n100-dp", "deepdream", cell, tmp_path / "c", 0.4)], columns=COLUMNS)
    rows = defenses.attack_rows(f)
    assert [r["attack"] for r in rows] == ["deepdream"]
    assert rows[0]["undefended"]["leaks"] is True and rows[0]["defended"]["fashion-n100-dp"]["leaks"] is False
    # the board's words (core/verdict.py), each p beside the threshold it was held to (2 metrics tested)
    assert rows[0]["undefended"]["verdict"] == "membership signal"
    assert rows[0]["undefended"]["held"] == "SSIM p 0.001 < 0.005 = 0.01 / 2 metrics"
    assert rows[0]["defended"]["fashion-n100-dp"]["verdict"] == "no evidence"
    assert rows[0]["defended"]["fashion-n100-prune"] is None
    assert rows[0]["undefended"]["extraction"] is None  # validated without a count: the page says so
    assert defenses.uncounted(rows) == sorted(e["page"] for e in (rows[0]["undefended"], rows[0]["defended"]["fashion-n100-dp"]))
    utility = defenses.utility_rows(mia=lambda track: 0.5)
    assert [u["track"] for u in utility] == ["fashion-n100", "fashion-n100-dp", "fashion-n100-prune"]
    assert all(u["registered"] and u["test_accuracy"] for u in utility)


def _counted(row: dict, members: int, holdout: int, p: float) -> dict:
    """The extraction columns validation fills (leaderboard/leakage.fill_extraction), as the frame holds them."""
    return row | dict(extracted=float(members), extracted_of=100.0, extracted_holdout=float(holdout), extraction_p=p,
                      extracts=members > holdout and p < 0.01)


def test_view_fills_the_extraction_count_from_the_entries_and_says_extracts(tmp_path):
    """Issue 45: the defenses page showed the extraction column as "not on the board yet" though the entries
    carry it. An undefended entry whose count fires is listed as "extracts k" even without a mean-gap signal;
    its defended entry shows its own count; the page says nothing stale."""
    from reconbench.leaderboard.pages import Pages

    cell = "static/white-box/none"
    f = pd.DataFrame([_counted(_entry("fashion-n100", "mi-face", cell, tmp_path / "a", 0.3), 2, 0, 1e-6),
                      _counted(_entry("fashion-n100-dp", "mi-face", cell, tmp_path / "b", 0.4), 0, 0, 1.0)],
                     columns=COLUMNS)
    rows = defenses.attack_rows(f)
    assert [r["attack"] for r in rows] == ["mi-face"]
    undefended, dp = rows[0]["undefended"], rows[0]["defended"]["fashion-n100-dp"]
    assert undefended["verdict"] == "extracts 2" and undefended["held"] == "count p 1.0e-06 < 0.01"
    assert (undefended["extraction"].members, dp["extraction"].members) == (2, 0) and dp["verdict"] == "no evidence"
    assert defenses.uncounted(rows) == []
    pages = Pages()
    pages.page(defenses.PAGE, "defenses.md.j2", utility=defenses.utility_rows(mia=lambda track: 0.5), attacks=rows,
               defenses=defenses.DEFENSES, undefended=defenses.UNDEFENDED, metric=defenses.GAP_METRIC,
               uncounted=defenses.uncounted(rows))
    html = pages.markdown[defenses.PAGE] + "".join(pages.fragments.values())
    assert "not on the board yet" not in html and "no count computed" not in html
    assert ">extracts 2</span>" in html and "2 of 100" in html and "holdout: 0, p 1 &gt; 0.01" in html
