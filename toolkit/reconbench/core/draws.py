"""Across the K draws of a sealed track: the mean gap, its interval, and one verdict.

One draw is one labelling: the permutation test of core/membership.py is valid on average over
labellings, not for a given one (on fashion-n100's one public draw, knowledge-only outputs got
p-values skewed towards 1). A sealed track comes as K independent draws (each its own key-derived
membership and model, trained on its own half of the pool), and an entry runs on each. Per metric,
with g_d the gap and p_d the one-sided permutation p of draw d:

    mean      = (1/K) sum_d g_d
    interval  = mean -+ t_{0.975, K-1} * s / sqrt(K)      s: the sample sd of the g_d (K >= 2)
    p         = Fisher's combination: X = -2 sum_d ln p_d; under H0 the p_d are independent and
                (super-)uniform, so X is at most chi^2 with 2K degrees of freedom, and
                p = P(chi^2_2K >= X) = exp(-X/2) sum_{i<K} (X/2)^i / i!
    verdict   = core/membership.entry_leaks over the metrics' combined p (Bonferroni), as for one draw

The extraction count (core/extraction.py) is pooled, not Fisher-combined. Its p is discrete (with no
member extracted it is about 1 in every draw), and Fisher's combination of discrete p-values is
conservative. Under the count's natural null each draw's K_d and J_d are at most Poisson(lam_m,d) and
Poisson(lam_h,d), and the draws are independent (their own members, model and run), so the totals are
again Poisson with the summed rates and the same Skellam tail tests them:

    k = sum_d k_d of sum_d n_d members,  j = sum_d j_d holdout items
    p_natural = P(K - J >= k - j),  K ~ Poisson(sum_d lam_m,d),  J ~ Poisson(sum_d lam_h,d)

That p is context, not the badge (issue 43, item 4): on a sealed draw an output that copies random
public candidates is near them whatever their membership, so the natural null calls it extraction.
The badge is tested against membership: each draw's record carries its relabelling strata (draw x
class: candidates, members, extracted, extracted members; core/relabel.py), the strata of all K draws
are independent hypergeometrics, and their exact convolution gives one pooled relabelling p:

    relabel_p = P(sum_s X_s >= k),  X_s ~ Hypergeometric(N_s, n_s, e_s)
    extracts  = k > j and relabel_p < ALPHA

A draw whose record has no relabelling block (season 2026-s1's, signed before it existed; that season is
burned and gives no verdict anyway) leaves relabel_p None, and the pooled count no badge.
With one draw it is that draw's own test.

The interval is the spread across draws (the draw and the attack's run both vary), so it is the
uncertainty a reader needs about "this attack on this recipe", not about one model.
benchmarks/bench_sealed_draws.py measures its false-positive rate and power for each K.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from reconbench.core.membership import ALPHA, LEVEL, entry_leaks


@dataclass(frozen=True)
class AcrossDraws:
    draws: int
    mean: float
    low: float | None  # None with one draw: no spread to measure
    high: float | None
    p: float


def fisher_p(ps: list[float]) -> float:
    """Fisher's combined p of independent one-sided p-values (module docstring)."""
    half = -sum(math.log(max(p, 1e-300)) for p in ps)  # X / 2
    term, total = 1.0, 1.0
    for i in range(1, len(ps)):
        term *= half / i
        total += term
    return min(1.0, math.exp(-half) * total)


def across_draws(gaps: list[float], ps: list[float]) -> AcrossDraws:
    from scipy import stats

    k = len(gaps)
    if k == 0 or k != len(ps):
        raise ValueError(f"{k} gaps and {len(ps)} p-values: one of each per draw")
    mean = sum(gaps) / k
    if k == 1:
        return AcrossDraws(1, mean, None, None, float(ps[0]))
    sd = math.sqrt(sum((g - mean) ** 2 for g in gaps) / (k - 1))
    half = float(stats.t.ppf((1 + LEVEL) / 2, k - 1)) * sd / math.sqrt(k)
    return AcrossDraws(k, mean, mean - half, mean + half, fisher_p(ps))


@dataclass(frozen=True)
class CountAcrossDraws:
    members: int  # k: members extracted, summed over the draws
    n_members: int
    holdout: int  # j
    n_holdout: int
    per_draw: tuple[int, ...]  # k_d, in draw order
    p: float  # the pooled Skellam tail of the natural null (module docstring): context beside the badge
    relabel_p: float | None = None  # the pooled membership-relabelling p (core/relabel.py); None: some draw has none

    @property
    def draws(self) -> int:
        return len(self.per_draw)

    @property
    def extracts(self) -> bool:
        """The badge on sealed draws: tested against membership (relabel_p), never on the natural null alone."""
        from reconbench.core.relabel import extracts

        return self.relabel_p is not None and extracts(self.members, self.holdout, self.relabel_p)


def count_across_draws(counts: list[dict]) -> CountAcrossDraws:
    """The extraction count pooled over the draws: `counts` are the draws' sealed.json "extraction"
    records, each with its natural null's expected counts (expected_members, expected_holdout) and, from
    issue 43 on, its relabelling block (`relabel`: strata and p; core/relabel.py)."""
    from reconbench.core.extraction import skellam_sf
    from reconbench.core.relabel import pooled

    if not counts:
        raise ValueError("no draw's extraction count to pool")
    k, j = sum(c["members"] for c in counts), sum(c["holdout"] for c in counts)
    lam_m, lam_h = sum(c["expected_members"] for c in counts), sum(c["expected_holdout"] for c in counts)
    relabel = [c.get("relabel") for c in counts]
    relabel_p = pooled(relabel) if all(isinstance(r, dict) and "strata" in r for r in relabel) else None
    return CountAcrossDraws(k, sum(c["n_members"] for c in counts), j, sum(c["n_holdout"] for c in counts),
                            tuple(c["members"] for c in counts), skellam_sf(k - j, lam_m, lam_h), relabel_p)


def verdict(per_metric: dict[str, AcrossDraws]) -> bool:
    """Leaks across draws: Bonferroni over the metrics' combined p (core/membership.entry_leaks) at ALPHA, with
    the mean gap of the metric that decides it on the members' side."""
    if not per_metric:
        return False
    deciding = min(per_metric.values(), key=lambda a: a.p)
    return entry_leaks([a.p for a in per_metric.values()]) and deciding.mean > 0


__all__ = ["ALPHA", "AcrossDraws", "CountAcrossDraws", "across_draws", "count_across_draws", "fisher_p", "verdict"]
