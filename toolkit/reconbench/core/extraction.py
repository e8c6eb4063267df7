"""The extraction count: how many members some reconstruction reproduces, closer than natural data is.

The membership gap (membership.py) averages over every reconstruction, so a few verbatim members
among a hundred outputs move it by less than its noise (issue 33: ten exact copies in 100 reached
the verdict one time in eight). Reconstruction papers decide per sample instead: Haim et al.
(NeurIPS'22) and Carlini et al. (USENIX'21 GPT-2, USENIX'23 diffusion) and Meehan et al. (AISTATS'20)
call a training item recovered when some output is closer to it than natural data comes to
other natural data. Modality-neutral, like the gap: a modality hands in, per group (a class for
images, the whole set for text), the smallest distance from any reconstruction of the group to each
item of the group's pool (members + holdout, as for the gap), and the track's extraction threshold
t with its pair rate q, both calibrated on public data (image/metrics/extraction.py):

    extracted(x)  = min_i d(rec_i, x) <= t            for each pool item x
    k = #{extracted members},  j = #{extracted holdout items}

t is a low quantile of the distance from a public item to its nearest other public item of its
class, q the share of (item, other item of its class) pairs of the public data within t: the
chance that one natural item lands within t of one given item (where a dataset is too small to
count q below 1e-6, images take t and q from a tail bound: image/metrics/extraction.py).

Two tests of "k exceeds j", reported together:

- p (the verdict's): the natural-data null. If the reconstructions are no nearer the pool than
  natural items of their class are to each other, each (reconstruction, pool item) pair of a group
  is within t with probability at most q, so K ~ Poisson(lam_m) and J ~ Poisson(lam_h) with
  lam = q * sum over groups of n_rec(g) * pool items(g) on each side (the union bound: a Poisson-
  binomial sum of rare events), and p = P(K - J >= k - j) (a Skellam tail). One verbatim member of
  fashion-n100 (lam_m ~ 1e-4) gives p ~ lam_m; a prototype that lands within t of members and
  holdout alike gives k - j ~ 0 and no verdict.
- p_relabel: the membership gap's relabelling test of k - j, exact (per group the extracted items
  are fixed, and a relabelling of the pool's units into as many members as before draws a random
  subset of them: a sum of hypergeometric-like draws, convolved over groups). It needs no
  calibration but it cannot be small for a few items: one extracted item of a pool that is half
  members is a member with probability 1/2 whatever it is, so p_relabel >= 1/2 for k = 1. It is
  reported beside p, never decisive alone.

What keeps the natural null honest is the copy rule (submissions/checks/copies.py): an output
within t of a public item that is not a member (holdout, aux, test, the rest of the dataset) is
refused, so an attack that carries public data and picks what the model fits best cannot score
the count with its lucky picks without also returning the non-members it picks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from reconbench.core.membership import ALPHA


@dataclass(frozen=True)
class ExtractionGroup:
    """One group: per pool item, the smallest distance from any reconstruction of the group."""

    key: str
    nearest: np.ndarray  # (P,) float64; +inf where the group has no reconstruction
    members: np.ndarray  # (P,) bool: True for a member, False for a holdout item
    reconstructions: int  # how many reconstructions the group holds
    units: np.ndarray | None = None  # (P,) int: the relabelling unit of each item (text: its document); None: itself

    @classmethod
    def from_distances(cls, key: str, distances: np.ndarray, members: np.ndarray, units: np.ndarray | None = None):
        """From the (n_rec, P) distances of the group's reconstructions to its pool."""
        distances = np.asarray(distances, dtype=np.float64)
        members = np.asarray(members, dtype=bool)
        if distances.ndim != 2 or distances.shape[1] != members.shape[0]:
            raise ValueError(f"distances {distances.shape} do not match a pool of {members.shape[0]}")
        nearest = distances.min(axis=0) if distances.shape[0] else np.full(members.shape[0], np.inf)
        return cls(key, nearest, members, int(distances.shape[0]), units)


@dataclass(frozen=True)
class Extraction:
    members: int  # k: members within the threshold of some reconstruction
    n_members: int
    holdout: int  # j: holdout items within it
    n_holdout: int
    threshold: float
    pair_rate: float
    expected_members: float  # lam_m: the natural null's expected k
    expected_holdout: float  # lam_h
    p: float  # natural null, P(K - J >= k - j)
    p_relabel: float  # relabelling test of k - j (exact)
    extracted: dict[str, list[int]]  # group -> pool indices of the extracted members

    @property
    def extracts(self) -> bool:
        """The badge "extracts k members": some member extracted, beyond what natural data gives."""
        return self.members > self.holdout and self.p < ALPHA

    def sentence(self) -> str:
        # recorded as "text" in every sealed.json (image/sealed_scores.py), which validate compares field by
        # field with a fresh record: its words stay as they were signed. Pages show ExtractionResult's.
        return (f"extracts {self.members} of {self.n_members} members (holdout: {self.holdout} of {self.n_holdout}), "
                f"p {format_p(self.p)}")


def format_p(p: float) -> str:
    if p == 0.0:  # below the smallest double: the tail underflowed
        return "< 1e-300"
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


# Poisson's tail, quantile and mass from scipy.special, the functions scipy.stats.poisson calls (its
# _sf, _ppf and _pmf, scipy 1.17): the same numbers (tests/test_extraction.py compares them) without
# importing scipy.stats, ~0.5 CPU-s of every evaluation's start (benchmarks/bench_fixed_cost_parts.py).
def _poisson_sf(k: int, lam: float) -> float:
    """P(X >= k) for X ~ Poisson(lam)."""
    if k <= 0:
        return 1.0
    if lam <= 0:
        return 0.0
    from scipy.special import pdtrc

    return float(pdtrc(k - 1, lam))


def _poisson_ppf(q: float, lam: float) -> int:
    """The smallest k with P(X <= k) >= q, for 0 < q < 1 and lam > 0."""
    from scipy.special import pdtr, pdtrik

    k = math.ceil(pdtrik(q, lam))
    return k - 1 if k >= 1 and pdtr(k - 1, lam) >= q else k


def _poisson_pmf(k: np.ndarray, lam: float) -> np.ndarray:
    """P(X = k) for integers k >= 0."""
    from scipy.special import gammaln, xlogy

    return np.clip(np.exp(xlogy(k, lam) - gammaln(k + 1) - lam), 0, 1)


def skellam_sf(d: int, lam_a: float, lam_b: float) -> float:
    """P(A - B >= d) for independent A ~ Poisson(lam_a), B ~ Poisson(lam_b)."""
    if lam_b <= 0:
        return _poisson_sf(d, lam_a)
    top = _poisson_ppf(1 - 1e-16, lam_b) + 1
    b = np.arange(top + 1)
    return float(min(1.0, np.sum(_poisson_pmf(b, lam_b) * np.array([_poisson_sf(d + int(x), lam_a) for x in b]))))


def _relabel_distribution(weights: np.ndarray, chosen: int) -> np.ndarray:
    """Distribution of the sum of `weights` over a uniformly random subset of `chosen` of them:
    units taken one by one, each picked with probability (left to choose) / (units left)."""
    total = int(weights.sum())
    state = np.zeros((chosen + 1, total + 1))  # [picked so far, sum so far]
    state[0, 0] = 1.0
    units = len(weights)
    for i, w in enumerate(weights.astype(int)):
        left = units - i
        pick = np.clip((chosen - np.arange(chosen + 1)) / left, 0.0, 1.0)[:, None]
        new = state * (1.0 - pick)
        new[1:, w:] += (state * pick)[:-1, :total + 1 - w]
        state = new
    return state[chosen]


def _relabel_p(groups: list[ExtractionGroup], hit: list[np.ndarray], k: int) -> float:
    """P(K >= k) over relabellings of each group's units, K the extracted members (k - j = 2K - E)."""
    dist = np.ones(1)
    for g, h in zip(groups, hit):
        units = np.arange(len(g.members)) if g.units is None else np.asarray(g.units)
        ids, inverse = np.unique(units, return_inverse=True)
        weights = np.bincount(inverse, weights=h.astype(float), minlength=len(ids))
        member_unit = np.zeros(len(ids), bool)
        member_unit[inverse[g.members]] = True
        dist = np.convolve(dist, _relabel_distribution(weights, int(member_unit.sum())))
    return float(min(1.0, dist[k:].sum()))


def extraction_count(groups: list[ExtractionGroup], threshold: float, pair_rate: float) -> Extraction:
    """k, j and both tests (module docstring). A pure function of the distances, the membership
    labels and the track's calibration: the open and the sealed tracks call it alike."""
    hit = [g.nearest <= threshold for g in groups]
    k = sum(int((h & g.members).sum()) for g, h in zip(groups, hit))
    j = sum(int((h & ~g.members).sum()) for g, h in zip(groups, hit))
    n_m = sum(int(g.members.sum()) for g in groups)
    n_h = sum(int((~g.members).sum()) for g in groups)
    lam_m = pair_rate * sum(g.reconstructions * int(g.members.sum()) for g in groups)
    lam_h = pair_rate * sum(g.reconstructions * int((~g.members).sum()) for g in groups)
    p = skellam_sf(k - j, lam_m, lam_h)
    p_relabel = _relabel_p(groups, hit, k) if k + j else 1.0
    extracted = {g.key: np.flatnonzero(h & g.members).tolist() for g, h in zip(groups, hit) if (h & g.members).any()}
    return Extraction(members=k, n_members=n_m, holdout=j, n_holdout=n_h, threshold=float(threshold),
                      pair_rate=float(pair_rate), expected_members=float(lam_m), expected_holdout=float(lam_h),
                      p=float(p), p_relabel=float(p_relabel), extracted=extracted)


def pair_rate(pairs_within: int, pairs: int) -> float:
    """q from a calibration's counts: (pairs within t + 1) / (pairs + 1), never 0 (a calibration
    that saw no pair within t bounds the rate, it does not show it is 0)."""
    return (pairs_within + 1) / (pairs + 1) if pairs >= 0 else math.nan


class ExtractionResult(BaseModel):
    """The count as a result file and the board carry it (from an Extraction)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    members: int = Field(ge=0)
    n_members: int = Field(ge=0)
    holdout: int = Field(ge=0)
    n_holdout: int = Field(ge=0)
    threshold: float = Field(ge=0.0)
    pair_rate: float = Field(ge=0.0, le=1.0)
    expected_members: float = Field(ge=0.0)
    expected_holdout: float = Field(ge=0.0)
    p: float = Field(ge=0.0, le=1.0)
    p_relabel: float = Field(ge=0.0, le=1.0)
    extracted: dict[Annotated[str, StringConstraints(max_length=40)], list[int]] = Field(
        default_factory=dict, max_length=100_000, description="group -> pool indices (within the group) extracted")

    @classmethod
    def of(cls, e: Extraction) -> "ExtractionResult":
        return cls(members=e.members, n_members=e.n_members, holdout=e.holdout, n_holdout=e.n_holdout,
                   threshold=e.threshold, pair_rate=e.pair_rate, expected_members=e.expected_members,
                   expected_holdout=e.expected_holdout, p=e.p, p_relabel=e.p_relabel, extracted=e.extracted)

    @property
    def extracts(self) -> bool:
        return self.members > self.holdout and self.p < ALPHA

    def sentence(self) -> str:
        """The count, not a verdict (the verdict word "extracts k" is core/verdict.py's, for a count that fires)."""
        from reconbench.core.verdict import count_text

        return count_text(self)
