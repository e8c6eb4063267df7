"""The boards' signals (issue 37 item 7): wrong labels are a count apart from quality, and a chart
across sizes carries one reference line per kind, not one per track, cell and kind."""

import pandas as pd
import pytest

from reconbench.leaderboard.charts import grouped_references, reference_traces
from reconbench.leaderboard.pages import metric_cell

U8 = "5 of 8 reconstructions have no target of their class: scored -1, no coverage"


def test_a_wrong_label_is_counted_apart_not_shown_as_minus_one_quality():
    mean = (3 * 0.2 + 5 * -1) / 8  # three reconstructions with SSIM 0.2, five scored -1 for their labels
    cell = metric_cell(pd.Series({"ssim": mean, "ssim_coverage": 0.125, "ssim_note": U8}), "ssim")
    assert cell == "0.200 on 3 of 8 (12.50%) · 5 label wrong"
    # KNN distance scores a wrong label at its farthest target: no fixed value to take out, the count still shows
    note = "5 of 8 reconstructions have no target of their class: scored at their farthest target"
    assert metric_cell(pd.Series({"knn_dist": 215.4, "knn_dist_note": note}), "knn_dist") == "215.400 · 5 label wrong"
    assert metric_cell(pd.Series({"ssim": 0.3, "ssim_note": None}), "ssim") == "0.300"


def _ref(kind, track, cell, ssim):
    return dict(kind=kind, short=kind, label=f"{kind} images", track=track, cell=cell, data="same", training="static",
                metrics={"ssim": {"value": ssim}, "mse": {"value": 1 - ssim}})


def test_references_across_a_family_are_one_line_per_kind_at_its_best():
    refs = [_ref(k, t, c, v) for k, base in (("noise", 0.01), ("aux", 0.2), ("aux-mean", 0.3))
            for i, t in enumerate(("fashion-n100", "fashion-n500", "fashion-n1000"))
            for j, c in enumerate(("static/white-box/same", "static/black-box/same")) for v in [base + 0.01 * (i + j)]]
    assert len(reference_traces(refs, "ssim", (100, 1000), True)) == 18
    grouped = grouped_references(refs, "ssim")
    assert [g["kind"] for g in grouped] == ["noise", "aux", "aux-mean"]
    assert [g["metrics"]["ssim"]["value"] for g in grouped] == pytest.approx([0.04, 0.23, 0.33])  # higher is better
    assert [g["metrics"]["mse"]["value"] for g in grouped_references(refs, "mse")] == pytest.approx([0.96, 0.77, 0.67])
    assert len(reference_traces(grouped, "ssim", (100, 1000))) == 3
    assert all("best over this family" in g["short"] for g in grouped)


def test_the_memorization_chart_plots_the_quality_the_board_shows_not_minus_one():
    """A chart point is the board cell's quality (labels apart): a wrong-label row's worst values are
    taken out, and a run whose every label is wrong (Deep Leakage's one update image) has no point."""
    from reconbench.leaderboard.charts import label_quality

    rows = pd.DataFrame({
        "ssim": [(0.2 * 3 - 5) / 8, -1.0, 0.4],
        "ssim_note": ["5 of 8 reconstructions have no target of their class: scored -1, no coverage",
                      "1 of 1 reconstructions have no target of their class: scored -1, no coverage", None],
    })
    got = label_quality(rows, "ssim")["ssim"].tolist()
    assert got[0] == pytest.approx(0.2) and pd.isna(got[1]) and got[2] == 0.4
    assert rows["ssim"].tolist()[1] == -1.0  # the frame itself is left as it is


def test_metrics_with_the_same_caveat_share_one_footnote():
    """Acc@1 and Acc@5 carry the same caveat: one footnote names both, and both headers point at it."""
    from reconbench.leaderboard.pages import footnote_number, footnotes, make_env

    metrics = ["mse", "ssim", "acc_top1", "acc_top5", "knn_dist"]
    groups = footnotes(metrics)
    assert ["acc_top1", "acc_top5"] in groups and len(groups) == len({tuple(g) for g in groups})
    assert footnote_number("acc_top1", metrics) == footnote_number("acc_top5", metrics)
    html = make_env().from_string('{% import "_macros.html.j2" as m %}{{ m.caveats(ms) }}').render(ms=metrics)
    assert html.count("<li>") == len(groups) and "Acc@1, Acc@5" in html


def test_a_forged_label_count_in_a_note_fails_the_re_score():
    """The board shows quality without the wrong labels' worst values, from the count in the metric's
    note: a forger who keeps the true value but claims 95 wrong labels (or another worst value) would
    show 0.9-grade quality. The count is held to the recomputed one, like the value."""
    from reconbench.image.metrics import MetricResult
    from reconbench.submissions.checks.rescore import compare

    true = MetricResult(status="computed", value=-0.85, coverage=0.05)
    forged = MetricResult(status="computed", value=-0.85, coverage=0.05,
                          note="95 of 100 reconstructions have no target of their class: scored -1, no coverage")
    check = compare("ssim", forged, true, n_targets=100, n_rec=100)
    assert check.status == "fail" and "95 of 100 label wrong" in check.message and "every label" in check.message
    other_worst = MetricResult(status="computed", value=-0.85, coverage=0.05, note=forged.note.replace("-1", "-9"))
    assert compare("ssim", other_worst, forged, n_targets=100, n_rec=100).status == "fail"
    assert compare("ssim", forged, forged, n_targets=100, n_rec=100).status == "pass"
    assert compare("ssim", true, true, n_targets=100, n_rec=100).status == "pass"
