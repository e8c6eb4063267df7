"""Memorization (SoK §2.4): Feldman's label memorization, by Feldman & Zhang's subsampling estimator.

    mem(A, D, i)    = P_{f ~ A(D)}[f(x_i) = y_i] - P_{f ~ A(D \\ i)}[f(x_i) = y_i]
    model-mem(A, D) = E_i mem(A, D, i), estimated on the first min(1000, |D|) samples (SoK)

Estimator (Feldman & Zhang, NeurIPS 2020): train K models, each on a uniformly random subset
of a fixed fraction of D (0.7 by default, their choice), and for each sample i compare the
accuracy on x_i of the models that saw it with that of the models that did not:

    mem_i ~= mean_{k: i in S_k} 1[f_k(x_i) = y_i] - mean_{k: i not in S_k} 1[f_k(x_i) = y_i]

A sample that no model (or every model) saw has no estimate: NaN, left out of the mean (raise
K; with K models each sample is out of all subsets with probability 0.7^K, in all with 0.3^K).
The caller supplies training: `train_fn(indices) -> predict_fn`, `predict_fn(indices) ->
predicted labels` of those samples of D. Subsets come from a seeded numpy Generator
(`draw_subsets`); `from_predictions` takes the models' predictions however they were obtained
(models/memorization.py trains them on Ray workers as well).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

TrainFn = Callable[[np.ndarray], Callable[[np.ndarray], np.ndarray]]


@dataclass(frozen=True)
class Memorization:
    scores: np.ndarray  # float64 (|D|,), NaN where not estimable
    model_level: float  # mean of the finite scores among the first min(1000, |D|)
    n_in: np.ndarray  # int (|D|,): models trained with sample i
    n_out: np.ndarray  # int (|D|,): models trained without it


def draw_subsets(n: int, n_models: int, subset_fraction: float = 0.7, seed: int = 0) -> list[np.ndarray]:
    """The K training subsets (sorted indices into D), drawn from one seeded numpy Generator."""
    if not 0.0 < subset_fraction < 1.0:
        raise ValueError("subset_fraction must be in (0, 1)")
    size = int(round(subset_fraction * n))
    rng = np.random.default_rng(seed)
    return [np.sort(rng.choice(n, size=size, replace=False)) for _ in range(n_models)]


def from_predictions(predictions, subsets: list[np.ndarray], labels, *, n_first: int = 1000) -> Memorization:
    """The estimate from each model's predicted labels of all of D (models trained anywhere, any order)."""
    y = np.asarray(labels)
    n = len(y)
    correct_in = np.zeros(n)
    correct_out = np.zeros(n)
    n_in = np.zeros(n, dtype=np.int64)
    for subset, predicted in zip(subsets, predictions, strict=True):
        member = np.zeros(n, dtype=bool)
        member[subset] = True
        correct = np.asarray(predicted) == y
        correct_in += correct & member
        correct_out += correct & ~member
        n_in += member
    n_out = len(subsets) - n_in
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = correct_in / n_in - correct_out / n_out  # NaN where a side has no model
    first = scores[: min(n_first, n)]
    model_level = float(np.nanmean(first)) if np.isfinite(first).any() else float("nan")
    return Memorization(scores=scores, model_level=model_level, n_in=n_in, n_out=n_out)


def estimate_memorization(
    train_fn: TrainFn,
    labels,
    *,
    n_models: int = 100,
    subset_fraction: float = 0.7,
    seed: int = 0,
    n_first: int = 1000,
) -> Memorization:
    n = len(labels)
    everyone = np.arange(n)
    subsets = draw_subsets(n, n_models, subset_fraction, seed)
    return from_predictions((train_fn(subset)(everyone) for subset in subsets), subsets, labels, n_first=n_first)
