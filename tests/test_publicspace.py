"""The public near-copy search (submissions/publicspace.py) flags exactly what the full comparison
(nearcopy.Space.flag) flags, with the same nearest distances, on the digits pool: copies, edited
copies, shifted copies, constant images and noise (issue 37: it replaced the full comparison in the
site build and in validate)."""

import numpy as np
import pytest
import torch

from reconbench.core.tracks import get_track
from reconbench.image.track_files import public_pool
from reconbench.submissions import publicspace, shiftfeatures
from reconbench.submissions.nearcopy import SHIFTS, Space, public_thresholds, structure_features
from reconbench.submissions.nearindex import dct_projection
from reconbench.submissions.publicspace import PublicSpace


def queries(pool: np.ndarray) -> np.ndarray:
    rng = np.random.default_rng(3)
    picks = pool[rng.choice(len(pool), 60, replace=False)].copy()
    edited = picks[:20].copy()
    edited[:, 0, rng.integers(0, 8, 20), rng.integers(0, 8, 20)] = 255  # one full-range pixel each
    shifted = np.roll(picks[20:40], 1, axis=3)
    noisy = np.clip(picks[40:].astype(int) + rng.integers(-12, 13, picks[40:].shape), 0, 255).astype(np.uint8)
    constant = np.full((3, *pool.shape[1:]), 90, np.uint8)
    noise = rng.integers(0, 256, (20, *pool.shape[1:])).astype(np.uint8)
    return np.concatenate([picks[:10], edited, shifted, noisy, constant, noise])


def test_the_screened_search_flags_what_the_full_one_flags():
    track = get_track("digits")
    pool, thresholds = public_pool(track), public_thresholds(track)
    q = queries(pool)
    torch.set_num_threads(1)
    full = Space(pool).flag(q, thresholds)
    fast = PublicSpace(pool).flag(q, thresholds)
    assert 10 < full.hit.sum() < len(q)  # the cases include both answers
    assert np.array_equal(fast.hit, full.hit)
    by_pixel = full.hit & (full.pixel <= thresholds.pixel_mse)
    # the evidence: the nearest public image in the space that flagged it, at the same distance
    assert np.allclose(fast.pixel[by_pixel], full.pixel[by_pixel], rtol=0, atol=1e-12)
    only_struct = full.hit & ~by_pixel
    assert np.allclose(fast.structure[only_struct], full.structure[only_struct], rtol=0, atol=1e-12)
    assert np.all(fast.where[fast.hit] >= 0) and np.all(fast.where[~fast.hit] == -1)
    assert np.all(np.isinf(fast.pixel[~fast.hit]))


def test_copies_and_the_closest_distance_are_the_full_comparison_s():
    """checks/copies.py searches the pool through the same screen: its pairs within the copy threshold
    and its closest distance are those of the full float64 comparison (copies.nearest_copies)."""
    from reconbench.submissions.checks.copies import COPY_MSE, nearest_copies

    pool = public_pool(get_track("digits"))
    q = queries(pool)
    space = PublicSpace(pool)
    best, _ = nearest_copies(q, torch.from_numpy(pool.reshape(len(pool), -1)).double() / 255.0)
    rows, cols, mse = space.pixel_pairs(q, COPY_MSE)
    assert set(rows.tolist()) == set(np.flatnonzero(best <= COPY_MSE).tolist()) and len(rows)
    assert abs(space.closest_pixel(q[10:]) - best[10:].min()) < 1e-12  # without the exact copies: a positive minimum
    assert best[10:].min() > 0


def test_pools_sharing_pixel_axes_give_the_same_answers():
    """A sealed draw's pool screens with the axes of its dataset's first pool (publicspace._AXES): any
    orthonormal axes keep the bound, so the flags and the closest distance are those of its own axes."""
    from reconbench.submissions import publicspace

    track = get_track("digits")
    pool, thresholds = public_pool(track), public_thresholds(track)
    q = queries(pool)
    publicspace._AXES.clear()
    PublicSpace(pool[::-1][:300], axes_key="shared-test")  # the first pool of the key fixes its axes
    shared, own = PublicSpace(pool, axes_key="shared-test"), PublicSpace(pool)
    assert not np.allclose(shared.axes, own.axes)
    a, b = shared.flag(q, thresholds), own.flag(q, thresholds)
    assert np.array_equal(a.hit, b.hit) and np.array_equal(a.where, b.where)
    assert np.array_equal(a.pixel, b.pixel) and np.array_equal(a.structure, b.structure)
    assert shared.closest_pixel(q[10:]) == own.closest_pixel(q[10:])
    publicspace._AXES.clear()


def edge_cases(pool: np.ndarray) -> np.ndarray:
    """Constant images (black, grey, white), bright borders (a pool image framed in white, a white
    2-pixel frame on black), one bright pixel in a corner or on an edge, and noise."""
    shape = pool.shape[1:]
    constant = np.stack([np.full(shape, v, np.uint8) for v in (0, 90, 255)])
    framed = pool[:4].copy()
    framed[:, :, [0, -1], :] = 255
    framed[:, :, :, [0, -1]] = 255
    frame2 = np.zeros((1, *shape), np.uint8)
    frame2[..., :2, :] = frame2[..., -2:, :] = frame2[..., :2] = frame2[..., -2:] = 255
    dots = np.zeros((3, *shape), np.uint8)
    dots[0, :, 0, 0], dots[1, :, -1, -2], dots[2, :, 1, shape[-1] // 2] = 255, 200, 255
    noise = np.random.default_rng(5).integers(0, 256, (6, *shape)).astype(np.uint8)
    return np.concatenate([constant, framed, frame2, dots, noise])


@pytest.mark.portable
@pytest.mark.parametrize("track,size", [("digits", None), ("fashion-n100", 300), ("fashion-oddeven-n100", 300)])
def test_the_pool_s_projection_is_structure_features_bit_for_bit(track, size, monkeypatch):
    """publicspace._struct_projection (shiftfeatures: filters with wrap padding rolled, borders
    recomputed) equals its definition, structure_features at each shift on the DCT axes, exactly: the
    screen's lower bound holds for the exact features. Digits (8x8) and 32x32 padded / 28x28 Fashion."""
    pool = public_pool(get_track(track))
    images = np.concatenate([pool[:size], edge_cases(pool)])
    torch.set_num_threads(1)
    monkeypatch.setattr(publicspace, "_MEMO", {})
    p = dct_projection(tuple(images.shape[1:]), publicspace.DIMS)
    want = np.stack([structure_features(images, s).numpy() @ p.T for s in SHIFTS], axis=1)
    # the features the pool's projection is made of are structure_features' bit for bit, whichever path ran
    for s, f in shiftfeatures.shifted_features(images):
        assert torch.equal(f, structure_features(images, s)), s
    # their projection is a matmul in batches, here in one: BLAS blocking (threads, sizes) may move the last
    # bit, far inside the screen's SLACK
    np.testing.assert_allclose(publicspace._struct_projection(images), want, rtol=0, atol=1e-12)
    # the wrap-and-frame computation itself, also on digits (whose pool takes structure_features), where
    # this machine's F.conv2d sums in the order it reproduces (shiftfeatures.exact; elsewhere the pool
    # takes structure_features, checked above, and benchmarks/bench_struct_projection.py says "fast path off")
    if shiftfeatures.exact(tuple(images.shape[1:])):
        for s, f in shiftfeatures._shifted(images):
            assert torch.equal(f, structure_features(images, s)), s


def test_a_probe_mismatch_falls_back_to_structure_features(monkeypatch):
    images = edge_cases(public_pool(get_track("fashion-n100")))
    monkeypatch.setitem(shiftfeatures._EXACT, tuple(images.shape[1:]), False)
    monkeypatch.setattr(shiftfeatures, "_shifted", None)  # would raise if called
    got = list(shiftfeatures.shifted_features(images))
    assert [s for s, _ in got] == SHIFTS
    assert all(torch.equal(f, structure_features(images, s)) for s, f in got)
