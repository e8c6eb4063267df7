"""Feldman-Zhang memorization estimator on scikit-learn digits with a 1-NN classifier: flipped
(mislabeled) samples must be memorized, typical ones not."""

import numpy as np
import pytest

from reconbench.image.metrics import estimate_memorization
from reconbench.image.metrics.testdata import digits


pytestmark = pytest.mark.usefixtures("single_torch_thread")


@pytest.fixture(scope="module")
def setup():
    images, labels = digits()
    x = images.reshape(len(images), -1).astype(np.float64)[:600]
    y = labels[:600].copy()
    rng = np.random.default_rng(0)
    flipped = rng.choice(len(y), size=30, replace=False)
    y[flipped] = (y[flipped] + rng.integers(1, 10, size=30)) % 10  # a wrong label, surely
    sq = (x**2).sum(1)
    dist = sq[:, None] + sq[None, :] - 2 * x @ x.T  # all pairwise distances, once

    def train_fn(subset):
        def predict(indices):  # 1-NN among the training subset (a sample in it finds itself)
            return y[subset[np.argmin(dist[np.ix_(indices, subset)], axis=1)]]

        return predict

    return train_fn, y, flipped


def test_mislabeled_samples_are_memorized(setup):
    train_fn, y, flipped = setup
    mem = estimate_memorization(train_fn, y, n_models=40, seed=1)
    typical = np.setdiff1d(np.arange(len(y)), flipped)
    assert np.nanmean(mem.scores[flipped]) > 0.8
    assert np.nanmedian(mem.scores[typical]) < 0.05
    assert np.nanmean(mem.scores[flipped]) > np.nanmean(mem.scores[typical]) + 0.5
    assert (mem.n_in + mem.n_out == 40).all() and mem.n_in.mean() == pytest.approx(0.7 * 40, rel=0.05)


def test_model_level_is_mean_of_first_samples_and_seeded(setup):
    train_fn, y, _ = setup
    a = estimate_memorization(train_fn, y, n_models=20, seed=3, n_first=100)
    b = estimate_memorization(train_fn, y, n_models=20, seed=3, n_first=100)
    np.testing.assert_array_equal(a.scores, b.scores)
    assert a.model_level == pytest.approx(np.nanmean(a.scores[:100]))
    c = estimate_memorization(train_fn, y, n_models=20, seed=4)
    assert not np.array_equal(np.nan_to_num(a.scores), np.nan_to_num(c.scores))


def test_unseen_side_gives_nan():
    y = np.arange(4) % 2
    mem = estimate_memorization(lambda s: (lambda idx: y[idx]), y, n_models=1, seed=0)
    assert np.isnan(mem.scores).all()  # with one model every sample lacks one side
