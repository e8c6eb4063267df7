"""The membership gap: are the reconstructions closer to the training set than to data the model never saw?

Modality-neutral: image metrics (metrics/leakage.py) and text metrics (text/metrics/leakage.py) hand
in, per group of reconstructions (a class for images; the whole set for text), each reconstruction's
scores against every item of the group's *pool* = its targets (members) + as many holdout items
(non-members: the track's holdout split, same distribution, never trained on). Everything below
follows from those score matrices:

    best_T(i) = best score of reconstruction i over the pool's members     (S-Dis's nearest target)
    best_H(i) = best score of reconstruction i over the pool's non-members (same engine, same class)
    vs_target = mean_i best_T(i),  vs_holdout = mean_i best_H(i)
    gap       = vs_target - vs_holdout  (similarities: SSIM, BLEU, ...)
              = vs_holdout - vs_target  (distances: MSE, LPIPS, KNN distance)
so a positive gap always means "closer to the members". A reconstruction in a group without a pool
(its class has no target) scores the metric's worst value on both sides and adds 0 to the gap.

The test: a paired permutation test over membership. What was randomised when the track was made is
which pool items became members: the target set and the holdout are draws of the same size and class
counts from one shuffled dataset. Under H0 ("the reconstructions carry nothing about which items the
model trained on") every re-labelling of each group's pool into members and non-members, with the
same counts, is as likely as the real one. Each permutation re-labels every group's pool at random
and recomputes the gap from the same score matrices, keeping every reconstruction's pairing of a
best member and a best non-member. B = PERMUTATIONS permutations from a fixed seed give:

    p        one-sided, H1: gap > 0. (1 + #{permuted gap >= gap}) / (1 + B); when no permutation
             reaches the observed gap that share only says p <= 1/(1 + B), and that bound is what is
             reported (`p_method` says so; the board writes "p <= ..."). A normal tail extrapolated
             past the permutations would claim more than they show.
             Refined near the verdict: while p cannot yet be told from ALPHA / k (k = 1..8, the
             Bonferroni thresholds an entry's verdict uses) at 99% Monte Carlo confidence, B doubles
             (same stream: the first B permutations are unchanged), up to MAX_PERMUTATIONS.
    interval 95%: gap - q97.5, gap - q2.5 of the permutation distribution (inverting the test under a
             shift: the gap's spread under H0 is the permutation distribution's).

Why not a sign flip per reconstruction, or a bootstrap over reconstructions: both treat the
reconstructions' differences best_T(i) - best_H(i) as independent, and they are not: every
reconstruction of a class meets the same ~50 targets and ~50 holdout images, so a class whose member
half happens to be tighter moves all of its differences the same way. On the digits reference rows
(the aux images, which cannot know the members) a sign flip calls several metrics significant;
re-labelling the pool does not (benchmarks/bench_membership_tests.py measures both).

Cost: a permutation only needs, per reconstruction, its best member and best non-member under the new
labels, found among the row's TOP_K best pool items (exact when the pool has at most TOP_K items,
otherwise exact unless all TOP_K fall on one side: probability about 2^-TOP_K). B x n x K booleans per
group, in chunks of CHUNK permutations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

PERMUTATIONS = 2000
SEED = 0
TOP_K = 64
CHUNK = 250
LEVEL = 0.95
ALPHA = 0.01  # the verdicts' level (core/verdict.py): "membership signal", "extracts k"


@dataclass(frozen=True)
class Group:
    """One group's reconstructions x pool scores, as each row's best K pool items (best first)."""

    key: str  # the class ("3") or "all"
    values: np.ndarray  # (n, K) float64 scores, best first
    columns: np.ndarray  # (n, K) int64 pool indices of those scores
    members: np.ndarray  # (P,) bool: True for a target, False for a holdout item

    @classmethod
    def from_matrix(cls, key: str, scores: np.ndarray, members: np.ndarray, larger_is_better: bool,
                    top_k: int = TOP_K) -> "Group":
        scores = np.asarray(scores, dtype=np.float64)
        members = np.asarray(members, dtype=bool)
        if scores.ndim != 2 or scores.shape[1] != members.shape[0]:
            raise ValueError(f"scores {scores.shape} do not match a pool of {members.shape[0]}")
        k = min(top_k, scores.shape[1])
        # stable sort: among equal scores the lower pool index comes first (as the pairwise engine's ties)
        order = np.argsort(-scores if larger_is_better else scores, axis=1, kind="stable")[:, :k]
        return cls(key, np.take_along_axis(scores, order, axis=1), order.astype(np.int64), members)

    def __len__(self) -> int:
        return int(self.values.shape[0])


@dataclass(frozen=True)
class Gap:
    vs_target: float
    vs_holdout: float
    gap: float
    low: float
    high: float
    p: float
    p_method: str  # "permutation" (maybe refined), or BOUND when no permutation reached the gap
    permutations: int
    per_group: dict[str, float] = field(default_factory=dict)  # each group's share of the gap (its mean difference)
    best_target: np.ndarray | None = field(default=None, repr=False)  # per reconstruction, for plots
    best_holdout: np.ndarray | None = field(default=None, repr=False)
    p_initial: float | None = None  # p from the first B permutations, before refinement (what results signed before it claim)

    @property
    def leaks(self) -> bool:
        return self.p < ALPHA and self.gap > 0


# x * PACK >> 56, for a 64-bit word whose eight bytes are 0 or 1: those eight as bits (byte i -> bit i);
# the 64 partial products land on distinct bits, so nothing carries.
PACK = np.uint64(0x0102040810204080)


def _best(values: np.ndarray, columns: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Best member and best non-member score per row, for labels of shape (P,) or (B, P).

    A row's K <= TOP_K sides become one 64-bit word (bit j: its j-th best pool item is a member), so
    the first member is the word's lowest set bit and the first non-member its complement's: the
    items an argmax over the booleans finds (`_best_by_scan`, for rows of more than 64), at a fraction
    of its cost (it was the test's main cost)."""
    side = np.take(labels, columns, axis=-1)  # (n, K) or (B, n, K), C order
    k = side.shape[-1]
    if k > 64:
        return _best_by_scan(values, side)
    if k < 64:
        side = np.concatenate([side, np.zeros((*side.shape[:-1], 64 - k), bool)], axis=-1)
    words = ((side.view("<u8") * PACK) >> np.uint64(56)).astype(np.uint8)  # (..., 8) bytes of bits
    bits = np.ascontiguousarray(words).view("<u8")[..., 0]
    rows = np.arange(values.shape[0])
    out = []
    for want in (bits, ~bits & np.uint64((1 << k) - 1)):
        found = want != 0
        lowest = want & (~want + np.uint64(1))  # the lowest set bit alone: a power of two, exact as a float
        first = np.where(found, np.frexp(lowest.astype(np.float64))[1] - 1, 0)
        # none of the row's K best on this side (only when K < P): its K-th value bounds the best
        out.append(np.where(found, values[rows, first], values[:, -1]))
    return out[0], out[1]


def _best_by_scan(values: np.ndarray, side: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    out = []
    for want in (side, ~side):
        first = want.argmax(axis=-1)
        found = np.take_along_axis(want, first[..., None], axis=-1)[..., 0]
        vals = np.broadcast_to(values, want.shape)
        best = np.take_along_axis(vals, first[..., None], axis=-1)[..., 0]
        out.append(np.where(found, best, vals[..., -1]))
    return out[0], out[1]


def _permuted_labels(rng: np.random.Generator, members: np.ndarray, count: int) -> np.ndarray:
    """(count, P) random re-labellings with as many members as `members` holds: in each row, the items
    whose random keys are the m smallest (m members). A partition finds the m-th smallest key in
    linear time; a row with a tie at it (float64 keys: as good as never) takes the ranks of a double
    argsort, as every row did before, so the labels are the same either way."""
    keys = rng.random((count, members.shape[0]))
    m = int(members.sum())
    if m in (0, members.shape[0]):
        return np.full(keys.shape, bool(m))
    labels = keys <= np.partition(keys, m - 1, axis=1)[:, m - 1:m]
    tied = labels.sum(axis=1) != m
    if tied.any():
        labels[tied] = keys[tied].argsort(axis=1).argsort(axis=1) < m
    return labels


def membership_gap(groups: list[Group], larger_is_better: bool, n_total: int | None = None, worst: float = 0.0,
                   permutations: int = PERMUTATIONS, seed: int = SEED) -> Gap | None:
    """The gap, its 95% interval and one-sided p (module docstring). n_total: all reconstructions,
    those without a group (no pool for their class) included: they score `worst` on both sides (as in
    S-Dis) and add 0 to every difference. None when no reconstruction has a group: no test."""
    sign = 1.0 if larger_is_better else -1.0
    n = sum(len(g) for g in groups)
    n_total = n if n_total is None else n_total
    if n == 0:  # e.g. one update image, and a reconstruction labelled with another class: nothing to test
        return None
    missing = n_total - n  # reconstructions without a pool
    best_t, best_h, per_group = [], [], {}
    for g in groups:
        t, h = _best(g.values, g.columns, g.members)
        best_t.append(t)
        best_h.append(h)
        per_group[g.key] = float(sign * (t - h).mean())
    best_t, best_h = np.concatenate(best_t), np.concatenate(best_h)
    gap = float(sign * (best_t - best_h).sum() / n_total)
    rng = np.random.default_rng(seed)
    null = _null(groups, sign, rng, permutations) / n_total
    reached = _reached(null, gap)
    p_initial = (1 + reached) / (1 + len(null))
    # refine near the verdict's thresholds: more permutations from the same stream (the first B are unchanged)
    # (none reached: the bound 1/(B+1) already sits below every ALPHA / k, nothing to refine)
    while len(null) < MAX_PERMUTATIONS and reached and near_threshold((1 + reached) / (1 + len(null)), len(null)):
        null = np.concatenate([null, _null(groups, sign, rng, len(null)) / n_total])
        reached = _reached(null, gap)
    vs_target = float((best_t.sum() + missing * worst) / n_total)
    vs_holdout = float((best_h.sum() + missing * worst) / n_total)
    # none reached: the share only bounds p, and the bound is what is reported (never a tail extrapolated past the data)
    p = (1 + reached) / (1 + len(null))
    method = BOUND if not reached else "permutation" if len(null) == permutations else \
        f"permutation, refined to {len(null)} near the verdict's level"
    # the interval from the first B permutations: refinement sharpens p near a threshold, not the interval
    q_low, q_high = np.quantile(null[:permutations], [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return Gap(vs_target=vs_target, vs_holdout=vs_holdout, gap=gap, low=float(gap - q_high), high=float(gap - q_low),
               p=float(p), p_method=method, permutations=len(null), per_group=per_group,
               best_target=best_t, best_holdout=best_h, p_initial=float(p_initial))


BOUND = "bound: no permutation reached the gap, p <= 1/(B+1)"
MAX_PERMUTATIONS = 16_000
VERDICT_TESTS = 8  # an entry's verdict divides ALPHA by its number of tested gaps (entry_leaks): up to this many
assert 1 / (PERMUTATIONS + 1) < ALPHA / VERDICT_TESTS  # so a gap no permutation reaches needs no refinement
Z_REFINE = 2.58  # two-sided 99%: refine while p is this many Monte Carlo standard errors from a threshold


def near_threshold(p: float, permutations: int) -> bool:
    """Whether the Monte Carlo p from `permutations` draws cannot yet be told from some ALPHA / k."""
    for k in range(1, VERDICT_TESTS + 1):
        tau = ALPHA / k
        if abs(p - tau) < Z_REFINE * math.sqrt(tau * (1 - tau) / permutations):
            return True
    return False


def _null(groups: list[Group], sign: float, rng: np.random.Generator, count: int) -> np.ndarray:
    """`count` permuted gaps (sums over every group's reconstructions, not yet divided by n_total)."""
    null = np.zeros(count)
    for g in groups:
        for lo in range(0, count, CHUNK):
            labels = _permuted_labels(rng, g.members, min(CHUNK, count - lo))
            pt, ph = _best(g.values, g.columns, labels)
            null[lo:lo + len(labels)] += sign * (pt - ph).sum(axis=1)
    return null


def _reached(null: np.ndarray, gap: float) -> int:
    return int((null >= gap - 1e-12 * max(1.0, abs(gap))).sum())


def entry_leaks(ps: list[float]) -> bool:
    """The verdict over an entry's metrics: Bonferroni over the gaps it has (the smallest p times their
    number below ALPHA). Several metrics of one entry are several tests of one question."""
    ps = [p for p in ps if p is not None]
    return bool(ps) and min(ps) * len(ps) < ALPHA
