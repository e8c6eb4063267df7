"""The near-duplicate index (submissions/nearindex.py) gives the verdicts of the exhaustive pairwise
check: on a corpus of the example entries' reconstructions, public images and near-copies of them
at shares on both sides of DUPLICATE_SHARE, made by the edits the copy rule exists for."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from reconbench.image.results import load_reconstructions
from reconbench.image.track_files import public_pool
from reconbench.submissions.checks.duplicates import DUPLICATE_SHARE
from reconbench.submissions.nearcopy import Space, public_thresholds
from reconbench.submissions.nearindex import (NearIndex, compute_features, dct_projection, first_near_duplicate, radii,
                                             track_basis)
from reconbench.core.tracks import get_track

pytestmark = pytest.mark.usefixtures("single_torch_thread")

REPO = Path(__file__).resolve().parents[1]
SIZE = 200  # images of each set (the first of each example entry): the relation holds at any size
EXAMPLES = sorted(p.parent.name for p in (REPO / "submissions" / "reconbench-baselines").glob("digits-*/reconstructions.safetensors"))


def exhaustive_first(a, earlier, exact):
    """The check as it was before the index: every earlier entry, in order, compared exactly
    (exact[(a, b)] is Space(b).flag(a).share, computed once for the whole corpus)."""
    for other in earlier:
        if exact[(a, other)] > DUPLICATE_SHARE:
            return other, exact[(a, other)]
    return None


def edit(images: np.ndarray, how: str, rng) -> np.ndarray:
    x = images.astype(np.int16)
    if how == "pixel":  # one full-range pixel per image: far in MSE, near in the structure space
        flat = x.reshape(len(x), -1)
        flat[np.arange(len(x)), rng.integers(0, flat.shape[1], len(x))] ^= 255
    elif how == "brighter":
        x = x + 30
    elif how == "shift":
        x = np.roll(x, (1, -1), axis=(2, 3))
    elif how == "noise":
        x = x + rng.integers(-12, 13, x.shape)
    return np.clip(x, 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def corpus():
    track = get_track("digits")
    thresholds = public_thresholds(track)
    rng = np.random.default_rng(7)
    sets: dict[str, np.ndarray] = {}
    for name in EXAMPLES:
        images, _ = load_reconstructions(REPO / "submissions" / "reconbench-baselines" / name / "reconstructions.safetensors")
        if images.shape == (500, 1, 8, 8):  # the static digits target set (|D_tar| = 500)
            sets[name] = images[:SIZE]
    pool = public_pool(track)
    sets["public-a"] = pool[rng.permutation(len(pool))[:SIZE]]
    honest = [n for n in sets if n != "public-a"]
    assert len(honest) >= 4, "the example entries of the digits track are the corpus"
    # near-copies: an honest entry with `share` of its images replaced by edited images of another
    for i, (how, share) in enumerate([("exact", 0.04), ("exact", 0.06), ("pixel", 0.05), ("pixel", 0.08),
                                      ("brighter", 0.3), ("shift", 0.07), ("noise", 1.0), ("shift", 0.052)]):
        base, source = sets[honest[i % len(honest)]], sets[honest[(i + 1) % len(honest)]]
        k = int(round(share * len(base)))
        rows = rng.choice(len(base), k, replace=False)
        copy = base.copy()
        copy[rows] = edit(source[rows], how, rng)
        sets[f"copy-{how}-{share:g}-of-{honest[(i + 1) % len(honest)][:20]}"] = copy
    features = {n: compute_features(x) for n, x in sets.items()}
    spaces = {n: Space(x) for n, x in sets.items()}
    exact = {(a, b): spaces[b].flag(sets[a], thresholds).share for a in sets for b in sets if a != b}
    return sets, features, spaces, thresholds, exact, track_basis(track)


def test_the_projection_is_orthonormal_and_never_lengthens_a_difference():
    for shape, dims in [((1, 8, 8), 64), ((1, 8, 8), 16), ((3, 5, 7), 16)]:
        p = dct_projection(shape, dims)
        assert p.shape == (min(dims, int(np.prod(shape))), int(np.prod(shape)))
        assert np.allclose(p @ p.T, np.eye(len(p)), atol=1e-12)
    x = np.random.default_rng(0).normal(size=(50, 64))
    p = dct_projection((1, 8, 8), 16)
    assert (np.linalg.norm(x @ p.T, axis=1) <= np.linalg.norm(x, axis=1) + 1e-12).all()
    assert np.allclose(np.linalg.norm(x @ dct_projection((1, 8, 8), 64).T, axis=1), np.linalg.norm(x, axis=1))


def test_index_bounds_every_exact_share_and_prunes_the_honest_pairs(corpus):
    sets, features, spaces, thresholds, exact, basis = corpus
    index = NearIndex(features.items(), basis)
    shape = (1, 8, 8)
    pruned = honest_pairs = 0
    for a in sets:
        bounds = index.upper_shares(features[a], thresholds, shape)
        for b in sets:
            if a == b:
                continue
            assert bounds.get(b, 0.0) >= exact[(a, b)], (a, b, bounds.get(b, 0.0), exact[(a, b)])
            if not a.startswith("copy") and not b.startswith("copy"):
                honest_pairs += 1
                pruned += bounds.get(b, 0.0) <= DUPLICATE_SHARE
    assert pruned == honest_pairs  # no exact comparison between the honest sets at all


def test_index_verdicts_equal_the_exhaustive_check_in_any_arrival_order(corpus):
    sets, features, spaces, thresholds, exact, basis = corpus
    index = NearIndex(features.items(), basis)
    names = list(sets)
    found = 0
    for trial in range(4):
        order = list(np.random.default_rng(trial).permutation(names))
        for i, a in enumerate(order):
            earlier = order[:i]
            want = exhaustive_first(a, earlier, exact)
            got = first_near_duplicate(sets[a], features[a], earlier, index, spaces.get, thresholds, DUPLICATE_SHARE)
            assert got == want, (a, earlier, got, want)
            found += want is not None
    assert found >= 8  # the corpus does hold near-duplicates, found the same way both ways


def test_blocks_of_the_index_give_the_bounds_of_one_tree(corpus, monkeypatch):
    """The index keeps its entries in blocks of BLOCK (arrival order) and skips the blocks holding no
    entry a query is compared with: any block size gives one tree's bounds, `among` or not."""
    import reconbench.submissions.nearindex as nearindex

    sets, features, spaces, thresholds, exact, basis = corpus
    one = NearIndex(features.items(), basis)
    monkeypatch.setattr(nearindex, "BLOCK", 3)
    blocks = NearIndex(features.items(), basis)
    assert len(blocks._blocks) == -(-len(features) // 3) and len(one._blocks) == 1
    names = list(features)
    for i, a in enumerate(names):
        assert blocks.upper_shares(features[a], thresholds, (1, 8, 8)) == one.upper_shares(features[a], thresholds, (1, 8, 8))
        among = set(names[:i])  # the earlier entries, as duplicates.py asks: later blocks are skipped
        got = blocks.upper_shares(features[a], thresholds, (1, 8, 8), among=among)
        assert got == one.upper_shares(features[a], thresholds, (1, 8, 8), among=among)
        assert set(got) <= among


def test_radii_grow_only_by_rounding():
    thresholds = public_thresholds(get_track("digits"))
    pixel, struct = radii(thresholds, (1, 8, 8))
    assert np.sqrt(thresholds.pixel_mse * 64) < pixel < np.sqrt(thresholds.pixel_mse * 64) + 1e-6
    assert np.sqrt(2 * thresholds.structure) < struct < np.sqrt(2 * thresholds.structure) + 0.002


def test_pixel_basis_is_orthonormal_and_ordered_by_variance():
    basis = track_basis(get_track("digits"))
    pool = public_pool(get_track("digits")).reshape(-1, 64) / 255.0
    assert basis.shape == (16, 64) and np.allclose(basis @ basis.T, np.eye(16), atol=1e-10)
    variance = (pool @ basis.T).var(axis=0)
    assert (np.diff(variance) <= 1e-12).all()
