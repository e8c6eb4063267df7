"""The embedded default track: scikit-learn's digits (1,797 real 8x8 grey images, 10 classes).

Kept at the native 8x8: upsampling would invent detail that neither the target model nor the
metrics should reward, and 8x8 keeps every attack cheap enough for a CPU. Pixel values 0..16 are
mapped to uint8 by round(v * 255 / 16).

Splits come from one seeded permutation of the 1,797 indices, in this order:
  target  500  the target model's training set (D_tar, static setting)
  update  100  the update set of the dynamic setting (D_tar there; SoK Def. 3.2)
  aux     500  same-distribution auxiliary data handed to attackers whose scenario allows it
  rest    697  never trained on by a target model, cut in two:
    holdout  500  the membership gap's non-members (reconbench.core.membership): per class, the
                  first images of that class in permutation order, as many as the target set holds
                  of it, so target and holdout have the same size and the same class counts (a
                  nearest same-class match over a larger pool would be closer by chance alone)
    test     197  the rest of it: accuracy and surrogate agreement only

The update set's holdout (D_tar of the dynamic setting has its own size and class counts) is taken
from the holdout the same way: per class, its first images, as many as the update set holds.

Who sees what. Target models train on `target` (and the dynamic update on `update`); the evaluation
classifier (models/evaluator.py) trains on `aux` + `test`; attacks may see `aux` only. The holdout
is never trained on and never in an attack's view: it stays on the evaluator's side, like the
target set (reconbench.image.track_files.load_holdout).

Class 3 has as many images in `rest` as in the target set (53 each), so the holdout takes all of
them and `test` holds no 3: test accuracy is measured over nine classes.

The images are read from the CSV file scikit-learn ships (sklearn/datasets/data/digits.csv.gz, the
file `sklearn.datasets.load_digits` parses), located without importing `sklearn.datasets` (which
pulls in scipy and pandas: seconds at every start-up) and pinned by the content hash of the arrays.
"""

from __future__ import annotations

import gzip
import importlib.util
from functools import lru_cache
from pathlib import Path

import numpy as np

from reconbench.image.data.arrays import ArraySet, TrackSplits

SPLIT_SEED = 20250609  # arXiv date of the SoK; any fixed value would do
SPLIT_SIZES = {"target": 500, "update": 100, "aux_same": 500}


# ArraySet.sha256 of the 1,797 images and labels (scikit-learn 1.4-1.9 ship the same file)
DIGITS_SHA256 = "2d1a80a5fc378b908318dfad34b785a392602b7aae9eae9310e8784c57030bb0"


class DigitsError(RuntimeError):
    """scikit-learn's digits file is missing or not the pinned data."""


def digits_csv() -> Path:
    spec = importlib.util.find_spec("sklearn")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise DigitsError("scikit-learn is not installed: the digits track reads its digits.csv.gz")
    return Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data" / "digits.csv.gz"


def load_digits_arrays() -> ArraySet:
    """The 1,797 digits: 64 pixel columns (0..16) and the label, one row per image."""
    path = digits_csv()
    try:
        with gzip.open(path, "rt") as f:
            data = np.loadtxt(f, delimiter=",")
    except (OSError, ValueError, EOFError) as exc:
        raise DigitsError(f"{path}: cannot read scikit-learn's digits ({exc})") from None
    if data.ndim != 2 or data.shape[1] != 65:
        raise DigitsError(f"{path}: expected 65 columns (8x8 pixels + label), got shape {data.shape}")
    # made as load_digits' (N, 8, 8) images were, then [:, None]: the same array strides, which torch keeps
    # (a size-1 channel's stride decides its convolution's kernel, and so the last bits of the features)
    images = np.rint(data[:, :-1].reshape(-1, 8, 8) * (255.0 / 16.0)).clip(0, 255).astype(np.uint8)[:, None]
    out = ArraySet(images, data[:, -1].astype(np.int64))
    if out.sha256 != DIGITS_SHA256:
        raise DigitsError(f"{path}: the digits read have sha256 {out.sha256}, not the pinned {DIGITS_SHA256}")
    return out


def _cut() -> tuple[ArraySet, list[np.ndarray]]:
    full = load_digits_arrays()
    order = np.random.default_rng(SPLIT_SEED).permutation(len(full))
    cuts = np.cumsum([SPLIT_SIZES["target"], SPLIT_SIZES["update"], SPLIT_SIZES["aux_same"]])
    return full, np.split(order, cuts)


@lru_cache(maxsize=1)
def digits_splits() -> TrackSplits:
    full, (target, update, aux, rest) = _cut()
    holdout = matched_draw(rest, full.labels, full.labels[target])
    test = np.setdiff1d(rest, holdout)
    update_holdout = matched_draw(holdout, full.labels, full.labels[update])
    # Sorted within each split so that a split's hash does not depend on the permutation's order.
    return TrackSplits(
        target=full.subset(np.sort(target)),
        update=full.subset(np.sort(update)),
        aux_same=full.subset(np.sort(aux)),
        test=full.subset(np.sort(test)),
        holdout=full.subset(np.sort(holdout)),
        update_holdout=full.subset(np.sort(update_holdout)),
    )


def matched_draw(candidates: np.ndarray, labels: np.ndarray, like: np.ndarray) -> np.ndarray:
    """Indices from `candidates` (kept in their order) with the class counts of the labels `like`:
    per class c, the first count_c(like) candidates of class c. Raises when a class runs short."""
    counts = np.bincount(like, minlength=int(labels.max()) + 1)
    picked = []
    for c, need in enumerate(counts):
        of_c = candidates[labels[candidates] == c]
        if len(of_c) < need:
            raise ValueError(f"class {c}: {len(of_c)} candidates for a holdout that needs {need}")
        picked.append(of_c[:need])
    chosen = np.concatenate(picked)
    return candidates[np.isin(candidates, chosen)]  # back in the candidates' order


# The `digits-binary-mlp` track (Bias-Rec's setting, Haim et al. NeurIPS'22: a binary task and a
# training set small against the input dimension; their MNIST run has 500 points in 784-d, ours
# 20 in 64-d). Classes 0 and 1 keep their digit labels; the target set is the first
# BINARY_PER_CLASS images of each class in the digits target split (index order), its holdout the
# same count of each class from the digits holdout (index order); aux is the digits aux split
# restricted to the two classes, test the two classes' images of the digits test and holdout splits
# that are not in this holdout (the rest the target model never saw). No update set.
BINARY_CLASSES = (0, 1)
BINARY_PER_CLASS = 10


@lru_cache(maxsize=1)
def binary_digits_splits() -> TrackSplits:
    base = digits_splits()

    def two_classes(data: ArraySet, per_class: int | None = None) -> ArraySet:
        keep = [np.flatnonzero(data.labels == c)[:per_class] for c in BINARY_CLASSES]
        return data.subset(np.sort(np.concatenate(keep)))

    holdout = two_classes(base.holdout, BINARY_PER_CLASS)
    unseen = ArraySet(np.concatenate([base.test.images, base.holdout.images]),
                      np.concatenate([base.test.labels, base.holdout.labels]))
    in_holdout = {img.tobytes() for img in holdout.images}
    rest = unseen.subset(np.flatnonzero([img.tobytes() not in in_holdout for img in unseen.images]))
    return TrackSplits(
        target=two_classes(base.target, BINARY_PER_CLASS),
        update=None,
        aux_same=two_classes(base.aux_same),
        test=two_classes(rest),
        holdout=holdout,
    )
