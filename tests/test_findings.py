"""The SoK findings page's verdicts: computed from entries by each claim's rule, under the conditions
docs/grids/findings.toml declares, never typed.

Frames here are built by hand with the board's columns (the page reads the same columns from the
validated entries). The four misleading cases of issue 35 are each a test that must now give "not
testable at this budget"; the rule is checked both ways on seed groups that meet every condition."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reconbench.leaderboard import findings, findings_rule
from reconbench.leaderboard.findings_rule import Conditions, ConditionsError, load_conditions
from reconbench.leaderboard.frame import COLUMNS
from reconbench.core.labels import labels_wrong
from reconbench.sweep.grid import read_grid

GRID = Path(__file__).resolve().parents[1] / "docs" / "grids" / "findings.toml"
CONDITIONS = load_conditions(GRID)
WB, SAME = "static/white-box/none", "static/white-box/same"
U8_NOTE = "5 of 8 reconstructions have no target of their class: scored -1, no coverage"


def entry(track, attack, scenario, date="2026-12-01", budget="default", seed=0, command=None, **metrics):
    row = {c: np.nan for c in COLUMNS}
    training, access, data = scenario.split("/")
    row.update(track=track, attack=attack, scenario=scenario, training=training, access=access, data=data,
               trust="reproduced", date=pd.Timestamp(date), page=f"entries/t/{track}-{attack}-{data}-{budget}-{seed}.md",
               entry_dir="/nonexistent", config="{}", budget=budget, seed=seed, count=100,
               command=command or f"recon-submit evaluate --track {track} --attack {attack} --seed {seed} --budget {budget}")
    row.update(metrics)
    return row


def seeds(track, attack, scenario, values, budget="default", command=None, **fixed):
    """One entry per seed: `values` maps a metric to its per-seed values."""
    n = len(next(iter(values.values())))
    return [entry(track, attack, scenario, budget=budget, seed=s, command=command and command.format(seed=s),
                  **fixed, **{m: v[s] for m, v in values.items()}) for s in range(n)]


def frame(*rows):
    return pd.DataFrame(list(rows), columns=COLUMNS)


def verdict(key, f):
    results, _ = findings.verdicts(f, CONDITIONS)
    return {claim.key: v for claim, v in results}[key]


def test_findings_grid_declares_the_conditions_of_every_claim_and_still_expands():
    """Every claim on the page has its conditions (≥ 3 seeds, a tolerance, a command), and the sweep
    still reads the grid (the conditions are a table the sweep ignores)."""
    keys = [c.key for c in findings.CLAIMS]
    assert len(keys) >= 12 and set(keys) <= set(CONDITIONS)
    for key, cond in CONDITIONS.items():
        assert cond.seeds >= 3 and cond.tolerance >= 0 and cond.command, key
        assert cond.metric == cond.paper or cond.proxy, key
    grid = read_grid(GRID)
    assert grid.seeds == [0, 1, 2] and "gan" in grid.claims


def test_every_claim_without_entries_is_not_testable_and_says_what_and_how():
    results, gaps = findings.verdicts(frame(), CONDITIONS)
    assert len(results) == len(findings.CLAIMS) and gaps == []
    for claim, v in results:
        assert v.status == findings.UNTESTABLE and v.missing and v.command, claim.key


# ---------------------------------------------------------------- issue 35's four misleading cases


def test_gan_claim_at_other_budgets_and_at_chance_is_not_testable():
    """GAN priors at 1/8 width and 4 epochs (quick + options), Revealer and KEDMI at chance on Acc@1,
    against DeepDream at its default: the board said 'does not hold'."""
    gan = "recon-submit evaluate --track fashion-n100 --attack {a} --budget quick --set gan_width_div=8 --set gan_epochs=4"
    f = frame(entry("fashion-n100", "revealer", SAME, budget="quick", command=gan.format(a="revealer"),
                    ssim=0.19, knn_dist=60.0, acc_top1=0.10),
              entry("fashion-n100", "kedmi", SAME, budget="quick", command=gan.format(a="kedmi"),
                    ssim=0.18, knn_dist=62.0, acc_top1=0.12),
              entry("fashion-n100", "deepdream", WB, ssim=0.12, knn_dist=38.6, acc_top1=0.68))
    v = verdict("gan", f)
    assert v.status == findings.UNTESTABLE
    said = " | ".join(v.missing)
    assert "at its default budget (ran at quick + gan_epochs=4, gan_width_div=8)" in said
    assert "above chance on Acc@1" in said and "3 seeds" in said
    assert v.command and "--budget default" in v.command


def test_updates_claim_on_label_bookkeeping_and_mixed_budgets_is_not_testable():
    """u8: 5 of 8 Updates-Leak reconstructions carry labels absent from the update (scored -1);
    Updates-Leak at hidden 256 / 2 epochs, Deep-Leakage at default."""
    ul = "recon-submit evaluate --track fashion-n1000-u8 --attack updates-leak --budget quick --set hidden=256"
    f = frame(entry("fashion-n1000-u8", "updates-leak", "dynamic/black-box/same", budget="quick", command=ul,
                    ssim=-0.52, knn_dist=215.0, knn_dist_note=U8_NOTE.replace("scored -1, no coverage", "scored at their farthest target"),
                    ssim_note=U8_NOTE, acc_top1=0.0),
              entry("fashion-n1000-u8", "deep-leakage", "dynamic/white-box/none", ssim=0.05, knn_dist=120.0, acc_top1=0.5))
    v = verdict("updates", f)
    said = " | ".join(v.missing)
    assert v.status == findings.UNTESTABLE
    assert "5 of 8 reconstructions label wrong" in said and "ran at quick + hidden=256" in said
    row = next(r for r in v.table if r["label"].startswith("updates-leak"))
    assert row["labels_wrong"] == (5, 8)


def test_similar_aux_claim_on_one_seed_and_other_classes_is_not_testable():
    """'similar' here = other Fashion classes (the paper: another dataset); one seed, no noise estimate."""
    sim = "static/white-box/similar"
    f = frame(*[entry("fashion-split5-n500", a, cell, knn_dist=k, acc_top1=0.6)
                for a in ("revealer", "kedmi") for cell, k in ((SAME, 40.0), (sim, 41.0))])
    v = verdict("similar", f)
    said = " | ".join(v.missing)
    assert v.status == findings.UNTESTABLE
    assert "another dataset" in said and "3 seeds for revealer, same-distribution aux (has 1)" in said


def test_batchnorm_claim_with_frozen_side_at_chance_is_not_testable_even_with_seeds():
    """Frozen-BN reconstructions at chance (Acc@1 0.10): even with three seeds each at one budget and
    a clear difference, their nearest-target scores cannot decide the comparison."""
    f = frame(*seeds("fashion-n100", "deepinversion", WB, {"knn_dist": [30.0, 30.5, 31.0], "acc_top1": [0.7, 0.72, 0.69]}),
              *seeds("fashion-n100-bn-frozen", "deepinversion", WB, {"knn_dist": [45.0, 46.0, 45.5],
                                                                     "acc_top1": [0.10, 0.11, 0.09]}))
    v = verdict("batchnorm", f)
    assert v.status == findings.UNTESTABLE
    assert any("above chance on Acc@1" in m and "BatchNorm fixed" in m for m in v.missing)
    # the same gap with the frozen side well above chance: decided, with its interval and power
    f.loc[f["track"] == "fashion-n100-bn-frozen", "acc_top1"] = [0.5, 0.52, 0.49]
    v = verdict("batchnorm", f)
    assert v.status == findings.HOLDS and v.false_positive == pytest.approx(0.025) and 0 < v.power <= 1
    assert "95 % interval" in v.reason


# ---------------------------------------------------------------- the rule both ways


def _pair(di, dd):
    return frame(*seeds("fashion-n100", "deepinversion", WB, {"knn_dist": di, "acc_top1": [0.8] * len(di)}),
                 *seeds("fashion-n100", "deepdream", WB, {"knn_dist": dd, "acc_top1": [0.7] * len(dd)}))


def test_rule_holds_fails_or_refuses_by_the_interval_against_the_tolerance():
    assert verdict("deepinversion", _pair([30.0, 30.4, 29.8], [38.6, 38.9, 38.2])).status == findings.HOLDS
    assert verdict("deepinversion", _pair([38.6, 38.9, 38.2], [30.0, 30.4, 29.8])).status == findings.FAILS
    # a difference inside the tolerance (±2.0) is no verdict: the interval overlaps the band
    v = verdict("deepinversion", _pair([37.5, 37.9, 37.2], [38.6, 38.9, 38.2]))
    assert v.status == findings.UNTESTABLE and any("outside ±2" in m for m in v.missing)
    # noisy seeds: a large mean difference whose interval still reaches into the band
    v = verdict("deepinversion", _pair([20.0, 45.0, 30.0], [38.6, 38.9, 38.2]))
    assert v.status == findings.UNTESTABLE and v.power < 0.5
    # two seeds are not enough, whatever the values
    v = verdict("deepinversion", _pair([30.0, 30.4], [38.6, 38.9]))
    assert v.status == findings.UNTESTABLE and any("3 seeds" in m for m in v.missing)


def test_welch_interval_matches_scipy():
    from scipy import stats

    a, b = [30.0, 30.4, 29.8, 31.0], [38.6, 38.9, 38.2]
    cond = CONDITIONS["deepinversion"]
    f = _pair(a, b)
    sa = findings_rule.side_of(f, "a", "fashion-n100", "deepinversion", WB)
    sb = findings_rule.side_of(f, "b", "fashion-n100", "deepdream", WB)
    c = findings_rule.compare(sa, sb, cond)
    ref = stats.ttest_ind(b, a, equal_var=False).confidence_interval(0.95)  # b - a: KNN lower is better
    assert c.difference[1] == pytest.approx(ref.low) and c.difference[2] == pytest.approx(ref.high)


def test_each_seed_counts_once_and_one_configuration_is_a_side():
    rows = seeds("fashion-n100", "deepinversion", WB, {"knn_dist": [30.0, 30.4, 29.8], "acc_top1": [0.8] * 3})
    rows.append(entry("fashion-n100", "deepinversion", WB, seed=1, date="2026-12-03", knn_dist=30.1, acc_top1=0.8))
    rows.append(entry("fashion-n100", "deepinversion", WB, budget="quick", seed=5, knn_dist=10.0, acc_top1=0.9))
    side = findings_rule.side_of(frame(*rows), "di", "fashion-n100", "deepinversion", WB)
    assert side.seeds == [0, 1, 2] and side.budget == "default"
    assert side.values("knn_dist").tolist() == [30.0, 30.1, 29.8]  # seed 1: its latest entry


def test_a_default_claim_reads_the_default_seed_group_over_a_later_quick_one():
    rows = seeds("fashion-n100", "deepinversion", WB, {"knn_dist": [30.0, 30.4, 29.8], "acc_top1": [0.8] * 3})
    rows += [entry("fashion-n100", "deepinversion", WB, budget="quick", seed=s, date="2026-12-09", knn_dist=50.0,
                   acc_top1=0.8) for s in (0, 1, 2)]
    rows += seeds("fashion-n100", "deepdream", WB, {"knn_dist": [38.6, 38.9, 38.2], "acc_top1": [0.8] * 3})
    f = frame(*rows)
    assert findings_rule.side_of(f, "di", "fashion-n100", "deepinversion", WB).budget == "quick"  # latest on a tie
    assert findings_rule.side_of(f, "di", "fashion-n100", "deepinversion", WB, prefer="default").budget == "default"
    assert verdict("deepinversion", f).status == findings.HOLDS  # budgets = "default": read at the default


def test_an_equal_budget_claim_reads_both_sides_at_a_configuration_they_share():
    rows = seeds("fashion-n100", "deepinversion", WB, {"knn_dist": [30.0, 30.4, 29.8], "acc_top1": [0.8] * 3})
    rows += [entry("fashion-n100", "deepinversion", WB, budget="quick", seed=s, date="2026-12-09", knn_dist=50.0,
                   acc_top1=0.8) for s in (0, 1, 2)]  # a later quick group with as many seeds
    rows += seeds("fashion-n100-bn-frozen", "deepinversion", WB, {"knn_dist": [38.6, 38.9, 38.2], "acc_top1": [0.8] * 3})
    v = verdict("batchnorm", frame(*rows))
    assert not any("equal budgets" in m for m in v.missing)
    assert v.status == findings.HOLDS  # read at the default both sides have: 30.1 against 38.6


def test_only_reproduced_entries_count():
    f = _pair([30.0, 30.4, 29.8], [38.6, 38.9, 38.2])
    assert verdict("deepinversion", f).status == findings.HOLDS
    f.loc[f["attack"] == "deepinversion", "trust"] = "re-scored"
    assert verdict("deepinversion", f).status == findings.UNTESTABLE


def test_conditions_file_errors_name_the_file_and_the_claim(tmp_path):
    bad = tmp_path / "grid.toml"
    bad.write_text('[claims.x]\nmetric = "knn_dist"\npaper = "fid"\nbudgets = "equal"\nseeds = 1\ntolerance = 1\ncommand = "c"\n')
    with pytest.raises(ConditionsError, match=r"grid.toml: \[claims.x\]: seeds = 1, a verdict needs at least 3"):
        load_conditions(bad)
    bad.write_text('[claims.x]\nmetric = "knn_dist"\npaper = "fid"\nbudgets = "equal"\nseeds = 3\ntolerance = 1\ncommand = "c"\n')
    with pytest.raises(ConditionsError, match="say why in `proxy`"):
        load_conditions(bad)


def test_label_bookkeeping_is_read_from_the_note_and_taken_out_of_quality():
    wrong = labels_wrong(U8_NOTE)
    assert (wrong.count, wrong.total, wrong.worst) == (5, 8, -1.0)
    # 3 real SSIMs of 0.2 and 5 scored -1: the mean over all is (0.6 - 5) / 8
    assert wrong.quality((3 * 0.2 - 5) / 8) == pytest.approx(0.2)
    assert labels_wrong("8 of 8 reconstructions have no target of their class: scored at their farthest target").worst is None
    assert labels_wrong(None) is None and labels_wrong("LPIPS: not computed") is None


def test_membership_table_uses_the_boards_corrected_rule(tmp_path):
    """p = 0.006 on one of three metrics is significant alone, not after Bonferroni (0.018 > 0.01): the
    page says 'no evidence', as the board does, with the threshold the p was held to."""
    folder = tmp_path / "e"
    folder.mkdir()
    (folder / "result.json").write_text(json.dumps({"payload": {"membership": {"metrics": {
        "ssim": {"value": None, "gap": 0.01, "p": 0.006}, "knn_dist": {"value": 0.5, "p": 0.4}, "mse": {"value": 0.0, "p": 0.5}}}}}))
    row = entry("fashion-n100", "deepdream", WB, ssim=0.2) | {"entry_dir": str(folder)}
    _, gaps = findings.verdicts(frame(row), CONDITIONS)
    assert gaps[0]["leaks"] is False and gaps[0]["significant"] == [] and gaps[0]["tests"] == 3
    assert gaps[0]["verdict"] == "no evidence" and gaps[0]["held"] == "SSIM p 0.006 > 0.0033 = 0.01 / 3 metrics"
    data = json.loads((folder / "result.json").read_text())
    data["payload"]["membership"]["metrics"]["ssim"]["p"] = 0.001
    (folder / "result.json").write_text(json.dumps(data))
    _, gaps = findings.verdicts(frame(row), CONDITIONS)
    assert gaps[0]["leaks"] is True and gaps[0]["significant"] == ["ssim"]
    assert gaps[0]["verdict"] == "membership signal" and gaps[0]["held"] == "SSIM p 0.001 < 0.0033 = 0.01 / 3 metrics"


def test_gan_attacks_against_the_per_class_aux_mean_need_seeds():
    sim = "static/white-box/similar"
    reference = {"acc_top1": 0.5, "knn_dist": 50.0, "ssim": 0.1}
    cond = CONDITIONS["aux-mean"]
    one = frame(entry("fashion-split5-n500", "revealer", sim, acc_top1=0.8, knn_dist=15.0, ssim=0.2))
    v = findings.gan_vs_aux_mean(one, reference, cond)
    assert v.status == findings.UNTESTABLE and any("3 seeds" in m for m in v.missing)
    three = frame(*seeds("fashion-split5-n500", "revealer", sim, {"knn_dist": [40.0, 41.0, 40.5], "acc_top1": [0.8] * 3}))
    assert findings.gan_vs_aux_mean(three, reference, cond).status == findings.HOLDS
    assert findings.gan_vs_aux_mean(three, None, cond).status == findings.UNTESTABLE
