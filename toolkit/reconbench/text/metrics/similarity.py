"""Embedding similarity (SoK App. B, the "macro" metric): mean cosine of all-MiniLM-L6-v2 embeddings.

sim = mean_i cos(E(r_i), E(t_i)), E = sentence-transformers/all-MiniLM-L6-v2 (reconbench.text.minilm:
pinned weights, mean pooling, L2-normalised, so the cosine is a dot product), each reconstruction r_i
against its own target t_i. Cosine lies in [-1, 1]; on real text MiniLM's cosines are almost always >= 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache


@lru_cache(maxsize=2)
def _metric_embedder(device: str):
    """One MiniLM per device for scoring; load_minilm() itself hands out fresh copies for fine-tuning."""
    from reconbench.text.minilm import load_minilm

    return load_minilm(device)


def cosine_scores(reconstructions: Sequence[str], targets: Sequence[str], *, device: str = "cpu",
                  batch_size: int = 64) -> list[float]:
    if len(reconstructions) != len(targets):
        raise ValueError(f"{len(reconstructions)} reconstructions for {len(targets)} targets")
    a = embeddings(tuple(reconstructions), str(device), batch_size)
    b = embeddings(tuple(targets), str(device), batch_size)
    return (a * b).sum(dim=1).tolist()


@lru_cache(maxsize=16)
def embeddings(texts: tuple[str, ...], device: str, batch_size: int = 64):
    """float64 MiniLM embeddings of the texts, kept per process: the target and holdout texts of a track
    are embedded once for every entry scored (the membership gap, text/metrics/pairs.py, needs them too).
    Batched in order of length, so a batch pads to texts of about its own length (a batch is padded to
    its longest; the mask keeps padding out of the mean): 1.6x less CPU on lee-news, each vector the
    same to ~1e-7 (benchmarks/README.md, the real board's site build)."""
    import torch

    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    vectors = _metric_embedder(device).encode([texts[i] for i in order], batch_size=batch_size).double()
    out = torch.empty_like(vectors)
    out[order] = vectors
    return out


def mean_similarity(reconstructions: Sequence[str], targets: Sequence[str], *, device: str = "cpu") -> float:
    scores = cosine_scores(reconstructions, targets, device=device)
    return sum(scores) / len(scores)
