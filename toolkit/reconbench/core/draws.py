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


def verdict(per_metric: dict[str, AcrossDraws]) -> bool:
    """Leaks across draws: Bonferroni over the metrics' combined p (core/membership.entry_leaks) at ALPHA, with
    the mean gap of the metric that decides it on the members' side."""
    if not per_metric:
        return False
    deciding = min(per_metric.values(), key=lambda a: a.p)
    return entry_leaks([a.p for a in per_metric.values()]) and deciding.mean > 0


__all__ = ["ALPHA", "AcrossDraws", "across_draws", "fisher_p", "verdict"]
