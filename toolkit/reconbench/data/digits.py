"""The embedded default track: scikit-learn's digits (1,797 real 8x8 grey images, 10 classes).

Kept at the native 8x8: upsampling would invent detail that neither the target model nor the
metrics should reward, and 8x8 keeps every attack cheap enough for a CPU. Pixel values 0..16 are
mapped to uint8 by round(v * 255 / 16).

Splits come from one seeded permutation of the 1,797 indices, in this order:
  target  500  the target model's training set (D_tar, static setting)
  update  100  the update set of the dynamic setting (D_tar there; SoK Def. 3.2)
  aux     500  same-distribution auxiliary data handed to attackers whose scenario allows it
  test    697  held out, for accuracy only
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from reconbench.data.arrays import ArraySet, TrackSplits

SPLIT_SEED = 20250609  # arXiv date of the SoK; any fixed value would do
SPLIT_SIZES = {"target": 500, "update": 100, "aux_same": 500}


def load_digits_arrays() -> ArraySet:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    images = np.rint(bunch.images * (255.0 / 16.0)).clip(0, 255).astype(np.uint8)[:, None]
    return ArraySet(images, bunch.target.astype(np.int64))


@lru_cache(maxsize=1)
def digits_splits() -> TrackSplits:
    full = load_digits_arrays()
    order = np.random.default_rng(SPLIT_SEED).permutation(len(full))
    cuts = np.cumsum([SPLIT_SIZES["target"], SPLIT_SIZES["update"], SPLIT_SIZES["aux_same"]])
    target, update, aux, test = np.split(order, cuts)
    # Sorted within each split so that a split's hash does not depend on the permutation's order.
    return TrackSplits(
        target=full.subset(np.sort(target)),
        update=full.subset(np.sort(update)),
        aux_same=full.subset(np.sort(aux)),
        test=full.subset(np.sort(test)),
    )


# The `digits-binary-mlp` track (Bias-Rec's setting, Haim et al. NeurIPS'22: a binary task and a
# training set small against the input dimension; their MNIST run has 500 points in 784-d, ours
# 20 in 64-d). Classes 0 and 1 keep their digit labels; the target set is the first
# BINARY_PER_CLASS images of each class in the digits target split (index order), aux and test
# are the digits aux and test splits restricted to the two classes. No update set.
BINARY_CLASSES = (0, 1)
BINARY_PER_CLASS = 10


@lru_cache(maxsize=1)
def binary_digits_splits() -> TrackSplits:
    base = digits_splits()

    def two_classes(data: ArraySet, per_class: int | None = None) -> ArraySet:
        keep = [np.flatnonzero(data.labels == c)[:per_class] for c in BINARY_CLASSES]
        return data.subset(np.sort(np.concatenate(keep)))

    return TrackSplits(
        target=two_classes(base.target, BINARY_PER_CLASS),
        update=None,
        aux_same=two_classes(base.aux_same),
        test=two_classes(base.test),
    )
