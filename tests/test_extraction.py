"""The extraction count (core/extraction.py, image/metrics/extraction.py): one verbatim member among
aux images is counted and nothing else is; knowledge-only sets extract nothing; the two tests match
independent references (scipy's Skellam, brute-force enumeration of relabellings)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from reconbench.core.extraction import (ExtractionGroup, _poisson_pmf, _poisson_ppf, _poisson_sf, _relabel_distribution,
                                       extraction_count, skellam_sf)
from reconbench.core.membership import ALPHA
from reconbench.core.tracks import get_track
from reconbench.image.metrics.extraction import (RATE_CAP, TAIL_PAIRS, calibrate, flattest_chord, image_extraction,
                                                 informative, smallest_pairs)
from reconbench.image.track_files import load_splits, public_dataset


def _calibration(track):
    assert track.extraction is not None, f"{track.id}: no extraction calibration in the registry"
    return track.extraction.threshold, track.extraction.pair_rate


def _one_member_among_aux(track_id: str, seed: int = 0):
    track = get_track(track_id)
    s = load_splits(track)
    rng = np.random.default_rng(seed)
    aux = rng.choice(len(s.aux_same), 99, replace=False)
    which = int(rng.integers(len(s.target)))
    rec = np.concatenate([s.target.images[which:which + 1], s.aux_same.images[aux]])
    rec_y = np.r_[s.target.labels[which], s.aux_same.labels[aux]]
    return track, s, rec, rec_y, which


def _count(track, s, rec, rec_y):
    t, q = _calibration(track)
    return image_extraction(rec, rec_y, s.target.images, s.target.labels, s.holdout.images, s.holdout.labels, t, q)


@pytest.mark.parametrize("track_id", ["fashion-n100", "digits"])
def test_one_exact_member_among_99_aux_images_is_counted_alone(track_id):
    track, s, rec, rec_y, which = _one_member_among_aux(track_id)
    got = _count(track, s, rec, rec_y)
    assert got.members == 1 and got.holdout == 0  # the member, and no false extraction
    label = str(int(s.target.labels[which]))
    pool_index = int(np.flatnonzero(s.target.labels == s.target.labels[which]).tolist().index(which))
    assert got.extracted == {label: [pool_index]}
    assert got.p_relabel >= 0.5 - 1e-9  # one item of a half-member pool: the relabelling test cannot call it
    # the natural null decides: on digits too (100 reconstructions x 50 members of their class at a pair
    # rate of at most 1e-6, the tail bound's cap: p ~ 0.005)
    assert got.p < ALPHA and got.extracts


def test_the_digits_calibration_is_its_tail_bound():
    """digits counts no natural rate below ~6e-6, so its threshold is the tail bound's (module docstring
    of image/metrics/extraction.py): recomputed here from its own pairs, except the reference's exponent
    (Fashion-MNIST's 2.4e8 pairs: scripts/extraction_thresholds.py, benchmarks/bench_tail_bound.py)."""
    track = get_track("digits")
    cal = track.extraction
    images, labels = public_dataset(track)
    scale = 64 * 255.0 ** 2
    smallest, pairs = smallest_pairs(informative(images), labels, TAIL_PAIRS)
    s_a, b_own = flattest_chord(smallest, pairs, TAIL_PAIRS / pairs)
    assert cal.tail is not None and cal.tail.rate_cap == RATE_CAP and cal.pairs == 2 * pairs
    assert cal.tail.anchor == pytest.approx(s_a / scale, rel=1e-12) and cal.tail.exponent_own == pytest.approx(b_own)
    assert cal.tail.exponent == min(cal.tail.exponent_own, cal.tail.exponent_reference)
    assert cal.pair_rate == pytest.approx(cal.tail.anchor_rate * (cal.threshold / cal.tail.anchor) ** cal.tail.exponent)
    assert cal.pair_rate <= RATE_CAP * (1 + 1e-9)
    # closer than any two natural digits of a class ever are (their closest pair: 7,168 grey levels^2)
    assert cal.pairs_within == 0 and cal.threshold * scale < smallest[0]


def test_the_flattest_chord_of_a_power_law_is_its_exponent():
    """C(s) = 1e-3 (s / 1000) ** 2 exactly at every counted pair: every chord from the anchor (the
    1000th pair, at 1000) has slope 2; one near-duplicate far below the law flattens it, and the bound
    must follow it."""
    pairs = 10**6
    s = 1000.0 * (np.arange(1, 1001) / 1000) ** 0.5  # the k-th pair where C = k / pairs
    s_a, b = flattest_chord(s, pairs, 1000 / pairs)
    assert s_a == pytest.approx(1000.0) and b == pytest.approx(2.0, rel=1e-9)
    dup = np.r_[0.5, s[1:]]  # the closest pair at 0.5 instead of 31.6: one pair where the law expects 2.5e-4
    _, flatter = flattest_chord(dup, pairs, 1000 / pairs)
    assert flatter == pytest.approx(math.log(1000) / math.log(2000), rel=1e-9) and flatter < 2.0


@pytest.mark.parametrize("track_id", ["fashion-n100", "digits"])
def test_knowledge_only_sets_extract_nothing(track_id):
    """20 sets an attacker could make without the model: aux draws, aux class means, noise around them."""
    track = get_track(track_id)
    s = load_splits(track)
    aux, aux_y = s.aux_same.images, s.aux_same.labels
    means = np.stack([aux[aux_y == c].astype(float).mean(0) for c in range(track.num_classes)])
    for seed in range(20):
        rng = np.random.default_rng(100 + seed)
        if seed % 3 == 0:
            pick = rng.choice(len(aux), 100, replace=False)
            rec, rec_y = aux[pick], aux_y[pick]
        else:
            rec_y = rng.integers(0, track.num_classes, 100)
            noise = 0.0 if seed % 3 == 1 else 20.0
            rec = np.clip(means[rec_y] + rng.normal(0, noise, means[rec_y].shape), 0, 255).round().astype(np.uint8)
        got = _count(track, s, rec, rec_y)
        assert got.members == 0 and got.holdout == 0 and not got.extracts, f"set {seed}: {got.sentence()}"


def test_the_natural_null_is_scipys_skellam():
    from scipy.stats import skellam

    for d, a, b in [(1, 0.01, 0.01), (2, 0.5, 0.3), (0, 0.2, 0.7), (3, 1.5, 0.0), (-1, 0.4, 0.9)]:
        want = skellam.sf(d - 1, a, b) if b > 0 else __import__("scipy.stats").stats.poisson.sf(d - 1, a)
        assert skellam_sf(d, a, b) == pytest.approx(want, rel=1e-9, abs=1e-15)


def test_the_poisson_functions_are_scipy_stats_own_numbers():
    """core/extraction.py takes Poisson's tail, quantile and mass from scipy.special (not importing
    scipy.stats at every evaluation's start): bit for bit what scipy.stats.poisson gives."""
    from scipy.stats import poisson

    for lam in (1e-6, 3e-4, 0.01, 0.37, 1.0, 4.2, 30.0, 250.0):
        assert _poisson_ppf(1 - 1e-16, lam) == int(poisson.ppf(1 - 1e-16, lam))
        for q in (1e-9, 0.3, 0.5, 0.99):
            assert _poisson_ppf(q, lam) == int(poisson.ppf(q, lam)), (q, lam)
        k = np.arange(0, int(poisson.ppf(1 - 1e-16, lam)) + 3)
        assert np.array_equal(_poisson_pmf(k, lam), poisson.pmf(k, lam)), lam
        for j in range(1, 12):
            assert _poisson_sf(j, lam) == float(poisson.sf(j - 1, lam)), (j, lam)


def test_the_relabelling_distribution_is_the_enumerated_one():
    weights = np.array([0, 2, 1, 0, 1, 3, 0])
    for chosen in (0, 1, 3, 7):
        sums = [sum(c) for c in itertools.combinations(weights, chosen)]
        want = np.bincount(sums, minlength=weights.sum() + 1) / len(sums)
        assert np.allclose(_relabel_distribution(weights, chosen), want, atol=1e-12)


def test_relabelling_by_unit_moves_a_document_whole():
    """Text permutes documents: two extracted sentences of one member document are one draw."""
    nearest = np.array([0.0, 0.0, 5.0, 5.0, 5.0, 5.0])
    members = np.array([True, True, True, False, False, False])
    by_item = extraction_count([ExtractionGroup("all", nearest, members, 4)], 1.0, 1e-6)
    units = np.array([0, 0, 1, 2, 2, 3])
    by_doc = extraction_count([ExtractionGroup("all", nearest, members, 4, units)], 1.0, 1e-6)
    assert by_item.members == by_doc.members == 2
    assert by_item.p_relabel == pytest.approx(3 / 15)  # both of 2 extracted among 3 of 6 items
    assert by_doc.p_relabel == pytest.approx(0.5)  # document 0 is one of 2 member documents of 4


def test_calibration_counts_pairs_exactly():
    """A tiny dataset whose pair distances are known: the threshold is a nearest-neighbour distance."""
    x = np.zeros((6, 1, 2, 2), np.uint8)
    x[1, 0, 0, 0] = 1  # MSE 1/4 grey level^2 from image 0
    x[2, 0, 0, 0] = 40
    x[3, 0, 0, 0] = 42
    x[4] = 200
    x[5] = x[0]  # a byte-identical duplicate: counted once
    y = np.array([0, 0, 0, 0, 1, 0])
    got = calibrate(x, y, quantile=0.0, rate_cap=1.0)  # the counted rate, uncapped (a tiny set has no tail)
    assert got["threshold"] == pytest.approx(1 / (4 * 255.0 ** 2))
    assert got["pairs"] == 4 * 3  # class 0: four distinct images; class 1: one (no pair)
    assert got["pairs_within"] == 2  # 0-1 and 1-0
    assert got["pair_rate"] == pytest.approx(3 / 13)


def test_members_of_a_class_without_reconstructions_count_in_n():
    track, s, rec, rec_y, which = _one_member_among_aux("fashion-n100")
    keep = rec_y == rec_y[0]  # only the copied member's class
    got = _count(track, s, rec[keep], rec_y[keep])
    assert got.members == 1 and got.n_members == len(s.target) and got.n_holdout == len(s.holdout)


def test_a_count_signed_at_a_retired_calibration_is_re_scored_another_is_refused_and_a_wrong_one_fails():
    """rescore.extraction: a result signed before the track's threshold moved (digits' did) claims the
    constants the registry keeps in retired_extraction; the board shows the count re-scored at the
    registry's, never the claim. A count claimed at constants the registry never held is refused (issue 43:
    a threshold of the entry's own choosing). At the registry's own constants, a claimed k that the
    recomputation does not find still fails."""
    from types import SimpleNamespace

    from reconbench.core.extraction import ExtractionResult
    from reconbench.submissions.checks.rescore import extraction_check

    track = get_track("digits")
    (retired,) = track.retired_extraction
    actual = ExtractionResult(members=0, n_members=100, holdout=0, n_holdout=100, threshold=track.extraction.threshold,
                              pair_rate=track.extraction.pair_rate, expected_members=0.01, expected_holdout=0.01, p=1.0,
                              p_relabel=1.0)

    def check(claimed):
        ctx = SimpleNamespace(track=track,
                              result=SimpleNamespace(payload=SimpleNamespace(membership=SimpleNamespace(extraction=claimed))))
        [c] = extraction_check(ctx, actual)
        return c, ctx.extraction

    old_calibration = actual.model_copy(update=dict(members=1, threshold=retired.threshold, pair_rate=retired.pair_rate,
                                                    p=0.04))
    c, shown = check(old_calibration)
    assert c.status == "pass" and "earlier calibration" in c.message and "0 of 100 members extracted against 0 holdout items" in c.message
    assert shown is actual
    # a hostile claim: a looser threshold of its own, under which its outputs "extract" members
    chosen = actual.model_copy(update=dict(members=40, threshold=5e-3, pair_rate=1e-7, p=1e-12))
    c, _ = check(chosen)
    assert c.status == "fail" and "never held" in c.message and "threshold 0.005" in c.message
    # the retired threshold with another pair rate is not the retired calibration either
    c, _ = check(old_calibration.model_copy(update=dict(pair_rate=1e-9)))
    assert c.status == "fail" and "never held" in c.message
    inflated = actual.model_copy(update=dict(members=5, p=1e-9))
    c, _ = check(inflated)
    assert c.status == "fail" and "members 5 claimed, 0 recomputed" in c.message


def test_every_committed_count_is_at_its_tracks_calibration_or_one_the_registry_retired():
    """The board stays valid under the rule above: each committed entry's claimed count is at the registry's
    calibration of its track, or at one the registry lists as retired (digits' baselines, signed before the
    tail bound)."""
    import json
    from pathlib import Path

    from reconbench.core.tracks import TrackError

    seen = 0
    for path in sorted((Path(__file__).parents[1] / "submissions").glob("*/*/result.json")):
        payload = json.loads(path.read_text())["payload"]
        claimed = (payload.get("membership") or {}).get("extraction")
        if claimed is None:
            continue
        try:
            track = get_track(payload["track"])
        except TrackError:
            continue
        held = [(track.extraction.threshold, track.extraction.pair_rate)]
        held += [(r.threshold, r.pair_rate) for r in track.retired_extraction]
        assert (claimed["threshold"], claimed["pair_rate"]) in held, path
        seen += 1
    assert seen >= 30
