"""The near-copy structure space (submissions/nearcopy.py) against an independent reference:
scipy.ndimage's median filter and correlate ("nearest" mode is replicate padding). The toolkit's
3x3 median is a sorting network on the grey levels; a median is one of its inputs, so it must give
exactly the reference's values, ties and constant images included."""

import numpy as np
import pytest
import torch
from scipy import ndimage

from reconbench.submissions.nearcopy import SHIFTS, median3x3, structure_features


def images(shape, levels, seed=0):
    return np.random.default_rng(seed).integers(0, levels, shape).astype(np.uint8)


@pytest.mark.parametrize("shape,levels", [((40, 1, 8, 8), 17), ((20, 1, 32, 32), 256), ((10, 3, 7, 5), 3),
                                          ((6, 1, 1, 1), 256), ((6, 1, 2, 3), 2)])
def test_median_equals_scipys_median_filter(shape, levels):
    x = images(shape, levels)
    want = ndimage.median_filter(x, size=(1, 1, 3, 3), mode="nearest")
    assert np.array_equal(median3x3(torch.from_numpy(x)).numpy(), want)


@pytest.mark.parametrize("shift", SHIFTS)
def test_structure_features_equal_the_reference(shift):
    x = np.concatenate([images((30, 1, 12, 12), 256, seed=1), np.full((2, 1, 12, 12), 7, np.uint8)])
    ref = np.roll(x.astype(np.float64) / 255.0, shift, axis=(2, 3))
    ref = ndimage.median_filter(ref, size=(1, 1, 3, 3), mode="nearest")
    kernel = np.outer([1, 2, 1], [1, 2, 1])[None, None] / 16.0
    ref = ndimage.correlate(ref, kernel, mode="nearest").reshape(len(x), -1)
    ref = ref - ref.mean(1, keepdims=True)
    ref = ref / np.maximum(np.linalg.norm(ref, axis=1, keepdims=True), 1e-12)
    got = structure_features(x, shift).numpy()
    assert np.allclose(got, ref, atol=1e-12)
    assert np.abs(got[-2:]).max() < 1e-3  # a constant image: (nearly) zeros, distance ~1 to everything


def test_public_spaces_kept_are_bounded_and_their_thresholds_outlive_them(monkeypatch):
    """A whole-board validation walks every track: the public Spaces are kept for the last SPACES_KEPT
    tracks only, and a dropped one is rebuilt equal."""
    from reconbench.submissions import nearcopy, publicspace
    from reconbench.core.tracks import get_track

    monkeypatch.setattr(publicspace, "_SPACES", type(publicspace._SPACES)())
    monkeypatch.setattr(publicspace, "SPACES_KEPT", 2)
    tracks = [get_track(t) for t in ("digits", "digits-mlp", "digits-binary-mlp")]
    first = publicspace.public_space(tracks[0])
    for t in tracks[1:]:
        publicspace.public_space(t)
    assert [k[0] for k in publicspace._SPACES] == ["digits-mlp", "digits-binary-mlp"]
    assert nearcopy.public_thresholds(tracks[0]) == first[1]  # from _THRESHOLDS, no Space rebuilt
    again = publicspace.public_space(tracks[0])
    assert again[0] is not first[0] and np.array_equal(again[0].struct_proj, first[0].struct_proj)
    assert [k[0] for k in publicspace._SPACES] == ["digits-binary-mlp", "digits"]
