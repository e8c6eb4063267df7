"""Scheme v2 of the seal (core/seal.py) and the encrypted weight files (core/sealed_weights.py), throwaway keys."""

from __future__ import annotations

import numpy as np
import pytest

from reconbench.core import seal, sealed_weights
from reconbench.core.seal import SealError

LABELS = np.repeat(np.arange(10), 486)  # a block of 4,860 with 486 items per class, as the Fashion block
PER_CLASS = {c: 10 for c in range(10)}


def test_a_season_key_opens_only_its_season():
    master = bytes.fromhex(seal.new_key())
    assert seal.season_key(master, "2026-s2") != seal.season_key(master, "2026-s3")
    assert seal.season_key(master, "2026-s2") != master


def test_a_draw_takes_members_and_nonmembers_from_the_whole_block_per_class():
    key = bytes.fromhex(seal.new_key())
    indices, members = seal.block_draw(key, "g", 0, LABELS, PER_CLASS)
    assert len(indices) == 200 and members.sum() == 100 and len(set(indices.tolist())) == 200
    assert np.all(np.diff(indices) > 0)
    for c in range(10):
        in_class = LABELS[indices] == c
        assert in_class.sum() == 20 and members[in_class].sum() == 10
    # not the block's first 2n: the pool spreads over the block
    assert indices.max() > 2_000
    other, _ = seal.block_draw(key, "g", 1, LABELS, PER_CLASS)
    assert set(indices.tolist()) != set(other.tolist())


def test_the_commitment_binds_the_pool_and_the_membership():
    key = bytes.fromhex(seal.new_key())
    block = "ab" * 32
    indices, members = seal.block_draw(key, "g", 0, LABELS, PER_CLASS)
    published = seal.commitment_v2(key, "g", 0, block, indices, members)
    got, inside = seal.open_block_draw(key, "g", 0, block, LABELS, PER_CLASS, published)
    assert np.array_equal(got, indices) and np.array_equal(inside, members)
    swapped = indices.copy()
    swapped[0] = next(i for i in range(4860) if i not in set(indices.tolist()) and LABELS[i] == LABELS[indices[0]])
    assert seal.commitment_v2(key, "g", 0, block, np.sort(swapped), members) != published
    assert seal.commitment_v2(key, "g", 0, block, indices, ~members) != published
    with pytest.raises(SealError, match="does not open"):
        seal.open_block_draw(bytes.fromhex(seal.new_key()), "g", 0, block, LABELS, PER_CLASS, published)


def test_a_class_too_small_for_the_draw_is_one_error():
    with pytest.raises(SealError, match="class 3 needs 1000"):
        seal.block_draw(bytes(32), "g", 0, LABELS, {3: 500})


def test_sealed_weights_open_only_with_their_key_and_label(tmp_path):
    key = seal.weights_key(bytes.fromhex(seal.new_key()), "g", 0)
    src = tmp_path / "plain.bin"
    src.write_bytes(b"weights" * 100)
    dst = tmp_path / "m.sealed"
    sealed_weights.seal_file(src, dst, key, "g-d0/model")
    assert b"weights" not in dst.read_bytes()
    assert sealed_weights.open_file(dst, key, "g-d0/model") == src.read_bytes()
    with pytest.raises(SealError, match="does not open"):
        sealed_weights.open_file(dst, key, "g-d1/model")  # another draw's label
    with pytest.raises(SealError, match="does not open"):
        sealed_weights.open_file(dst, seal.weights_key(bytes(32), "g", 0), "g-d0/model")
    flipped = bytearray(dst.read_bytes())
    flipped[-1] ^= 1
    (tmp_path / "x.sealed").write_bytes(bytes(flipped))
    with pytest.raises(SealError, match="x.sealed"):
        sealed_weights.open_file(tmp_path / "x.sealed", key, "g-d0/model")
    with pytest.raises(SealError, match="not a sealed weight file"):
        sealed_weights.open_file(src, key, "g-d0/model")
    with pytest.raises(SealError, match="cannot read"):
        sealed_weights.open_file(tmp_path / "missing", key, "g-d0/model")
