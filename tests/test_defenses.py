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


def test_view_lists_attacks_that_leak_undefended_beside_their_defended_entries(tmp_path):
    cell = "static/white-box/none"
    f = pd.DataFrame([_entry("fashion-n100", "deepdream", cell, tmp_path / "a", 0.001),
                      _entry("fashion-n100", "mi-face", cell, tmp_path / "b", 0.3),  # no leak: not listed
                      _entry("fashion-n100-dp", "deepdream", cell, tmp_path / "c", 0.4)], columns=COLUMNS)
    rows = defenses.attack_rows(f)
    assert [r["attack"] for r in rows] == ["deepdream"]
    assert rows[0]["undefended"]["leaks"] is True and rows[0]["defended"]["fashion-n100-dp"]["leaks"] is False
    assert rows[0]["defended"]["fashion-n100-prune"] is None
    assert rows[0]["undefended"]["extraction"] is None  # issue 33's count: not on the board yet
    utility = defenses.utility_rows(mia=lambda track: 0.5)
    assert [u["track"] for u in utility] == ["fashion-n100", "fashion-n100-dp", "fashion-n100-prune"]
    assert all(u["registered"] and u["test_accuracy"] for u in utility)
