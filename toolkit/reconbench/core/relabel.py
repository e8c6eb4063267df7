"""The extraction count tested against membership (issue 43, item 4): a membership-relabelling p.

The count's natural-data p (core/extraction.py) asks whether the reconstructions come nearer the pool
than natural images come to each other. On a sealed draw that is the wrong null: an output that copies
random public candidates, knowing nothing of membership, is near them all the same. The null that
matters is that the output ignores membership: which candidates it comes within the extraction
threshold of is then independent of which of them are members.

The draw's members are a uniformly random subset of its candidates, per class (core/seal.py): on a v2
draw n_c members among the whole sealed block's items of class c (every block image was equally likely
to be one), on a v1 draw half of the public pool's items of class c. So per stratum s (a draw and a
class), with

    N_s  candidates,  n_s of them members,  e_s candidates extracted (within the threshold of some
         reconstruction of the class),  k_s of the extracted ones members,

the output being fixed, k_s is under the null the number of members among e_s fixed candidates when
the n_s members are a uniformly random n_s-subset of the N_s:

    X_s ~ Hypergeometric(N_s, n_s, e_s):  P(X_s = x) = C(n_s, x) C(N_s - n_s, e_s - x) / C(N_s, e_s)

Strata are independent (the classes' draws are independent permutations, the draws have their own keys
and models), so the p of the observed total is

    p = P(sum_s X_s >= sum_s k_s),

exact: each stratum's pmf from integer binomials (Python's exact integers, one correctly rounded
division per value), then the pmfs convolved. One member extracted on each of K = 5 v2 draws of
fashion-n100 (n_c = 10 of about 486 block items of its class) gives p ~ (10/486)^5 ~ 4e-9; the same
on a v1 draw, where the candidates are the pool's 20 items of the class, gives (1/2)^5 = 1/32 > 0.01:
the pool alone holds too few non-members to tell one member from chance.

The test needs the candidates to be independent of membership as the attacker sees them: on a v2 draw
the pool itself is secret (a leaked pool makes each pool item a member with probability 1/2, not
n_c/N_c), which is why v2 keeps it with the board.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from reconbench.core.membership import ALPHA


@dataclass(frozen=True)
class Stratum:
    """One draw x class: the counts the relabelling p needs (no index: which items is never published)."""

    key: str  # "<draw>/<class>" on a pooled twin, "<class>" within one draw
    candidates: int  # N_s
    members: int  # n_s
    extracted: int  # e_s: candidates within the threshold of some reconstruction of the class
    extracted_members: int  # k_s

    def __post_init__(self):
        if not (0 <= self.members <= self.candidates and 0 <= self.extracted <= self.candidates
                and 0 <= self.extracted_members <= min(self.members, self.extracted)
                and self.extracted - self.extracted_members <= self.candidates - self.members):
            raise ValueError(f"stratum {self.key}: impossible counts {asdict(self)}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Stratum":
        return cls(str(data["key"]), int(data["candidates"]), int(data["members"]), int(data["extracted"]),
                   int(data["extracted_members"]))


def hypergeom_pmf(candidates: int, members: int, drawn: int) -> np.ndarray:
    """P(X = x) for x = 0..min(members, drawn), X ~ Hypergeometric(candidates, members, drawn), exact."""
    total = math.comb(candidates, drawn)
    out = np.zeros(min(members, drawn) + 1)
    for x in range(max(0, drawn - (candidates - members)), len(out)):
        out[x] = math.comb(members, x) * math.comb(candidates - members, drawn - x) / total
    return out


def relabel_p(strata: list[Stratum]) -> float:
    """P(sum X_s >= sum k_s) with X_s independent Hypergeometric(N_s, n_s, e_s) (module docstring)."""
    k = sum(s.extracted_members for s in strata)
    if k == 0:
        return 1.0
    dist = np.ones(1)
    for s in strata:
        if s.extracted:
            dist = np.convolve(dist, hypergeom_pmf(s.candidates, s.members, s.extracted))
    return float(min(1.0, max(0.0, dist[k:].sum())))


def strata_of(key: str, nearest: np.ndarray, members: np.ndarray, labels: np.ndarray, threshold: float) -> list[Stratum]:
    """One draw's strata: per class, over its candidates, from each candidate's smallest distance to a
    reconstruction of its class (`nearest`, +inf where the class has none), its membership and label."""
    nearest, members, labels = np.asarray(nearest, dtype=np.float64), np.asarray(members, bool), np.asarray(labels)
    out = []
    for c in np.unique(labels):
        here = labels == c
        hit = (nearest <= threshold) & here
        out.append(Stratum(f"{key}{int(c)}", int(here.sum()), int((members & here).sum()), int(hit.sum()),
                           int((hit & members).sum())))
    return out


def record(strata: list[Stratum]) -> dict:
    """The `relabel` block of a draw's extraction record: its strata's counts and their p."""
    return {"strata": [s.to_dict() for s in strata], "p": relabel_p(strata)}


def pooled(records: list[dict]) -> float:
    """The relabelling p of several draws' `relabel` blocks together (their strata are independent)."""
    return relabel_p([Stratum.from_dict(s) for r in records for s in r["strata"]])


def extracts(members: int, holdout: int, p: float) -> bool:
    """"Extracts" on sealed draws: more members than holdout items extracted, and the relabelling p below ALPHA."""
    return members > holdout and p < ALPHA
