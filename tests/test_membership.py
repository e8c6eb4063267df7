"""The membership gap (core/membership.py, image/metrics/leakage.py): statistics checked against scipy,
the reference rows at a gap of 0, the target images themselves at the maximum with p at its bound 1/(B+1)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from scipy import stats

from reconbench.image.metrics import score
from reconbench.core.membership import Group, membership_gap
from reconbench.image.track_files import load_holdout, load_splits
from reconbench.core.tracks import get_track


pytestmark = pytest.mark.slow  # a minute or more of CPU: the slow set (make test-slow; benchmarks/bench_test_split.py)


def _one_class(rng, n=6, m=4):
    scores = rng.normal(size=(n, 2 * m))
    members = np.r_[np.ones(m, bool), np.zeros(m, bool)]
    return scores, members


def _gap_of(scores, members, larger=True):
    best = (lambda a: a.max(1)) if larger else (lambda a: a.min(1))
    sign = 1 if larger else -1
    return sign * (best(scores[:, members]) - best(scores[:, ~members])).mean()


def test_the_gap_is_the_difference_of_the_two_s_dis_values():
    rng = np.random.default_rng(3)
    scores, members = _one_class(rng, n=9, m=7)
    for larger in (True, False):
        g = membership_gap([Group.from_matrix("0", scores, members, larger)], larger, permutations=200)
        best = np.max if larger else np.min
        vs_t, vs_h = best(scores[:, members], 1).mean(), best(scores[:, ~members], 1).mean()
        assert g.vs_target == pytest.approx(vs_t) and g.vs_holdout == pytest.approx(vs_h)
        assert g.gap == pytest.approx(vs_t - vs_h if larger else vs_h - vs_t)
        assert g.low <= g.gap <= g.high


def test_the_permutation_p_matches_scipys_exact_permutation_test():
    """One class of 4 members + 4 non-members has C(8, 4) = 70 labellings: scipy enumerates them all
    (permutation_test, independent samples: the pool items are the units whose membership is
    permuted). Ours draws 20,000 at random: its p is within Monte Carlo error of scipy's exact p."""
    rng = np.random.default_rng(7)
    for trial in range(3):
        scores, members = _one_class(rng)
        scores[:, :4] += 0.4 * trial  # from no leakage to some

        def statistic(t_idx, h_idx):
            t_idx, h_idx = np.asarray(t_idx, int), np.asarray(h_idx, int)
            return (scores[:, t_idx].max(1) - scores[:, h_idx].max(1)).mean()

        ref = stats.permutation_test((np.arange(4), np.arange(4, 8)), statistic, permutation_type="independent",
                                     alternative="greater", n_resamples=10_000)
        ours = membership_gap([Group.from_matrix("0", scores, members, True)], True, permutations=20_000)
        assert ours.gap == pytest.approx(ref.statistic)
        if ours.p_method.startswith("permutation"):
            assert abs(ours.p - ref.pvalue) < 4 * np.sqrt(ref.pvalue * (1 - ref.pvalue) / 20_000) + 1e-3, (ours.p, ref.pvalue)
        null = np.sort([statistic(t, np.setdiff1d(np.arange(8), t)) for t in itertools.combinations(range(8), 4)])
        lo, hi = np.quantile(null, [0.025, 0.975])
        assert ours.high == pytest.approx(ours.gap - lo, abs=0.05) and ours.low == pytest.approx(ours.gap - hi, abs=0.05)


def test_top_k_rows_give_the_same_gap_and_null_as_full_rows():
    rng = np.random.default_rng(11)
    groups_full, groups_top = [], []
    for c in range(3):
        scores, members = _one_class(rng, n=20, m=300)
        groups_full.append(Group.from_matrix(str(c), scores, members, False, top_k=600))
        groups_top.append(Group.from_matrix(str(c), scores, members, False, top_k=48))
    a, b = membership_gap(groups_full, False, permutations=300), membership_gap(groups_top, False, permutations=300)
    assert (a.gap, a.low, a.high, a.p) == pytest.approx((b.gap, b.low, b.high, b.p))


def test_the_packed_first_member_search_finds_what_the_scan_finds():
    """_best packs a row's K <= 64 sides into one word (the permutation test's cost); the argmax scan
    over the booleans is the reference: the same best member and non-member, bit for bit."""
    from reconbench.core.membership import _best, _best_by_scan, _permuted_labels

    rng = np.random.default_rng(3)
    for trial in range(60):
        pool = int(rng.integers(1, 130))
        scores = np.round(rng.normal(size=(int(rng.integers(1, 20)), pool)), 1)  # ties included
        members = rng.random(pool) < rng.random()
        g = Group.from_matrix("c", scores, members, bool(trial % 2))
        for labels in (members, _permuted_labels(rng, members, 9), rng.random((4, pool)) < 0.03, np.ones((2, pool), bool)):
            want = _best_by_scan(g.values, np.take(labels, g.columns, axis=-1))
            got = _best(g.values, g.columns, labels)
            assert all(np.array_equal(a, b) for a, b in zip(got, want)), (trial, pool)


def test_the_interval_covers_zero_about_95_percent_of_the_time_under_h0():
    """Calibration: scores that know nothing of membership (every column drawn alike)."""
    rng = np.random.default_rng(5)
    covered, small_p = 0, 0
    for _ in range(60):
        groups = [Group.from_matrix(str(c), *_one_class(rng, n=10, m=10), True) for c in range(4)]
        g = membership_gap(groups, True, permutations=400)
        covered += g.low <= 0 <= g.high
        small_p += g.p < 0.05
    assert covered >= 51 and small_p <= 9, (covered, small_p)  # 95% / 5% nominal, binomial slack for 60 draws


@pytest.fixture(scope="module")
def digits():
    track = get_track("digits")
    splits = load_splits(track)
    return track, splits, load_holdout(track)


def _gaps(track, images, labels, target, holdout):
    report = score(images, labels, target.images, target.labels, lpips=False, fid=False, track=track,
                   holdout_images=holdout.images, holdout_labels=holdout.labels)
    return report


def test_reference_rows_show_a_gap_within_their_own_interval_of_zero(digits):
    """The aux images returned as they are and the per-class aux mean cannot know the members: every
    metric's gap interval holds 0 (issue 21, item 7)."""
    from reconbench.leaderboard.baselines import baseline_images

    track, splits, holdout = digits
    for kind in ("aux", "aux-mean"):
        images, labels = baseline_images(kind, len(splits.target), tuple(track.input_shape), track.num_classes, splits.aux_same)
        report = _gaps(track, images, labels, splits.target, holdout)
        for name, g in report.membership.items():
            if g.status == "computed":
                assert g.low <= 0.0 <= g.high, (kind, name, g.format())
                assert g.p > 0.01, (kind, name, g.p)
        ssim = report.membership["ssim"]
        assert ssim.vs_target == pytest.approx(report.metrics["ssim"].value)


def test_the_target_images_themselves_show_the_largest_gap(digits):
    """A fixture of the 500 targets: every reconstruction is a member, best against the targets (MSE 0,
    SSIM 1), so its gap is the largest the metric allows for these pools; no permutation reaches it, so
    p is the bound 1/(B+1) and says so."""
    track, splits, holdout = digits
    target = splits.target
    report = _gaps(track, target.images, target.labels, target, holdout)
    aux = _gaps(track, splits.aux_same.images, splits.aux_same.labels, target, holdout)
    for name in ("mse", "psnr", "ssim", "knn_dist"):
        g = report.membership[name]
        assert g.p == pytest.approx(1 / 2001) and g.note.startswith("p <= 1/(B+1)") and g.low > 0, (name, g)
        assert g.gap > aux.membership[name].high, name
    assert report.membership["mse"].vs_target == 0.0 and report.membership["ssim"].vs_target == pytest.approx(1.0)
    # the maximum for these pools: the whole distance to the nearest holdout image
    assert report.membership["mse"].gap == pytest.approx(report.membership["mse"].vs_holdout)
    assert set(report.membership["ssim"].per_class) == {str(c) for c in range(10)}
    assert report.membership["acc_top1"].status == "not_applicable"


def test_holdout_images_as_reconstructions_show_a_negative_gap(digits):
    """The mirror image: returning the holdout puts the reconstructions on the non-members' side."""
    track, splits, holdout = digits
    report = _gaps(track, holdout.images, holdout.labels, splits.target, holdout)
    g = report.membership["ssim"]
    assert g.gap < 0 and g.high < 0 and g.p > 0.99


def test_lpips_fid_and_prdc_are_scored_against_the_holdout_too(digits, tmp_path):
    """With backbones present (stand-in weights here: the real ones cannot be fetched on these machines)
    LPIPS gets a gap with its interval, FID and PRDC a gap against the holdout (dataset level, no interval).
    The targets themselves: FID 0 against the targets, positive against the holdout, so a positive gap."""
    from reconbench.image.metrics.inception import InceptionExtractor, standin_inception_state_dict
    from reconbench.image.metrics.lpips_metric import LPIPSExtractor, standin_alexnet_state_dict

    track, splits, holdout = digits
    target, keep = splits.target, np.arange(0, 500, 5)
    t = target.subset(keep)
    h = holdout.subset(np.sort(np.concatenate([np.flatnonzero(holdout.labels == c)[:int((t.labels == c).sum())]
                                                for c in range(10)])))
    report = score(t.images, t.labels, t.images, t.labels, fid=True, cache_dir=tmp_path,
                   lpips_extractor=LPIPSExtractor(standin_alexnet_state_dict(seed=0)),
                   inception_extractor=InceptionExtractor(standin_inception_state_dict(seed=0), dims=64),
                   holdout_images=h.images, holdout_labels=h.labels)
    lp, fid = report.membership["lpips"], report.membership["fid"]
    assert lp.status == "computed" and lp.vs_target == pytest.approx(0.0, abs=1e-6) and lp.gap > 0 and lp.p < 0.01
    assert fid.status == "computed" and fid.low is None and fid.p is None
    assert fid.vs_target == pytest.approx(report.metrics["fid"].value) and fid.gap == pytest.approx(fid.vs_holdout - fid.vs_target)
    assert fid.gap > 0
    prec = report.membership["prdc_precision"]
    assert prec.status == "computed" and prec.gap == pytest.approx(prec.vs_target - prec.vs_holdout)


def test_a_reconstruction_of_a_class_the_pools_lack_gets_no_test_not_a_crash(digits):
    """One update image (a batch-1 dynamic cell) of class 0, a reconstruction labelled 3: no pool to tell
    apart, so no gap is tested and the note says why (an evaluate once crashed here after the attack ran)."""
    track, splits, holdout = digits
    one = np.flatnonzero(splits.target.labels == 0)[:1]
    other = np.flatnonzero(holdout.labels == 0)[:1]
    report = score(splits.target.images[one], np.array([3]), splits.target.images[one], splits.target.labels[one],
                   lpips=False, fid=False, track=track, holdout_images=holdout.images[other],
                   holdout_labels=holdout.labels[other])
    for name in ("mse", "psnr", "ssim"):
        g = report.membership[name]
        assert g.status == "not_applicable" and "nothing to test" in g.note, (name, g)
    # the same image labelled with its own class is a member: a positive gap
    same = score(splits.target.images[one], np.array([0]), splits.target.images[one], splits.target.labels[one],
                 lpips=False, fid=False, track=track, holdout_images=holdout.images[other],
                 holdout_labels=holdout.labels[other])
    assert same.membership["ssim"].gap > 0


def test_p_is_refined_near_the_verdicts_thresholds_and_left_alone_elsewhere():
    """issue 33: a p that cannot yet be told from ALPHA / k gets more permutations (the first B unchanged);
    one far from every threshold, or one no permutation reaches (reported as its bound), does not."""
    from reconbench.core.membership import ALPHA, BOUND, MAX_PERMUTATIONS, near_threshold

    assert near_threshold(ALPHA / 2, 2000) and near_threshold(0.0105, 2000)
    assert not near_threshold(0.3, 2000) and not near_threshold(0.0105, 10 ** 9)
    rng = np.random.default_rng(3)
    found = {}
    for trial in range(60):
        scores, members = _one_class(rng, n=40, m=20)
        scores[:, :20] += 0.05 * (trial % 12)
        g = membership_gap([Group.from_matrix("0", scores, members, True)], True)
        found.setdefault(g.p_method.split(",")[0] if g.p_method != BOUND else BOUND, []).append(g)
    refined = [g for g in found.get("permutation", []) if g.permutations > 2000]
    assert refined, {k: [round(g.p, 4) for g in v] for k, v in found.items()}
    assert all(g.permutations <= MAX_PERMUTATIONS and "refined" in g.p_method for g in refined)
    assert all(g.p == pytest.approx(1 / (g.permutations + 1)) for g in found.get(BOUND, []))
