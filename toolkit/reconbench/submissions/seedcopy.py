"""Seed copies: is a team's run of one configuration a copy of its own earlier run with another seed?

Seeds of one configuration form one board row with mean +- std (leaderboard/seeds.py), so a copy of
one run with a few pixels changed, claiming a new seed, would make a group with a std of 0. The
public near-copy thresholds (nearcopy.py) cannot decide this: honest runs of one configuration can be
that close to each other (benchmarks/bench_seed_distance.py: Inv-Alignment's seeds on digits are 65%
within them, Updates-Leak's 6%). What a copy has and an independent run has not is a near-identical
twin among the earlier run's reconstructions, whatever their order:

- pixel: a per-pixel MSE (pixels in [0, 1]) to some earlier reconstruction of at most COPY_MSE
  (1e-3: an RMS difference of 8 grey levels; the closest honest pairs measured are 3x further); or
- bytes: at least EQUAL_SHARE of its pixels byte-identical to those of some earlier reconstruction
  (a few pixels edited: one full-range pixel changed on 8x8 digits leaves 98% equal; two honest
  Inv-Alignment seeds on digits share at most 17% for 99% of their images).

More than DUPLICATE_SHARE (checks/duplicates.py) of the reconstructions so flagged: the later run
is a copy. An attack that ignores its seed gives byte-identical runs, caught by hash before this.
"""

from __future__ import annotations

import numpy as np

COPY_MSE = 1e-3
EQUAL_SHARE = 0.9
CHUNK_ELEMENTS = 1 << 24  # query rows x earlier rows x pixels compared at once (bytes of the equality block)


def seed_copies(earlier: np.ndarray, mine: np.ndarray) -> np.ndarray:
    """Per reconstruction of `mine`: True when it is a near-identical twin of one of `earlier`'s (uint8 N x C x H x W)."""
    a = np.ascontiguousarray(earlier).reshape(len(earlier), -1)
    q = np.ascontiguousarray(mine).reshape(len(mine), -1)
    af, qf = a.astype(np.float64) / 255.0, q.astype(np.float64) / 255.0
    a_sq = (af * af).sum(1)
    rows = max(1, CHUNK_ELEMENTS // max(1, a.shape[0] * a.shape[1]))
    out = np.zeros(len(q), dtype=bool)
    for lo in range(0, len(q), rows):
        hi = min(lo + rows, len(q))
        mse = ((qf[lo:hi] ** 2).sum(1)[:, None] + a_sq[None, :] - 2.0 * qf[lo:hi] @ af.T).clip(min=0) / a.shape[1]
        equal = (q[lo:hi, None, :] == a[None, :, :]).sum(-1, dtype=np.int32)  # counted in int32: ~half a float mean's CPU
        out[lo:hi] = (mse.min(1) <= COPY_MSE) | (equal.max(1) >= EQUAL_SHARE * a.shape[1])
    return out


def seed_copy_share(earlier: np.ndarray, mine: np.ndarray) -> float:
    flags = seed_copies(earlier, mine)
    return float(flags.mean()) if len(flags) else 0.0
