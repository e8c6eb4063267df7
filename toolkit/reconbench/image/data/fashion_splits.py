"""The splits of the Fashion-MNIST tracks: one seeded layout of the 60,000 training images.

The layout (reconbench.zoo.prepare.stratified_order: round-robin over the ten classes in a seeded
class order, each class in a seeded random order) is cut into consecutive blocks, every one
starting at a multiple of ten, so the first k images of any two blocks have the same classes:

    target          20,000  D_tar of the static tracks: |D_tar| = n is the block's first n
                            (nested: 100 in 500 in 1,000 ... in 20,000, and class-balanced)
    holdout         20,000  the membership gap's non-members: for |D_tar| = n, the block's first n,
                            so the same size and class balance as the target set; for an update
                            of k images its first k (`update_holdout`, the update's classes, drawn
                            from the holdout as on digits); no shipped model ever trains on it
    update              70  D_tar of the dynamic tracks: an update of k images is the first k
    spare               70  unused (keeps the later blocks where the shipped weights were trained)
    evaluator       10,000  the evaluation classifier's training set (disjoint from all the above)
    aux              5,000  same-distribution auxiliary data handed to attackers
    sealed           4,860  the sealed twins' pools. Season 2026-s1 (scheme v1): 2n images, the first 2n
                            of the block, which half is the members drawn from the board's key. From
                            2026-s2 (v2): the pool itself, per class n_c members and n_c non-members,
                            is drawn from the whole block with the season's key (`sealed_block`,
                            core/seal.block_draw), never from this seed

The official 10,000 test images are the test split (accuracy only). Three datasets read the layout:

    fashion-mnist          10 classes, zero-padded to 32x32 (GMI's MNIST code works at 32x32;
                           padding is exact where its dataloader.py l.49-53 resizes)
    fashion-mnist-split5   GMI's MNIST convention for class-level leakage: the target learns five
                           private classes that never appear in the auxiliary data. GMI's
                           MNIST/attack.py l.121-123 attacks identities 5..9 with a GAN trained on
                           the public set; here the private classes are 5..9 (Sandal, Shirt,
                           Sneaker, Bag, Ankle boot), relabelled 0..4, and `aux_similar` is the
                           aux block's classes 0..4 (T-shirt/top, Trouser, Pullover, Dress, Coat),
                           unlabelled (-1: no private class applies to them). `aux_same` is the
                           aux block's images of the private classes. Every block is the
                           10-class block restricted to classes 5..9, so still disjoint.
    fashion-mnist-oddeven  Bias-Rec's regime (Haim et al., NeurIPS'22, problems/mnist_odd_even.py:
                           binary odd/even labels c % 2, 250 images per class), native 28x28
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from reconbench.image.data.arrays import ArraySet, TrackSplits

SPLIT_SEED = 20250609  # arXiv date of the SoK, as for the digits track and the zoo; any fixed value would do
BLOCKS = (("target", 20_000), ("holdout", 20_000), ("update", 70), ("spare", 70),
          ("evaluator", 10_000), ("aux", 5_000), ("sealed", 4_860))
PRIVATE_CLASSES = (5, 6, 7, 8, 9)  # fashion-mnist-split5
DATASETS = ("fashion-mnist", "fashion-mnist-split5", "fashion-mnist-oddeven")
UNLABELLED = -1


@lru_cache(maxsize=1)
def layout() -> dict[str, np.ndarray]:
    """block name -> indices into the 60,000 training images, in layout order (not sorted)."""
    from reconbench.image.data.fashion import fashion_mnist
    from reconbench.zoo.prepare import stratified_order

    order = stratified_order(fashion_mnist()["train"].labels, SPLIT_SEED)
    blocks, pos = {}, 0
    for name, size in BLOCKS:
        blocks[name] = order[pos:pos + size]
        pos += size
    return blocks


@dataclass(frozen=True)
class View:
    """How one dataset sees the images: which classes, their labels, and the image size."""

    classes: tuple[int, ...]
    relabel: dict[int, int]
    pad: int

    def keep(self, labels: np.ndarray, index: np.ndarray) -> np.ndarray:
        return index[np.isin(labels[index], self.classes)]

    def arrays(self, data: ArraySet, index: np.ndarray, unlabelled: bool = False) -> ArraySet:
        index = np.sort(index)  # source order within a split: its hash does not depend on the layout order
        images = data.images[index]
        if self.pad:
            images = np.pad(images, ((0, 0), (0, 0), (self.pad, self.pad), (self.pad, self.pad)))
        labels = data.labels[index]
        labels = np.full(len(index), UNLABELLED, np.int64) if unlabelled else \
            np.array([self.relabel[int(c)] for c in labels], dtype=np.int64)
        return ArraySet(np.ascontiguousarray(images), labels)


VIEWS = {
    "fashion-mnist": View(tuple(range(10)), {c: c for c in range(10)}, pad=2),
    "fashion-mnist-split5": View(PRIVATE_CLASSES, {c: i for i, c in enumerate(PRIVATE_CLASSES)}, pad=2),
    "fashion-mnist-oddeven": View(tuple(range(10)), {c: c % 2 for c in range(10)}, pad=0),
}


def _view(dataset: str) -> View:
    if dataset not in VIEWS:
        raise KeyError(f"unknown Fashion-MNIST dataset '{dataset}' (known: {', '.join(VIEWS)})")
    return VIEWS[dataset]


def _first(view: View, labels: np.ndarray, block: str, n: int) -> np.ndarray:
    kept = view.keep(labels, layout()[block])
    if n > len(kept):
        raise ValueError(f"the {block} block has {len(kept)} images of these classes, {n} asked for")
    return kept[:n]


def fashion_splits(dataset: str, train_size: int, update_size: int | None = None) -> TrackSplits:
    """The evaluator's splits of a Fashion-MNIST track (|D_tar| = train_size; update of update_size),
    holdouts included: `holdout` matches the target set, `update_holdout` the update set."""
    from reconbench.image.data.fashion import fashion_mnist

    view, data = _view(dataset), fashion_mnist()
    train, test = data["train"], data["test"]
    aux = layout()["aux"]
    similar = None
    if dataset == "fashion-mnist-split5":
        similar = view.arrays(train, aux[~np.isin(train.labels[aux], view.classes)], unlabelled=True)

    def first(block: str, n: int | None) -> ArraySet | None:
        return view.arrays(train, _first(view, train.labels, block, n)) if n else None

    return TrackSplits(
        target=first("target", train_size),
        update=first("update", update_size),
        aux_same=view.arrays(train, view.keep(train.labels, aux)),
        test=view.arrays(test, np.flatnonzero(np.isin(test.labels, view.classes))),
        aux_similar=similar,
        holdout=first("holdout", train_size),
        update_holdout=first("holdout", update_size),
    )


def sealed_pool(dataset: str, train_size: int) -> ArraySet:
    """A sealed twin's pool: the first 2 x train_size images of the sealed block in the dataset's view
    (disjoint from aux, from every open target, update and holdout image, and from the evaluator block)."""
    from reconbench.image.data.fashion import fashion_mnist

    view, train = _view(dataset), fashion_mnist()["train"]
    return view.arrays(train, _first(view, train.labels, "sealed", 2 * train_size))


def sealed_block(dataset: str) -> ArraySet:
    """The whole sealed block in the dataset's view, in source order (View.arrays sorts): what a v2 draw's pool
    is drawn from (core/seal.block_draw's indices point into it; its sha256 is a v2 row's block_sha256).
    Public, like every block: only which of its items form a draw's pool, and which of those are members,
    is the season key's secret."""
    from reconbench.image.data.fashion import fashion_mnist

    view, train = _view(dataset), fashion_mnist()["train"]
    return view.arrays(train, view.keep(train.labels, layout()["sealed"]))


UPDATE_POOL_STARTS = (4_720, 4_790)  # the sealed block's last 140 images: past every static twin's pool


def sealed_update_pool(dataset: str, update_size: int) -> ArraySet:
    """A sealed update twin's pool of 2k images: the first k from each of two offsets of the sealed block
    (multiples of ten, so each half has the open update set's classes and every class an even count;
    past the static twins' pools, whose largest is the block's first 2,000)."""
    from reconbench.image.data.fashion import fashion_mnist

    view, train = _view(dataset), fashion_mnist()["train"]
    block = view.keep(train.labels, layout()["sealed"])
    if update_size > UPDATE_POOL_STARTS[1] - UPDATE_POOL_STARTS[0]:
        raise ValueError(f"a sealed update pool holds updates of at most 70 images, {update_size} asked for")
    return view.arrays(train, np.concatenate([block[s:s + update_size] for s in UPDATE_POOL_STARTS]))


def evaluator_training_set(dataset: str) -> ArraySet:
    """The evaluation classifier's training images (the evaluator block, in the dataset's view)."""
    from reconbench.image.data.fashion import fashion_mnist

    view, train = _view(dataset), fashion_mnist()["train"]
    return view.arrays(train, view.keep(train.labels, layout()["evaluator"]))
