"""Re-scoring a membership gap on another CPU (checks/rescore.py compare_gap): a gap is a difference
of two means, so the relative tolerance of the metric applies to the means and, scaled by them, to
the gap and each class's gap; a small gap must not be held to a relative tolerance of itself."""

from reconbench.core.report import GapResult
from reconbench.submissions.checks.rescore import TOLERANCES, compare_gap


def gap(vs_target, vs_holdout, per_class, **kw):
    g = vs_holdout - vs_target  # knn_dist: smaller is closer, so the gap is holdout minus target
    return GapResult(status="computed", vs_target=vs_target, vs_holdout=vs_holdout, gap=g, low=g - 0.01, high=g + 0.01,
                     p=kw.get("p", 0.4), per_class=per_class)


def test_a_class_gap_moved_by_float32_rounding_of_its_means_passes():
    # measured: DeepDream on fashion-n100, knn_dist class 1, AVX2 vs AVX-512 kernels of the evaluation model
    claimed = gap(12.3456, 12.3470, {"1": 0.0013329950063209139, "2": 0.0005})
    actual = gap(12.3457, 12.3471, {"1": 0.001355369190397937, "2": 0.0005})
    assert abs(0.0013329950063209139 - 0.001355369190397937) > TOLERANCES["knn_dist"].rel * 0.00134  # the old rule failed it
    check = compare_gap("knn_dist", claimed, actual, n_rec=100)
    assert check.status == "pass", check.message


def test_a_forged_class_gap_fails():
    claimed = gap(12.3456, 12.3470, {"1": 0.05, "2": 0.0005})
    actual = gap(12.3456, 12.3470, {"1": 0.0013, "2": 0.0005})
    check = compare_gap("knn_dist", claimed, actual, n_rec=100)
    assert check.status == "fail" and "class 1" in check.message


def test_a_forged_mean_still_fails_at_the_relative_tolerance():
    claimed = gap(12.30, 12.3470, {"1": 0.0013})
    actual = gap(12.3456, 12.3470, {"1": 0.0013})
    check = compare_gap("knn_dist", claimed, actual, n_rec=100)
    assert check.status == "fail" and "vs_target" in check.message
