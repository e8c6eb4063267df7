"""The recovery count ("recovers k", issue 44): members recognisable in their best reconstruction, per
sample, more than holdout items are, decided by membership relabelling.

Between the extraction count (core/extraction.py: verbatim, closer than natural data ever comes) and
the mean gap (core/membership.py: the reconstructions as a whole), the reconstruction papers count
recognisable recoveries per sample against a null:

- Haim et al., "Reconstructing Training Data from Trained Neural Networks" (NeurIPS 2022, arXiv
  2206.07758), Sec. 5: each training sample's SSIM to its nearest reconstruction, sorted, drawn beside
  the same curve for test samples (which the model never saw): the reconstruction recovers training
  samples where the training curve stands above the test curve. The board draws that plot on every
  image entry page (`ssim` below) and makes the comparison a test.
- Carlini et al., "Extracting Training Data from Diffusion Models" (USENIX Security 2023, arXiv
  2301.13188), Sec. 4 ((l2, delta)-extraction): an output counts as a training image when its
  Euclidean distance to it is small *relative* to how far it is from the training set's other
  images (their ratio to the mean distance of the output's nearest neighbours). Made per member here:
  the member's distance to its nearest reconstruction over its distance to its nearest other
  public image, so that 1 means "as close as natural data comes to it".

Per group g (a class for images) and pool item x of g (its members, then as many holdout items:
the gap's and the count's pools):

    near(x)  = min over the group's reconstructions r of d(r, x)          (+inf: no reconstruction)
    nn(x)    = min over the public images y other than x of d(y, x)       (any class; a byte-identical
               public duplicate of x gives 0)
    d        the modality's distance: for images the Euclidean distance in grey levels, at the best of
             the nine shifts of x by at most one pixel (image/metrics/recovery.py), the same on both sides
    rel(x)   = near(x) / nn(x)                                           (+inf where nn(x) = 0)
    ssim(x)  = max over the group's reconstructions of SSIM(r, x)        (shown, Haim's curve; not decisive)
    recovered(x) = rel(x) < TAU

    k = #{recovered members},  j = #{recovered holdout items}
    p = P(K >= k) under membership relabelling: within each group the recovered items are fixed (they
        depend on the reconstructions and the images only) and a relabelling draws which of the
        group's P_g items are its M_g members, so K_g ~ Hypergeometric(P_g, M_g, n_g) with n_g the
        group's recovered items, independent across groups; K = sum_g K_g (a convolution).
    recovers  <=>  k > j and p < ALPHA

Why TAU = 1 and relative l2 (not SSIM) decides: every public image y other than x has d(y, x) >=
nn(x) by definition, so an output made of public images (aux images, a member's nearest public
neighbours, chosen with any knowledge of who the members are) brings no pool item under 1 but the
returned images themselves: a look-alike is never credited, whatever was known, and a returned
non-member credits a holdout item (j), against the entry. (Returning members verbatim is the
extraction count's and the copy rules' case.) Outputs that are not public images (class
means, mixups, noise) can come under 1, but outputs that know nothing of membership are exchangeable
between members and holdout, so the relabelling test holds them at ALPHA exactly (the test's size).
SSIM has no such bound (a public look-alike can score high), so it is shown, not counted.
benchmarks/bench_recovers_calibration.py measures both sides: knowledge-only outputs (and public
look-alikes chosen for the members) against the rule, and noisy, blurred and shifted member copies.

What relabelling cannot do: decide on a handful. One recovered item of a pool that is half members is a
member with probability about 1/2 whatever it is, so p >= 1/2 for k = 1 and about 2^-k for k items
with no holdout: "recovers" needs about 7 recovered members and no holdout item (the extraction count,
with its natural-data null, is the tier that decides on one verbatim member).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from reconbench.core.membership import ALPHA

TAU = 1.0  # rel(x) < TAU: closer to x than any other public image is (module docstring)
SHOWN = 12  # best recovered pairs kept for the entry page's strip


@dataclass(frozen=True)
class RecoveryGroup:
    """One group's pool: per item the distances and scores the rule reads (module docstring)."""

    key: str
    near: np.ndarray  # (P,) float64: l2 to the nearest reconstruction of the group (+inf: none)
    public: np.ndarray  # (P,) float64: l2 to the nearest other public image (0: a public duplicate)
    members: np.ndarray  # (P,) bool
    ssim: np.ndarray | None = None  # (P,) best SSIM of any reconstruction of the group (nan: none)
    best: np.ndarray | None = None  # (P,) int: the group's reconstruction nearest in l2 (-1: none)
    index: np.ndarray | None = None  # (P,) int: the item's index in the target set (members) or the holdout

    def __post_init__(self):
        p = self.members.shape[0]
        for name in ("near", "public", "ssim", "best", "index"):
            value = getattr(self, name)
            if value is not None and np.shape(value) != (p,):
                raise ValueError(f"group {self.key}: {name} has shape {np.shape(value)}, the pool {p} items")
        if np.isnan(self.near).any() or np.isnan(self.public).any() or (self.public < 0).any() or (self.near < 0).any():
            raise ValueError(f"group {self.key}: distances must be non-negative numbers (nan or negative given)")

    @property
    def relative(self) -> np.ndarray:
        """rel(x) = near(x) / nn(x); +inf where nn(x) = 0 (a public duplicate: nothing can be credited)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            out = self.near / self.public
        return np.where(self.public > 0, out, np.inf)


def hypergeometric_pmf(population: int, successes: int, draws: int) -> np.ndarray:
    """P(K = k), k = 0..draws, K ~ Hypergeometric: `draws` items from `population` of which
    `successes` are marked, C(M, k) C(N - M, n - k) / C(N, n), in log space (exact to rounding)."""
    from scipy.special import gammaln

    def log_comb(n, k):
        return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)

    k = np.arange(draws + 1)
    ok = (k <= successes) & (draws - k <= population - successes)
    out = np.zeros(draws + 1)
    kk = k[ok]
    out[ok] = np.exp(log_comb(successes, kk) + log_comb(population - successes, draws - kk)
                     - log_comb(population, draws))
    return out


def relabel_p(groups: list[RecoveryGroup], hits: list[np.ndarray], k: int) -> float:
    """P(K >= k): K the recovered members when each group's members are redrawn at random (same count)."""
    dist = np.ones(1)
    for g, h in zip(groups, hits):
        dist = np.convolve(dist, hypergeometric_pmf(len(g.members), int(g.members.sum()), int(h.sum())))
    return float(min(1.0, max(0.0, dist[k:].sum()))) if k > 0 else 1.0


@dataclass(frozen=True)
class Recovery:
    members: int  # k
    n_members: int
    holdout: int  # j
    n_holdout: int
    tau: float
    p: float
    recovered: dict[str, list[int]]  # group -> pool indices of the recovered members
    groups: list[RecoveryGroup] = field(default_factory=list, repr=False)

    @property
    def recovers(self) -> bool:
        """The verdict "recovers k": more recovered members than holdout items, and p < ALPHA."""
        return self.members > self.holdout and self.p < ALPHA


def recovery_count(groups: list[RecoveryGroup], tau: float = TAU) -> Recovery:
    """k, j and the relabelling p (module docstring): a pure function of the pool's distances and labels."""
    hits = [g.relative < tau for g in groups]
    k = sum(int((h & g.members).sum()) for g, h in zip(groups, hits))
    j = sum(int((h & ~g.members).sum()) for g, h in zip(groups, hits))
    return Recovery(members=k, n_members=sum(int(g.members.sum()) for g in groups), holdout=j,
                    n_holdout=sum(int((~g.members).sum()) for g in groups), tau=float(tau),
                    p=relabel_p(groups, hits, k),
                    recovered={g.key: np.flatnonzero(h & g.members).tolist() for g, h in zip(groups, hits)
                               if (h & g.members).any()},
                    groups=list(groups))


def _finite(values) -> list[float | None]:
    """JSON has no inf/nan: None stands for "no value" (no reconstruction, a public duplicate)."""
    return [float(v) if np.isfinite(v) else None for v in np.asarray(values, dtype=np.float64)]


Key = Annotated[str, StringConstraints(max_length=40)]
Values = Annotated[list[float | None], Field(max_length=100_000)]


class RecoveryItems(BaseModel):
    """One group's per-item values, for the entry page's curves (members and holdout, pool order)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    members: list[bool] = Field(max_length=100_000)
    relative: Values  # rel(x); None: +inf
    ssim: Values  # best SSIM; None: no reconstruction of the group
    best: list[int] = Field(max_length=100_000)  # nearest reconstruction (index into the entry's file), -1: none
    index: list[int] = Field(max_length=100_000)  # index in the target set (members) or in the holdout


class RecoveryResult(BaseModel):
    """The count as validation and the board carry it (never in a signed payload: computed at re-scoring)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    members: int = Field(ge=0)
    n_members: int = Field(ge=0)
    holdout: int = Field(ge=0)
    n_holdout: int = Field(ge=0)
    tau: float = Field(gt=0.0)
    p: float = Field(ge=0.0, le=1.0)
    recovered: dict[Key, list[int]] = Field(default_factory=dict, max_length=100_000)
    items: dict[Key, RecoveryItems] = Field(default_factory=dict, max_length=100_000)

    @classmethod
    def of(cls, r: Recovery) -> "RecoveryResult":
        items = {g.key: RecoveryItems(
            members=g.members.tolist(), relative=_finite(g.relative),
            ssim=_finite(g.ssim if g.ssim is not None else np.full(len(g.members), np.nan)),
            best=[int(b) for b in (g.best if g.best is not None else np.full(len(g.members), -1))],
            index=[int(i) for i in (g.index if g.index is not None else np.arange(len(g.members)))]) for g in r.groups}
        return cls(members=r.members, n_members=r.n_members, holdout=r.holdout, n_holdout=r.n_holdout, tau=r.tau,
                   p=r.p, recovered=r.recovered, items=items)

    @property
    def recovers(self) -> bool:
        return self.members > self.holdout and self.p < ALPHA

    def sentence(self) -> str:
        """The count, not a verdict (the word "recovers k" is core/verdict.py's, for a count that fires)."""
        from reconbench.core.verdict import recovery_text

        return recovery_text(self)

    def curves(self) -> dict[str, list[tuple[float, float, bool, str, int, int]]]:
        """Haim's per-sample curves: {"members": [...], "holdout": [...]}, each item (ssim, rel, recovered,
        group, pool index, best reconstruction), sorted by SSIM, best first (no SSIM: last)."""
        out = {"members": [], "holdout": []}
        for key, it in self.items.items():
            for i, (m, rel, s, b) in enumerate(zip(it.members, it.relative, it.ssim, it.best)):
                hit = rel is not None and rel < self.tau
                out["members" if m else "holdout"].append(
                    (s if s is not None else float("nan"), rel if rel is not None else float("inf"), hit, key, i, b))
        for side in out.values():
            side.sort(key=lambda t: (np.isnan(t[0]), -t[0] if not np.isnan(t[0]) else 0.0, t[3], t[4]))
        return out

    def best_recovered(self, count: int = SHOWN) -> list[tuple[str, int, int, float, float]]:
        """(group, pool index, reconstruction index, rel, ssim) of the recovered members, closest first."""
        out = []
        for key, idx in self.recovered.items():
            it = self.items.get(key)
            if it is None:
                continue
            for i in idx:
                if 0 <= i < len(it.members) and it.relative[i] is not None:
                    out.append((key, i, it.best[i], it.relative[i], it.ssim[i] if it.ssim[i] is not None else float("nan")))
        return sorted(out, key=lambda t: (t[3], t[0], t[1]))[:count]
