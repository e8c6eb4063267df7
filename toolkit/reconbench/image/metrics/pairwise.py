"""The pairwise engine: class-restricted nearest neighbours over N x M pairs, in bounded memory.

SoK Def. 4.2 maps each reconstruction x_i to its nearest target *of the same class* under a
distance d. For every class c this engine walks the (reconstructions of c) x (targets of c)
grid in blocks, asks a `PairKernel` for the (bn, bm) matrix of d on one block (batched tensor
algebra, never a Python loop over pairs), and keeps a running best per reconstruction. Nothing
of size N x M is ever held.

Memory. A kernel turns images into a per-image *state* once (MSE: the flattened pixels; SSIM:
the Gaussian-filtered means and variances; LPIPS: the network features) and then combines two
states per block. The engine holds at most one reconstruction super-chunk and one target
super-chunk of states (together <= `Budget.state_bytes`) plus one block of pair temporaries
(<= `Budget.block_bytes`); an old super-chunk is released before the next one is built. When a
class has more images than a super-chunk holds, the reconstruction states are recomputed once
per target super-chunk (extra work linear in N per target super-chunk, not N*M). Images are
visited in class order (a stable sort, gathered per super-chunk); when the states of all
reconstructions and of all targets fit the budget, each side is prepared in one call and a
class's states are views into it (fewer, larger calls: what small classes need). So

    peak ~= Budget.state_bytes + Budget.block_bytes + a few tens of MB of transients
            (+ the uint8 inputs, owned by the caller)

whatever N, M and the class sizes are. Defaults: CPU 256 MiB + 8 MiB, CUDA 4 GiB + 512 MiB.
Example, N = M = 20,000 images of 64x64x3 in 10 balanced classes on the CPU (states of 98 /
189 / 127 kB per image for MSE / SSIM / LPIPS, so a class of 2,000 + 2,000 images is cut into
super-chunks of ~1,400 / ~700 / ~1,050): measured peaks above the 469 MiB of inputs are
129 / 308 / 307 MiB (benchmarks/bench_metrics_scaling.py; MSE's int8 states are an eighth
of its declared float64 size), the same for any larger N or M.

Determinism. Targets are visited in ascending index order and a later target replaces the
running best only when strictly better, so ties go to the lowest target index; the result
depends only on the inputs, the device and the budget (which fixes the block shapes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

MiB = 1 << 20


@dataclass(frozen=True)
class Budget:
    """Bytes allowed for per-image states (both super-chunks) and for one block of pairs."""

    state_bytes: int
    block_bytes: int


def default_budget(device: str | torch.device) -> Budget:
    # CPU: small blocks stay in cache (measured fastest); CUDA: large blocks fill the device.
    if torch.device(device).type == "cuda":
        return Budget(state_bytes=4096 * MiB, block_bytes=512 * MiB)
    return Budget(state_bytes=256 * MiB, block_bytes=8 * MiB)


class PairKernel(Protocol):
    """A distance or similarity d(x, t) evaluated on blocks of pairs."""

    larger_is_better: bool  # True for similarities (SSIM), False for distances (MSE, LPIPS)
    worst: float  # value given to a reconstruction whose class has no target

    def state_bytes(self) -> int:
        """Bytes of one image's state."""

    def pair_bytes(self) -> int:
        """Peak bytes of temporaries per pair inside `block`."""

    def prepare(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        """uint8 (n, C, H, W) on the device -> state tensors, each indexed by image on dim 0."""

    def block(self, rec: dict[str, torch.Tensor], tar: dict[str, torch.Tensor]) -> torch.Tensor:
        """(bn, bm) matrix of d between every reconstruction state and every target state."""


@dataclass(frozen=True)
class Nearest:
    """best[i] = d(x_i, nearest same-class target); match[i] = its index, -1 if the class is absent."""

    best: np.ndarray  # float64 (N,)
    match: np.ndarray  # int64 (N,)


def _rows(state: dict[str, torch.Tensor], lo: int, hi: int) -> dict[str, torch.Tensor]:
    return {k: v[lo:hi] for k, v in state.items()}


def block_shape(kernel: PairKernel, n: int, m: int, budget: Budget) -> tuple[int, int]:
    """Square-ish blocks of about block_bytes / pair_bytes pairs (at least 1 x 1)."""
    pairs = max(1, budget.block_bytes // max(1, kernel.pair_bytes()))
    bm = min(m, max(1, math.isqrt(pairs)))
    bn = min(n, max(1, pairs // bm))
    return bn, bm


def nearest_same_class(
    kernel: PairKernel,
    rec: torch.Tensor,
    rec_labels: torch.Tensor,
    tar: torch.Tensor,
    tar_labels: torch.Tensor,
    *,
    device: str | torch.device = "cpu",
    budget: Budget | None = None,
) -> Nearest:
    """For each reconstruction, the best d over targets of its class, and that target's index.

    rec, tar: uint8 (N, C, H, W) / (M, C, H, W) on the CPU; labels int64. A reconstruction
    whose class has no target gets ``kernel.worst`` and match -1.
    """
    budget = budget or default_budget(device)
    n = rec.shape[0]
    best = torch.full((n,), kernel.worst, dtype=torch.float64)
    match = torch.full((n,), -1, dtype=torch.int64)
    per_side = max(1, budget.state_bytes // 2 // max(1, kernel.state_bytes()))
    # Images sorted by class (stably: ties still go to the lowest target index), so that every
    # class is one contiguous run. When both whole sets fit the state budget, each side is
    # prepared once and a class's states are views; otherwise per class and super-chunk.
    # (The sorted uint8 images are gathered per super-chunk, never as a whole copy of the inputs.)
    r_order, r_runs = _class_runs(rec_labels)
    t_order, t_runs = _class_runs(tar_labels)
    whole = n <= per_side and tar.shape[0] <= per_side

    def states(images: torch.Tensor, order: torch.Tensor, everything, lo: int, hi: int):
        if everything is not None:
            return _rows(everything, lo, hi)
        return kernel.prepare(images.index_select(0, order[lo:hi]).to(device))

    with torch.inference_mode():
        r_all = kernel.prepare(rec.index_select(0, r_order).to(device)) if whole else None
        t_all = kernel.prepare(tar.index_select(0, t_order).to(device)) if whole else None
        for c, (r_lo, r_hi) in r_runs.items():
            if c not in t_runs:
                continue
            t_lo, t_hi = t_runs[c]
            for t0 in range(t_lo, t_hi, per_side):
                t1 = min(t0 + per_side, t_hi)
                t_state = r_state = None  # free the previous super-chunks before building new ones
                t_state = states(tar, t_order, t_all, t0, t1)
                for r0 in range(r_lo, r_hi, per_side):
                    r1 = min(r0 + per_side, r_hi)
                    r_state = None
                    r_state = states(rec, r_order, r_all, r0, r1)
                    _scan(kernel, r_state, t_state, r_order[r0:r1], t_order[t0:t1].to(device), best, match, budget,
                          first=t0 == t_lo)
            t_state = r_state = None
    return Nearest(best=best.numpy(), match=match.numpy())


def _class_runs(labels: torch.Tensor) -> tuple[torch.Tensor, dict[int, tuple[int, int]]]:
    """The stable sort of `labels` and, per class, its [start, stop) in the sorted order."""
    order = torch.argsort(labels, stable=True)
    classes, counts = torch.unique_consecutive(labels[order], return_counts=True)
    stops = torch.cumsum(counts, 0).tolist()
    return order, {c: (stop - k, stop) for c, k, stop in zip(classes.tolist(), counts.tolist(), stops)}


def _scan(kernel, r_state, t_state, r_idx, t_idx, best, match, budget, *, first: bool) -> None:
    """Update best/match of the reconstructions r_idx with the targets t_idx, block by block.

    first: no target of their class has been seen yet, so the first block's values are taken as
    they are (no merge with the placeholders).
    """
    better = torch.gt if kernel.larger_is_better else torch.lt
    arg_best = torch.max if kernel.larger_is_better else torch.min
    bn, bm = block_shape(kernel, r_idx.numel(), t_idx.numel(), budget)
    for b0 in range(0, r_idx.numel(), bn):
        rows = _rows(r_state, b0, b0 + bn)
        rows_idx = r_idx[b0 : b0 + bn]
        cur = cur_match = None
        if not first:
            cur, cur_match = best[rows_idx].to(t_idx.device), match[rows_idx].to(t_idx.device)
        for a0 in range(0, t_idx.numel(), bm):
            d = kernel.block(rows, _rows(t_state, a0, a0 + bm)).to(torch.float64)
            v, j = arg_best(d, dim=1)  # the first best within the block
            if cur is None:
                cur, cur_match = v, t_idx[a0 + j]
                continue
            take = better(v, cur)  # strictly better only: ties keep the lower target index
            cur = torch.where(take, v, cur)
            cur_match = torch.where(take, t_idx[a0 + j], cur_match)
        best[rows_idx] = cur.cpu()
        match[rows_idx] = cur_match.cpu()


def naive_nearest_same_class(dist, rec_labels, tar_labels, *, larger_is_better: bool, worst: float) -> Nearest:
    """Reference: the same map from a full (N, M) matrix `dist` with a double loop over pairs.

    For tests and benchmarks only (O(N*M) memory and Python time).
    """
    dist = np.asarray(dist)
    n, m = dist.shape
    best = np.full(n, worst, dtype=np.float64)
    match = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        for j in range(m):
            if tar_labels[j] != rec_labels[i]:
                continue
            v = dist[i, j]
            if match[i] < 0 or (v > best[i] if larger_is_better else v < best[i]):
                best[i], match[i] = v, j
    return Nearest(best=best, match=match)
