"""Image side of the recovery count (core/recovery.py): its distances, tolerant to a 1-pixel shift.

A reconstruction that is a member moved by one pixel is the member, recognisably; plain l2 calls it far
(on Fashion-MNIST farther than the member's nearest natural neighbour, nine times in ten:
benchmarks/bench_recovers_calibration.py). So both sides of the ratio take the best of the nine shifts
S = {(dy, dx): |dy|, |dx| <= 1} of the pool item (content moved, the vacated row and column filled
with 0, the tracks' background), in grey levels:

    d_S(a, x) = min over s in S of ||a - s(x)||_2
    near(x)   = min over the reconstructions r labelled with x's class of d_S(r, x)
    nn(x)     = min over the images y of the track's whole public dataset but x itself of d_S(y, x)
                (any class; x itself is skipped once, so a second identical copy gives 0)
    ssim(x)   = the best SSIM of those reconstructions (unshifted; the SSIM kernel S-Dis uses, its
                matrices from score() reused when given): Haim's curve, shown, not decisive.

Both sides measured alike keep the guarantee of core/recovery.py: a public image y other than x has
d_S(y, x) >= nn(x), so returning public images credits no other pool item.

Cost. nn(x) over 70,000 images and nine shifts is nine times the brute force; it is needed exactly only
where it decides. With nn0(x) the unshifted distance (<= computed once per pool and process, ~1 CPU-s
per 200 items) and nn(x) <= nn0(x): rel(x) = near(x) / nn(x) >= near(x) / nn0(x), so an item with
near(x) >= nn0(x) is not recovered whatever the shifts give; only the others (the candidates: few, or
none, for most entries) get the nine-shift nn(x), kept per image for the process. For the items
decided by the bound, the ratio kept is near(x) / nn0(x) (a lower bound of rel, itself >= 1).
Squared distances of uint8 images are integers, computed in float64: exact.
"""

from __future__ import annotations

import hashlib

import numpy as np
import torch

from reconbench.core.recovery import TAU, Recovery, RecoveryGroup, recovery_count

CHUNK_ELEMENTS = 1 << 21  # distances per block (16 MB of float64): the site build keeps its peak (issue 37)
BLOCK_IMAGES = 2048  # public images per block at most: their float64 copy (2048 x 1024 pixels: 16 MB) and its square
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
    """(P,) nn0(x) for each pool image: its distance to the nearest public image, one exact copy of
    itself skipped (a second copy: 0). Squared distances are exact integers, so "a copy" is d == 0.
    The public images are taken in blocks (a float64 copy of all 70,000 would be 0.6 GB)."""
    x = _flat(pool)
    x_sq = (x * x).sum(1)
    cols = min(BLOCK_IMAGES, max(2, CHUNK_ELEMENTS // max(1, len(x))))  # public images per block (a pool of 2: not all 70,000)
    two = torch.full((len(x), 2), float("inf"), dtype=torch.float64)  # the two smallest so far
    for lo in range(0, len(public), cols):
        y = _flat(public[lo:lo + cols])
        d = (x_sq[:, None] + (y * y).sum(1)[None, :] - 2.0 * x @ y.T).clamp_min_(0).round_()
        two = torch.topk(torch.cat([two, d], dim=1), 2, dim=1, largest=False).values
    first, second = two[:, 0], two[:, 1]
    return torch.where(first == 0, second, first).sqrt().numpy()  # x itself is in the public data: skip it once


def pool_public_nearest(key: str, pool: np.ndarray, public_images) -> np.ndarray:
    """public_nearest, kept per (key, pool content) for the process; public_images() loads the dataset."""
    digest = hashlib.sha256(np.ascontiguousarray(pool).tobytes() + repr(pool.shape).encode()).hexdigest()
    cached = _PUBLIC_NN.get((key, digest))
    if cached is None:
        cached = _PUBLIC_NN[(key, digest)] = public_nearest(pool, public_images())
    return cached


SHIFTS = tuple((dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1))
MEMO_MAX = 200_000  # shifted nn(x) values kept per process
_SHIFTED_NN: dict[bytes, float] = {}  # image digest -> nn(x) with shifts, against its dataset (key prefix)


def shifted(images: np.ndarray, dy: int, dx: int) -> np.ndarray:
    """The images moved by (dy, dx) pixels, the vacated rows and columns 0."""
    out = np.zeros_like(images)
    h, w = images.shape[-2:]
    out[..., max(dy, 0):h + min(dy, 0), max(dx, 0):w + min(dx, 0)] = \
        images[..., max(-dy, 0):h + min(-dy, 0), max(-dx, 0):w + min(-dx, 0)]
    return out


def shift_l2_matrix(rec: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """(n, P) d_S(r, x) = min over the nine shifts s of ||r - s(x)||: the pool item is the one moved."""
    return np.min([l2_matrix(rec, shifted(pool, dy, dx)) for dy, dx in SHIFTS], axis=0)


def shifted_public_nearest(items: np.ndarray, public: np.ndarray) -> np.ndarray:
    """(P,) nn(x) with shifts: min over the public images y but x itself (skipped once, all its shifts)
    of d_S(y, x). One pass over the public images with the 9P shifted items as queries."""
    if not len(items):
        return np.zeros(0)
    p = len(items)
    x = torch.cat([_flat(shifted(items, dy, dx)) for dy, dx in SHIFTS])  # (9P, D), shift-major
    x_sq = (x * x).sum(1)
    center = SHIFTS.index((0, 0))
    cols = min(BLOCK_IMAGES, max(1, CHUNK_ELEMENTS // max(1, len(x))))  # public images per block
    best = torch.full((p,), float("inf"), dtype=torch.float64)
    skipped = torch.zeros(p, dtype=torch.bool)
    for lo in range(0, len(public), cols):
        y = _flat(public[lo:lo + cols])
        d = (x_sq[:, None] + (y * y).sum(1)[None, :] - 2.0 * x @ y.T).clamp_min_(0).round_().view(len(SHIFTS), p, -1)
        own = (d[center] == 0) & ~skipped[:, None]  # x itself: its first identical public image, once
        rows = own.any(dim=1)
        if rows.any():
            d[:, rows, own[rows].to(torch.int8).argmax(dim=1)] = float("inf")
            skipped |= rows
        best = torch.minimum(best, d.amin(dim=(0, 2)))
    return best.sqrt().numpy()


def image_recovery(rec: np.ndarray, rec_y: np.ndarray, tar: np.ndarray, tar_y: np.ndarray, hold: np.ndarray,
                   hold_y: np.ndarray, nn_tar: np.ndarray, nn_hold: np.ndarray, ssim_of=None,
                   tau: float = TAU, public=None, public_key: str = "") -> Recovery:
    """The count for uint8 images (module docstring). nn_tar / nn_hold: nn0(x), the unshifted nearest
    public distance of each target and holdout image (public_nearest). public: a callable giving the
    public images, for the nine-shift nn(x) of the candidates (None: no shift on either side, nn0(x)).
    ssim_of(class, rec_idx, tar_idx, hold_idx) -> the (n, P) SSIM matrix of the class's reconstructions
    against its targets then its holdout images; None: SSIM not shown."""
    rec_y, tar_y, hold_y = (np.asarray(y, dtype=np.int64) for y in (rec_y, tar_y, hold_y))
    if len(nn_tar) != len(tar) or len(nn_hold) != len(hold):
        raise ValueError(f"nn given for {len(nn_tar)} targets and {len(nn_hold)} holdout images, "
                         f"the pool has {len(tar)} and {len(hold)}")
    parts = []
    for c in np.unique(tar_y):
        r, t, h = (np.flatnonzero(y == c) for y in (rec_y, tar_y, hold_y))
        pool = np.concatenate([tar[t], hold[h]])
        members = np.r_[np.ones(len(t), bool), np.zeros(len(h), bool)]
        nn = np.r_[nn_tar[t], nn_hold[h]].astype(np.float64)
        if len(r):
            d = shift_l2_matrix(rec[r], pool) if public is not None else l2_matrix(rec[r], pool)
            near, best = d.min(axis=0), r[d.argmin(axis=0)]
            ssim = ssim_of(int(c), r, t, h).max(axis=0) if ssim_of is not None else np.full(len(pool), np.nan)
        else:
            near, best, ssim = np.full(len(pool), np.inf), np.full(len(pool), -1), np.full(len(pool), np.nan)
        parts.append([c, t, h, pool, members, nn, near, best, ssim])
    if public is not None:  # the nine-shift nn(x), where it can decide: near(x) < TAU nn0(x) (module docstring)
        found = [(i, j) for i, part in enumerate(parts) for j in np.flatnonzero(part[6] < tau * part[5])]
        if found:
            values = _shifted_nn(np.stack([parts[i][3][j] for i, j in found]), public, public_key)
            for (i, j), v in zip(found, values):
                parts[i][5][j] = v
    groups = [RecoveryGroup(str(int(c)), near, nn, members, ssim=np.asarray(ssim, dtype=np.float64), best=best,
                            index=np.r_[t, h]) for c, t, h, pool, members, nn, near, best, ssim in parts]
    return recovery_count(groups, tau)


def _shifted_nn(items: np.ndarray, public, key: str) -> np.ndarray:
    """shifted_public_nearest for these items, each kept per (key, image) for the process."""
    digests = [key.encode() + hashlib.sha256(x.tobytes() + repr(x.shape).encode()).digest() for x in items]
    missing = [i for i, k in enumerate(digests) if k not in _SHIFTED_NN]
    if missing:
        if len(_SHIFTED_NN) + len(missing) > MEMO_MAX:
            _SHIFTED_NN.clear()
        for i, v in zip(missing, shifted_public_nearest(items[missing], public())):
            _SHIFTED_NN[digests[i]] = float(v)
    return np.array([_SHIFTED_NN[k] for k in digests])


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
