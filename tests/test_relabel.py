"""The extraction count tested against membership (issue 43, item 4): core/relabel.py, its pooling across
draws (core/draws.count_across_draws) and the relabelling block of a sealed draw's record
(image/sealed_scores.extraction_count). Independent references: scipy's hypergeom for one stratum, a
Monte Carlo relabelling of real arrays (Fashion-MNIST's sealed block) for several."""

from __future__ import annotations

import numpy as np
import pytest

from reconbench.core.relabel import Stratum, hypergeom_pmf, pooled, record, relabel_p, strata_of


def test_one_stratum_is_scipys_hypergeometric_tail():
    from scipy import stats

    for N, n, e, k in [(486, 10, 1, 1), (486, 10, 7, 2), (20, 10, 5, 4), (4860, 100, 300, 12), (20, 10, 20, 10)]:
        assert hypergeom_pmf(N, n, e) == pytest.approx(stats.hypergeom.pmf(np.arange(min(n, e) + 1), N, n, e), rel=1e-9,
                                                       abs=1e-300)
        assert relabel_p([Stratum("c", N, n, e, k)]) == pytest.approx(stats.hypergeom.sf(k - 1, N, n, e), rel=1e-9)


def test_one_member_per_draw_over_the_block_is_tiny_and_over_the_pool_is_one_in_32():
    """The issue's arithmetic: with the pool's other half alone, one member per draw over K = 5 is p = 1/32 > alpha;
    with the whole block (n_c = 10 of 486), (10/486)^5."""
    from reconbench.core.membership import ALPHA

    pool = [Stratum(f"{d}/3", 20, 10, 1, 1) for d in range(5)]
    block = [Stratum(f"{d}/3", 486, 10, 1, 1) for d in range(5)]
    assert relabel_p(pool) == pytest.approx(1 / 32) and relabel_p(pool) > ALPHA
    assert relabel_p(block) == pytest.approx((10 / 486) ** 5) and relabel_p(block) < ALPHA
    assert relabel_p([Stratum("0/3", 486, 10, 1, 1)]) > ALPHA  # one member on one draw alone is not enough
    assert relabel_p([Stratum("x", 486, 10, 0, 0)]) == 1.0


def test_impossible_counts_are_refused():
    for bad in [(10, 11, 1, 1), (10, 5, 3, 4), (10, 5, 8, 2), (10, 5, 11, 5)]:
        with pytest.raises(ValueError, match="impossible counts"):
            Stratum("s", *bad)


def test_several_strata_match_a_monte_carlo_relabelling_of_real_arrays():
    """Real images: fashion-n100's per-class counts drawn from the sealed block (core/seal.block_draw, a
    throwaway key); a fixed output (copies of some block images, aux elsewhere); the strata from the real
    pairwise search; p against 20,000 random relabellings of the block per class, as the null says."""
    from reconbench.core.seal import block_draw, new_key
    from reconbench.core.tracks import extraction_calibration, get_track
    from reconbench.image.data.arrays import ArraySet
    from reconbench.image.data.fashion import fashion_mnist
    from reconbench.image.data.fashion_splits import VIEWS, fashion_splits, layout
    from reconbench.image.sealed_scores import relabel_strata

    train = fashion_mnist()["train"]
    block = VIEWS["fashion-mnist"].arrays(train, layout()["sealed"])
    per_class = {int(c): int(n) for c, n in zip(*np.unique(fashion_splits("fashion-mnist", 100).target.labels,
                                                            return_counts=True))}
    threshold = extraction_calibration(get_track("fashion-n100")).threshold
    rng = np.random.default_rng(5)
    key = bytes.fromhex(new_key())
    strata, draws = [], []
    for d in range(3):
        idx, members = block_draw(key, "fashion-n100-sealed-s2", d, block.labels, per_class)
        inside = np.zeros(len(block.labels), bool)
        inside[idx[members]] = True
        # an output of one member copy and 40 random block images (mostly non-members), labelled by class:
        # a p neither 0 nor 1, so the Monte Carlo comparison can fail
        picks = np.r_[rng.choice(np.flatnonzero(inside), 1), rng.choice(len(block.labels), 40, replace=False)]
        images, labels = block.images[picks], block.labels[picks]
        got = relabel_strata(images, labels, (ArraySet(block.images, block.labels), inside), threshold)
        strata += [Stratum(f"{d}/{s.key}", s.candidates, s.members, s.extracted, s.extracted_members) for s in got]
        draws.append((got, inside))
        assert sum(s.extracted_members for s in got) >= 1 and sum(s.members for s in got) == sum(per_class.values())
    exact = relabel_p(strata)
    observed = sum(s.extracted_members for s in strata)
    # Monte Carlo: relabel each class's candidates at random (n_c of its block items), count members among the hits
    hits_by = []
    for got, inside in draws:
        for s in got:
            hits_by.append((s.candidates, s.members, s.extracted))
    trials = 20_000
    total = np.zeros(trials, dtype=np.int64)
    for N, n, e in hits_by:
        if e == 0:
            continue
        # members among the e hit candidates when n of N are members at random: one shuffle per trial
        ranks = rng.random((trials, N)).argsort(axis=1)[:, :n]
        total += (ranks < e).sum(axis=1)  # the hits are candidates 0..e-1 (which ones does not matter by symmetry)
    mc = float(np.mean(total >= observed))
    assert 1e-3 < exact < 0.5, exact
    se = max(np.sqrt(exact * (1 - exact) / trials), 1 / trials)
    assert abs(mc - exact) <= 4 * se + 1 / trials, (mc, exact)
    assert pooled([record(g) for g, _ in draws]) == pytest.approx(exact)


def test_strata_of_counts_per_class():
    nearest = np.array([0.0, 1.0, 0.0, 0.0, 5.0, 0.0])
    members = np.array([True, True, False, True, False, False])
    labels = np.array([0, 0, 0, 1, 1, 1])
    got = strata_of("d0/", nearest, members, labels, 0.5)
    assert [s.to_dict() for s in got] == [
        dict(key="d0/0", candidates=3, members=2, extracted=2, extracted_members=1),
        dict(key="d0/1", candidates=3, members=1, extracted=2, extracted_members=1)]


def test_count_across_draws_decides_extracts_on_the_pooled_relabelling_p():
    """The natural p stays beside it as context; without every draw's relabelling block there is no badge."""
    from reconbench.core.draws import count_across_draws

    base = dict(n_members=100, n_holdout=100, expected_members=1e-4, expected_holdout=1e-4, holdout=0)
    one_each_block = [dict(base, members=1, relabel=record([Stratum("3", 486, 10, 1, 1)])) for _ in range(5)]
    one_each_pool = [dict(base, members=1, relabel=record([Stratum("3", 20, 10, 1, 1)])) for _ in range(5)]
    a, b = count_across_draws(one_each_block), count_across_draws(one_each_pool)
    assert a.relabel_p == pytest.approx((10 / 486) ** 5) and a.extracts
    assert b.relabel_p == pytest.approx(1 / 32) and not b.extracts
    assert a.p == b.p < 1e-10  # the natural null calls both extraordinary: it is context only
    legacy = count_across_draws([dict(base, members=1) for _ in range(5)])  # season 2026-s1's records
    assert legacy.relabel_p is None and not legacy.extracts
    mixed = count_across_draws(one_each_block[:4] + [dict(base, members=1)])
    assert mixed.relabel_p is None and not mixed.extracts
    more_holdout = count_across_draws([dict(d, holdout=2) for d in one_each_block])
    assert not more_holdout.extracts  # k > j is needed too
