"""Fashion-MNIST: the Debian package and the Hub's parquet files give the same pinned arrays; the splits.

The Debian package `dataset-fashion-mnist` is installed by .ci/run and the Makefile; the Hub is
tests/hubserver.py on 127.0.0.1, serving parquet files written here in the Hub repository's layout
(`image` = {bytes: PNG, path}, `label`) from the Debian arrays.
"""

import gzip
import hashlib
import io

import numpy as np
import pytest

from reconbench.image.data import fashion
from reconbench.image.data.fashion import FashionMNISTMissing, fashion_mnist, from_hub, from_idx_folder
from reconbench.image.data.fashion_splits import (BLOCKS, PRIVATE_CLASSES, UNLABELLED, evaluator_training_set,
                                            fashion_splits, layout)


@pytest.fixture(scope="module")
def debian():
    folder = fashion.DEBIAN_DIR
    assert folder.is_dir(), fashion.HOW_TO_GET  # CI installs the package (.ci/run)
    return from_idx_folder(folder)


def test_debian_files_decompress_to_the_authors_bytes(debian):
    raw = gzip.open(fashion.DEBIAN_DIR / "train-images-idx3-ubyte.gz").read()
    assert len(raw) == 47_040_016  # 16-byte header + 60,000 x 28 x 28
    assert hashlib.sha256(raw).hexdigest() == fashion.RAW_SHA256["train-images-idx3-ubyte"]
    assert debian["train"].labels[:10].tolist() == [9, 0, 0, 3, 0, 2, 7, 2, 5, 5]
    assert debian["train"].images.shape == (60000, 1, 28, 28) and debian["test"].images.shape == (10000, 1, 28, 28)
    assert np.bincount(debian["train"].labels).tolist() == [6000] * 10
    assert {k: v.sha256 for k, v in debian.items()} == fashion.ARRAYS_SHA256


def _parquet(data) -> bytes:
    """The Hub repository's parquet layout, written from arrays."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    pngs = []
    for img in data.images[:, 0]:
        buf = io.BytesIO()
        Image.fromarray(img, mode="L").save(buf, format="PNG")
        pngs.append({"bytes": buf.getvalue(), "path": None})
    table = pa.table({"image": pa.array(pngs, type=pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
                      "label": pa.array(data.labels, type=pa.int64())})
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


@pytest.fixture(scope="module")
def parquet_files(debian):
    return {split: _parquet(debian[split]) for split in ("train", "test")}


def test_without_debian_the_hub_parquet_gives_the_same_pinned_arrays(hub_server, debian, parquet_files, monkeypatch):
    names = {"train": "fashion_mnist/train/0000.parquet", "test": "fashion_mnist/test/0000.parquet"}
    rev = hub_server.add_files("zalando-datasets/fashion_mnist", {names[s]: parquet_files[s] for s in names},
                               repo_type="dataset")
    # no Debian folder: fashion_mnist() takes the Hub route, pinned by revision and sha256, and checks
    # the decoded arrays against the same content hashes as the Debian route
    monkeypatch.setattr(fashion, "DEBIAN_DIR", hub_server.store.root / "no-such-dir")
    monkeypatch.setattr(fashion, "HUB_REVISION", rev)
    monkeypatch.setattr(fashion, "HUB_FILES", {s: (names[s], hashlib.sha256(parquet_files[s]).hexdigest()) for s in names})
    monkeypatch.delenv(fashion.DIR_ENV, raising=False)
    fashion_mnist.cache_clear()
    try:
        hub = fashion_mnist()
    finally:
        fashion_mnist.cache_clear()
    for split in ("train", "test"):
        assert np.array_equal(hub[split].images, debian[split].images)
        assert np.array_equal(hub[split].labels, debian[split].labels)
    assert [p for m, p in hub_server.requests if m == "GET" and "/resolve/" in p]  # really downloaded


def test_hub_file_with_other_bytes_is_refused(hub_server):
    rev = hub_server.add_file("zalando-datasets/fashion_mnist", "fashion_mnist/test/0000.parquet",
                              b"not the pinned bytes", repo_type="dataset")
    wrong = "0" * 64
    with pytest.raises(Exception, match="sha256"):
        from_hub("zalando-datasets/fashion_mnist", rev, {"test": ("fashion_mnist/test/0000.parquet", wrong)})


def test_no_source_gives_one_line_saying_how_to_get_the_data(tmp_path, monkeypatch):
    monkeypatch.setattr(fashion, "DEBIAN_DIR", tmp_path / "absent")
    monkeypatch.delenv(fashion.DIR_ENV, raising=False)  # HF_HUB_OFFLINE is set by conftest, with an empty cache
    fashion_mnist.cache_clear()
    try:
        with pytest.raises(FashionMNISTMissing) as err:
            fashion_mnist()
    finally:
        fashion_mnist.cache_clear()
    message = str(err.value)
    assert "\n" not in message and "apt-get install dataset-fashion-mnist" in message
    assert "zalando-datasets/fashion_mnist" in message and "HF_HUB_OFFLINE" in message


def test_a_folder_with_other_bytes_is_refused_naming_the_file(tmp_path, debian):
    for name in fashion.RAW_SHA256:
        (tmp_path / name).write_bytes(gzip.open(fashion.DEBIAN_DIR / f"{name}.gz").read())
    raw = bytearray((tmp_path / "t10k-labels-idx1-ubyte").read_bytes())
    raw[-1] = (raw[-1] + 1) % 10
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(bytes(raw))
    with pytest.raises(FashionMNISTMissing, match="t10k-labels-idx1-ubyte: decompressed sha256 is"):
        from_idx_folder(tmp_path)
    (tmp_path / "train-images-idx3-ubyte").unlink()
    with pytest.raises(FashionMNISTMissing, match="train-images-idx3-ubyte.*missing"):
        from_idx_folder(tmp_path)


# ---------------------------------------------------------------- splits


def test_layout_blocks_are_disjoint_and_sized():
    blocks = layout()
    assert [(name, len(blocks[name])) for name, _ in BLOCKS] == list(BLOCKS)
    every = np.concatenate(list(blocks.values()))
    assert len(np.unique(every)) == len(every)


def _source_rows(data, source):
    """Indices of `data`'s 28x28 images in `source` (byte-exact rows), -1 where absent."""
    flat = {img.tobytes(): i for i, img in enumerate(source.images[:, 0])}
    crop = data.images[:, 0, 2:30, 2:30] if data.images.shape[-1] == 32 else data.images[:, 0]
    return np.array([flat.get(np.ascontiguousarray(img).tobytes(), -1) for img in crop])


def test_fashion_splits_nest_balance_and_never_meet(debian):
    small, big = fashion_splits("fashion-mnist", 100, 8), fashion_splits("fashion-mnist", 1000, 64)
    assert small.target.images.shape == (100, 1, 32, 32) and np.bincount(small.target.labels).tolist() == [10] * 10
    assert np.bincount(big.target.labels).tolist() == [100] * 10
    assert (small.target.images[:, :, :2].max(), small.target.images[:, :, :, 30:].max()) == (0, 0)  # zero padding
    rows_small, rows_big = _source_rows(small.target, debian["train"]), _source_rows(big.target, debian["train"])
    assert set(rows_small) <= set(rows_big) and -1 not in rows_big  # nested, and real training images
    holdout, update_holdout = big.holdout, big.update_holdout
    assert np.bincount(holdout.labels).tolist() == [100] * 10
    assert sorted(update_holdout.labels) == sorted(big.update.labels)  # same classes as the update set
    groups = [rows_big, _source_rows(holdout, debian["train"]), _source_rows(big.update, debian["train"]),
              _source_rows(big.aux_same, debian["train"]), _source_rows(evaluator_training_set("fashion-mnist"), debian["train"])]
    together = np.concatenate(groups)
    assert len(np.unique(together)) == len(together)  # no image in two of them
    assert set(_source_rows(update_holdout, debian["train"])) <= set(groups[1])  # drawn from the holdout, as on digits


def test_split5_aux_similar_never_holds_a_private_class(debian):
    s = fashion_splits("fashion-mnist-split5", 500)
    assert np.bincount(s.target.labels).tolist() == [100] * 5
    origin = debian["train"].labels[_source_rows(s.target, debian["train"])]
    assert set(origin) == set(PRIVATE_CLASSES) and np.array_equal(origin - 5, s.target.labels)
    similar_origin = debian["train"].labels[_source_rows(s.aux_similar, debian["train"])]
    assert not set(similar_origin) & set(PRIVATE_CLASSES) and len(s.aux_similar) == 2500
    assert set(s.aux_similar.labels) == {UNLABELLED}
    assert set(debian["train"].labels[_source_rows(s.aux_same, debian["train"])]) == set(PRIVATE_CLASSES)


def test_oddeven_is_native_28x28_with_odd_even_labels(debian):
    s = fashion_splits("fashion-mnist-oddeven", 500)
    assert s.target.images.shape == (500, 1, 28, 28) and np.bincount(s.target.labels).tolist() == [250, 250]
    origin = debian["train"].labels[_source_rows(s.target, debian["train"])]
    assert np.array_equal(origin % 2, s.target.labels)
