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
per target super-chunk (extra work linear in N per target super-chunk, not N*M). So

    peak ~= Budget.state_bytes + Budget.block_bytes + a few tens of MB of transients
            (+ the uint8 inputs, owned by the caller)

whatever N, M and the class sizes are. Defaults: CPU 256 MiB + 8 MiB, CUDA 4 GiB + 512 MiB.
Example, N = M = 20,000 images of 64x64x3 in 10 balanced classes on the CPU (states of 98 /
189 / 127 kB per image for MSE / SSIM / LPIPS, so a class of 2,000 + 2,000 images is cut into
super-chunks of ~1,400 / ~700 / ~1,050): measured peaks above the 469 MiB of inputs are
285 / 308 / 307 MiB (benchmarks/bench_metrics_scaling.py), the same for any larger N or M.

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

    with torch.inference_mode():
        for c in torch.unique(rec_labels).tolist():
            ri = torch.nonzero(rec_labels == c).flatten()
            ti = torch.nonzero(tar_labels == c).flatten()  # ascending: ties go to the lowest index
            if ti.numel() == 0:
                continue
            for t0 in range(0, ti.numel(), per_side):
                t_idx = ti[t0 : t0 + per_side]
                t_state = r_state = None  # free the previous super-chunks before building new ones
                t_state = kernel.prepare(tar[t_idx].to(device))
                for r0 in range(0, ri.numel(), per_side):
                    r_idx = ri[r0 : r0 + per_side]
                    r_state = None
                    r_state = kernel.prepare(rec[r_idx].to(device))
                    _scan(kernel, r_state, t_state, r_idx, t_idx.to(device), best, match, budget)
            t_state = r_state = None
    return Nearest(best=best.numpy(), match=match.numpy())


def _scan(kernel, r_state, t_state, r_idx, t_idx, best, match, budget) -> None:
    """Update best/match of the reconstructions r_idx with the targets t_idx, block by block."""
    better = torch.gt if kernel.larger_is_better else torch.lt
    arg_best = torch.argmax if kernel.larger_is_better else torch.argmin
    bn, bm = block_shape(kernel, r_idx.numel(), t_idx.numel(), budget)
    for b0 in range(0, r_idx.numel(), bn):
        rows = _rows(r_state, b0, b0 + bn)
        cur = best[r_idx[b0 : b0 + bn]].to(t_idx.device)
        cur_match = match[r_idx[b0 : b0 + bn]].to(t_idx.device)
        for a0 in range(0, t_idx.numel(), bm):
            d = kernel.block(rows, _rows(t_state, a0, a0 + bm)).to(torch.float64)
            j = arg_best(d, dim=1)  # first best within the block
            v = d.gather(1, j[:, None]).squeeze(1)
            # strictly better only (ties keep the lower target index); the first visit always wins
            take = better(v, cur) | (cur_match < 0)
            cur = torch.where(take, v, cur)
            cur_match = torch.where(take, t_idx[a0 + j], cur_match)
        best[r_idx[b0 : b0 + bn]] = cur.cpu()
        match[r_idx[b0 : b0 + bn]] = cur_match.cpu()


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
