"""Image side of the recovery count (core/recovery.py): its distances.

    near(x)  Euclidean distance in grey levels from pool item x to the nearest reconstruction labelled
             with x's class (Carlini et al.'s l2; sqrt of the extraction count's squared distance,
             extraction.mse_matrix, exact from integer grey levels);
    nn(x)    to the nearest other image of the track's whole public dataset (70,000 Fashion-MNIST
             images, digits' 1,797), any class: the image identical to x is skipped once (x itself),
             so a second identical copy gives 0;
    ssim(x)  the best SSIM of those reconstructions (the SSIM kernel S-Dis uses; the matrices score()
             computed for the gap are reused when given).
The pool of a class is its targets then its holdout images, as the gap's and the count's.

nn(x) depends on the track's images only: `pool_public_nearest` computes it once per (track, pool)
in a process (brute force, float64 from integers: exact; ~1 CPU-s per 200 pool items against 70,000).
"""

from __future__ import annotations

import hashlib

import numpy as np
import torch

from reconbench.core.recovery import TAU, Recovery, RecoveryGroup, recovery_count

CHUNK_ELEMENTS = 1 << 23
_PUBLIC_NN: dict[tuple[str, str], np.ndarray] = {}


def _flat(images: np.ndarray) -> torch.Tensor:
    images = np.ascontiguousarray(images)
    return torch.from_numpy(images.reshape(len(images), -1)).to(torch.float64)


def l2_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(n, m) Euclidean distances in grey levels between uint8 images (squared: integers, exact)."""
    x, y = _flat(a), _flat(b)
    if not len(x) or not len(y):
        return np.zeros((len(x), len(y)))
    d = ((x * x).sum(1)[:, None] + (y * y).sum(1)[None, :] - 2.0 * x @ y.T).clamp_min_(0).round_()
    return d.sqrt().numpy()


def public_nearest(pool: np.ndarray, public: np.ndarray) -> np.ndarray:
    """(P,) nn(x) for each pool image: its distance to the nearest public image, one exact copy of
    itself skipped (a second copy: 0). Squared distances are exact integers, so "a copy" is d == 0."""
    x, y = _flat(pool), _flat(public)
    y_sq = (y * y).sum(1)
    rows = max(1, CHUNK_ELEMENTS // max(1, len(y)))
    out = []
    for lo in range(0, len(x), rows):
        xb = x[lo:lo + rows]
        d = ((xb * xb).sum(1)[:, None] + y_sq[None, :] - 2.0 * xb @ y.T).clamp_min_(0).round_()
        two = torch.topk(d, min(2, d.shape[1]), dim=1, largest=False).values
        first = two[:, 0]
        second = two[:, 1] if two.shape[1] > 1 else torch.full_like(first, float("inf"))
        out.append(torch.where(first == 0, second, first))  # x itself is in the public data: skip it once
    return torch.cat(out).sqrt().numpy() if out else np.zeros(0)


def pool_public_nearest(key: str, pool: np.ndarray, public_images) -> np.ndarray:
    """public_nearest, kept per (key, pool content) for the process; public_images() loads the dataset."""
    digest = hashlib.sha256(np.ascontiguousarray(pool).tobytes() + repr(pool.shape).encode()).hexdigest()
    cached = _PUBLIC_NN.get((key, digest))
    if cached is None:
        cached = _PUBLIC_NN[(key, digest)] = public_nearest(pool, public_images())
    return cached


def image_recovery(rec: np.ndarray, rec_y: np.ndarray, tar: np.ndarray, tar_y: np.ndarray, hold: np.ndarray,
                   hold_y: np.ndarray, nn_tar: np.ndarray, nn_hold: np.ndarray, ssim_of=None,
                   tau: float = TAU) -> Recovery:
    """The count for uint8 images (module docstring). nn_tar / nn_hold: nn(x) of each target and holdout
    image (public_nearest). ssim_of(class, rec_idx, tar_idx, hold_idx) -> the (n, P) SSIM matrix of the
    class's reconstructions against its targets then its holdout images; None: SSIM not shown."""
    rec_y, tar_y, hold_y = (np.asarray(y, dtype=np.int64) for y in (rec_y, tar_y, hold_y))
    if len(nn_tar) != len(tar) or len(nn_hold) != len(hold):
        raise ValueError(f"nn given for {len(nn_tar)} targets and {len(nn_hold)} holdout images, "
                         f"the pool has {len(tar)} and {len(hold)}")
    groups = []
    for c in np.unique(tar_y):
        r, t, h = (np.flatnonzero(y == c) for y in (rec_y, tar_y, hold_y))
        pool = np.concatenate([tar[t], hold[h]])
        members = np.r_[np.ones(len(t), bool), np.zeros(len(h), bool)]
        if len(r):
            d = l2_matrix(rec[r], pool)
            near, best = d.min(axis=0), r[d.argmin(axis=0)]
            ssim = ssim_of(int(c), r, t, h).max(axis=0) if ssim_of is not None else np.full(len(pool), np.nan)
        else:
            near, best, ssim = np.full(len(pool), np.inf), np.full(len(pool), -1), np.full(len(pool), np.nan)
        groups.append(RecoveryGroup(str(int(c)), near, np.r_[nn_tar[t], nn_hold[h]].astype(np.float64), members,
                                    ssim=np.asarray(ssim, dtype=np.float64), best=best, index=np.r_[t, h]))
    return recovery_count(groups, tau)


def ssim_from_matrices(matrices: dict | None, rec, tar, hold, device: str = "cpu"):
    """ssim_of for image_recovery: the class's matrix from score()'s shared SSIM matrices
    (leakage.class_matrices: class -> (rec idx, tar idx, hold idx, (n, P))) when it holds that class's
    pool, else computed here with the same kernel. rec, tar, hold: uint8 (N, C, H, W) arrays or tensors."""
    from .leakage import kernel_matrix
    from .ssim import SSIMKernel

    rec, tar, hold = (torch.as_tensor(np.asarray(x)) for x in (rec, tar, hold))
    kernel = []

    def ssim_of(c, r, t, h):
        found = (matrices or {}).get(c)
        if found is not None and all(np.array_equal(a, b) for a, b in zip(found[:3], (r, t, h))):
            return found[3]
        if not kernel:
            kernel.append(SSIMKernel(tuple(rec.shape[1:]), device=device))
        pool = torch.cat([tar[torch.from_numpy(t)], hold[torch.from_numpy(h)]])
        return kernel_matrix(kernel[0], rec[torch.from_numpy(r)], pool, device)

    return ssim_of
