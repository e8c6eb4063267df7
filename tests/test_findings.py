"""The SoK findings page's verdicts: computed from entries by each claim's rule, never typed.

Frames here are built by hand with the board's columns (the page reads the same columns from the
validated entries); each rule is checked both ways, and a claim without its entries says so."""

import json

import numpy as np
import pandas as pd

from reconbench.leaderboard import findings
from reconbench.leaderboard.frame import COLUMNS


def entry(track, attack, scenario, date="2026-12-01", budget="quick", **metrics):
    row = {c: np.nan for c in COLUMNS}
    training, access, data = scenario.split("/")
    row.update(track=track, attack=attack, scenario=scenario, training=training, access=access, data=data,
               trust="reproduced", date=pd.Timestamp(date), page=f"entries/t/{track}-{attack}-{data}-{budget}.md",
               entry_dir="/nonexistent", config="{}", budget=budget)
    row.update(metrics)
    return row


def frame(*rows):
    return pd.DataFrame(list(rows), columns=COLUMNS)


def verdict(key, f):
    results, _ = findings.verdicts(f)
    return {claim.key: v for claim, v in results}[key]


def test_every_claim_without_entries_is_not_testable_and_says_why():
    results, gaps = findings.verdicts(frame())
    assert len(results) == 7 and gaps == []
    for claim, v in results:
        assert v.status == findings.UNTESTABLE and v.reason, claim.key


def test_gan_claim_holds_only_when_the_best_gan_wins_every_metric():
    same, none = "static/white-box/same", "static/white-box/none"
    wins = frame(entry("fashion-n100", "revealer", same, ssim=0.30, knn_dist=10.0, acc_top1=0.9),
                 entry("fashion-n100", "kedmi", same, ssim=0.20, knn_dist=30.0, acc_top1=0.5),
                 entry("fashion-n100", "deepinversion", none, ssim=0.25, knn_dist=20.0, acc_top1=0.8))
    v = verdict("gan", wins)
    assert v.status == findings.HOLDS and "best GAN SSIM 0.3 vs best other 0.25" in v.reason
    loses = wins.copy()
    loses.loc[2, "acc_top1"] = 0.95  # DeepInversion now has the best Acc@1
    assert verdict("gan", loses).status == findings.FAILS


def test_coverage_claim_reads_the_coverage_at_each_size():
    cell = "static/white-box/none"
    falling = frame(*[entry(t, "deepinversion", cell, ssim=0.2, ssim_coverage=c)
                      for t, c in (("fashion-n100", 0.9), ("fashion-n500", 0.5), ("fashion-n1000", 0.3))])
    v = verdict("coverage", falling)
    assert v.status == findings.HOLDS and "90.0% (fashion-n100) > 50.0% (fashion-n500) > 30.0% (fashion-n1000)" in v.reason
    two = frame(*[entry(t, "deepinversion", cell, budget="default", ssim=0.2, ssim_coverage=c)
                  for t, c in (("fashion-n100", 0.47), ("fashion-n500", 0.41))])
    v = verdict("coverage", two)  # two sizes at default: named, the missing one not implied
    assert v.status == findings.HOLDS and "47.0% (fashion-n100) > 41.0% (fashion-n500)" in v.reason
    assert "1,000" not in v.reason and "n1000" not in v.reason
    flat = falling.copy()
    flat.loc[2, "ssim_coverage"] = 0.6
    assert verdict("coverage", flat).status == findings.FAILS


def test_latest_entry_counts_and_failed_ones_never():
    cell = "static/white-box/none"
    rows = [entry("fashion-n100", "deepinversion", cell, date="2026-12-01", ssim=0.1, knn_dist=5.0, acc_top1=0.1),
            entry("fashion-n100", "deepinversion", cell, date="2026-12-02", ssim=0.3, knn_dist=1.0, acc_top1=0.9),
            entry("fashion-n100-bn-frozen", "deepinversion", cell, ssim=0.2, knn_dist=2.0, acc_top1=0.5)]
    assert verdict("batchnorm", frame(*rows)).status == findings.HOLDS  # the later, better entry counts
    rows[1]["trust"] = "failed"
    assert verdict("batchnorm", frame(*rows)).status == findings.FAILS


def test_only_reproduced_entries_count():
    """A re-scored entry's images may not come from the attack it names: a contributor could pick
    images that flip a verdict. Only entries CI re-ran are read, in the claims and the gap table."""
    cell = "static/white-box/none"
    rows = [entry("fashion-n100", "deepinversion", cell, ssim=0.1, knn_dist=5.0, acc_top1=0.1),
            entry("fashion-n100-bn-frozen", "deepinversion", cell, ssim=0.2, knn_dist=2.0, acc_top1=0.5)]
    assert verdict("batchnorm", frame(*rows)).status == findings.FAILS
    forged = entry("fashion-n100", "deepinversion", cell, date="2026-12-03", ssim=0.9, knn_dist=0.1, acc_top1=0.9)
    forged["trust"] = "re-scored"
    assert verdict("batchnorm", frame(*rows, forged)).status == findings.FAILS
    forged["trust"] = "reproduced"
    assert verdict("batchnorm", frame(*rows, forged)).status == findings.HOLDS
    rows[0]["trust"] = "re-scored"
    _, gaps = findings.verdicts(frame(*rows))
    assert [g["entry"]["track"] for g in gaps] == ["fashion-n100-bn-frozen"]


def test_a_claim_compares_entries_of_one_budget_the_largest_it_can():
    """A default run beside a quick one would measure the budget: each claim is judged on one
    preset, the largest at which both sides exist, and the page says which."""
    cell = "static/white-box/none"
    quick = [entry("fashion-n100", "deepinversion", cell, ssim=0.1, knn_dist=5.0, acc_top1=0.1),
             entry("fashion-n100-bn-frozen", "deepinversion", cell, ssim=0.2, knn_dist=2.0, acc_top1=0.5)]
    v = verdict("batchnorm", frame(*quick))
    assert (v.status, v.budget) == (findings.FAILS, "quick")
    # A later default run of one side only: still judged on the quick pair, never default vs quick.
    lone = entry("fashion-n100", "deepinversion", cell, date="2026-12-02", budget="default",
                 ssim=0.9, knn_dist=0.1, acc_top1=0.9)
    v = verdict("batchnorm", frame(*quick, lone))
    assert (v.status, v.budget) == (findings.FAILS, "quick")
    # Both sides at default: the default pair decides, whatever the quick pair says.
    pair = entry("fashion-n100-bn-frozen", "deepinversion", cell, budget="default", ssim=0.3, knn_dist=1.0, acc_top1=0.6)
    v = verdict("batchnorm", frame(*quick, lone, pair))
    assert (v.status, v.budget) == (findings.HOLDS, "default") and "0.9" in v.reason


def test_a_claim_between_attacks_takes_each_at_its_largest_budget():
    """Updates-Leak's default takes hours here while Deep-Leakage's fits: the claim between them
    compares each attack's largest run, and a quick run of an attack that has a default one is unused."""
    upd, dlg = "dynamic/black-box/same", "dynamic/white-box/none"
    rows = [entry("fashion-n1000-u8", "updates-leak", upd, ssim=0.30, mse=0.01),
            entry("fashion-n1000-u8", "deep-leakage", dlg, ssim=0.90, mse=0.001),  # quick: not used
            entry("fashion-n1000-u8", "deep-leakage", dlg, date="2026-11-30", budget="default", ssim=0.10, mse=0.05)]
    v = verdict("updates", frame(*rows))
    assert (v.status, v.budget) == (findings.HOLDS, "each attack's largest")
    assert [r["label"] for r in v.table] == ["updates-leak on fashion-n1000-u8 (quick)", "deep-leakage on fashion-n1000-u8 (default)"]


def test_entries_without_verified_values_are_not_judged():
    """Both sides present, but no verified metric (the board publishes none for an unchecked entry):
    not testable, never 'does not hold'."""
    cell = "static/white-box/none"
    rows = frame(entry("fashion-n100", "deepinversion", cell), entry("fashion-n100-bn-frozen", "deepinversion", cell),
                 entry("fashion-n100", "deepinversion", "static/black-box/none"))
    for key in ("batchnorm", "access"):
        v = verdict(key, rows)
        assert v.status == findings.UNTESTABLE and "verified" in v.reason, key


def test_membership_claim_and_table_read_the_result_files(tmp_path):
    cell = "static/white-box/same"
    rows = []
    for track, gap, p in (("fashion-n100", 0.05, 0.001), ("fashion-n1000", 0.01, 0.2)):
        folder = tmp_path / track
        folder.mkdir()
        (folder / "result.json").write_text(json.dumps({"payload": {"membership": {"metrics": {
            "ssim": {"value": gap, "p": p}, "knn_dist": {"value": 2 * gap, "p": p}}}}}))
        rows.append(entry(track, "revealer", cell, ssim=0.2) | {"entry_dir": str(folder)})
    results, gaps = findings.verdicts(frame(*rows))
    v = {c.key: v for c, v in results}["memorization"]
    assert v.status == findings.HOLDS and "+0.0500 → +0.0100" in v.reason
    assert [g["significant"] for g in gaps] == [["knn_dist", "ssim"], []]
    # the same order with no significant gap at any size is noise: not judged
    for folder in (tmp_path / "fashion-n100", tmp_path / "fashion-n1000"):
        data = json.loads((folder / "result.json").read_text())
        data["payload"]["membership"]["metrics"]["ssim"]["p"] = 0.3
        (folder / "result.json").write_text(json.dumps(data))
    results, _ = findings.verdicts(frame(*rows))
    v = {c.key: v for c, v in results}["memorization"]
    assert v.status == findings.UNTESTABLE and "no size shows a significant SSIM gap" in v.reason


def test_gan_attacks_against_the_per_class_aux_mean():
    cell = "static/white-box/similar"
    reference = {"acc_top1": 0.5, "knn_dist": 20.0, "ssim": 0.1}
    f = frame(entry("fashion-split5-n500", "revealer", cell, acc_top1=0.8, knn_dist=15.0, ssim=0.2),
              entry("fashion-split5-n500", "kedmi", cell, acc_top1=0.9, knn_dist=25.0, ssim=0.2))
    v = findings.gan_vs_aux_mean(f, reference)
    assert v.status == findings.FAILS and "kedmi beats it on Acc@1, SSIM, not on KNN dist" in v.reason
    assert findings.gan_vs_aux_mean(f.iloc[:1], reference).status == findings.HOLDS
    assert findings.gan_vs_aux_mean(f, None).status == findings.UNTESTABLE


def test_gaps_come_from_the_boards_recomputed_columns_when_present():
    """Validation's recomputed gaps (the board's gap_<m> columns) win over a result file's claim."""
    cell = "static/white-box/none"
    rows = [entry(t, "deepinversion", cell, ssim=0.2) for t in ("fashion-n100", "fashion-n500")]
    f = frame(*rows)
    f["gap_ssim"], f["gap_ssim_p"] = [0.002, 0.03], [0.4, 1e-5]
    results, gaps = findings.verdicts(f)
    v = {c.key: v for c, v in results}["memorization"]
    assert v.status == findings.FAILS and "+0.0020 → +0.0300" in v.reason
    assert [g["significant"] for g in gaps] == [[], ["ssim"]]
