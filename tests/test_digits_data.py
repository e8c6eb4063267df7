"""The digits track's images are read from the CSV file scikit-learn ships, without importing
sklearn.datasets, pinned by content hash, and equal to what sklearn.datasets.load_digits returns."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from reconbench.image.data import digits


def test_the_csv_reader_gives_exactly_load_digits():
    from sklearn.datasets import load_digits  # the independent reference

    ref = load_digits()
    got = digits.load_digits_arrays()
    assert got.images.shape == (1797, 1, 8, 8) and got.images.dtype == np.uint8
    assert np.array_equal(got.images[:, 0], np.rint(ref.images * (255.0 / 16.0)).astype(np.uint8))
    assert np.array_equal(got.labels, ref.target)
    # the layout too: torch keeps numpy's strides, and a size-1 channel's stride picks the conv kernel
    assert got.images.strides == (np.rint(ref.images).astype(np.uint8)[:, None]).strides


def test_a_changed_file_is_refused_naming_it(tmp_path, monkeypatch):
    rows = gzip.open(digits.digits_csv(), "rt").read().splitlines()
    rows[5] = rows[5].replace("0", "1", 1)
    changed = tmp_path / "digits.csv.gz"
    with gzip.open(changed, "wt") as f:
        f.write("\n".join(rows) + "\n")
    monkeypatch.setattr(digits, "digits_csv", lambda: changed)
    with pytest.raises(digits.DigitsError, match=f"{changed}.*not the pinned"):
        digits.load_digits_arrays()
