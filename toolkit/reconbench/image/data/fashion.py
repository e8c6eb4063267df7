"""Fashion-MNIST (Xiao, Rasul, Vollgraf, 2017): 60,000 + 10,000 grey 28x28 images in 10 classes.

Two sources, one set of arrays (pinned by content hash, below):

1. The Debian/Ubuntu package `dataset-fashion-mnist` (`apt-get install dataset-fashion-mnist`):
   the authors' four `*-ubyte.gz` IDX files under /usr/share/datasets/fashion-mnist/. Debian
   re-compresses them, so the archives' MD5s differ from the ones the authors publish; the
   *decompressed* bytes are the originals, and that is what we pin (RAW_SHA256).
   RECONBENCH_FASHION_MNIST_DIR names another folder holding the same four files (.gz or not).
2. Elsewhere, the Hugging Face Hub: `zalando-datasets/fashion_mnist` at a pinned commit, two
   parquet files (columns `image` = {bytes: PNG, path} and `label`), each checked against its
   sha256 (HUB_FILES) before it is decoded.

Either way the decoded arrays are checked against ARRAYS_SHA256 (reconbench.image.data.arrays.ArraySet
content hash), so both sources give the same bytes or fail loudly. A machine with neither gets
one line saying how to get the data (FashionMNISTMissing).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
from functools import lru_cache
from pathlib import Path

import numpy as np

from reconbench.image.data.arrays import ArraySet

DEBIAN_DIR = Path("/usr/share/datasets/fashion-mnist")
DIR_ENV = "RECONBENCH_FASHION_MNIST_DIR"
CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")

# sha256 of the decompressed IDX files (the authors' bytes; 47,040,016 bytes of training images).
RAW_SHA256 = {
    "train-images-idx3-ubyte": "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
    "train-labels-idx1-ubyte": "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
    "t10k-images-idx3-ubyte": "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
    "t10k-labels-idx1-ubyte": "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
}
# ArraySet.sha256 of the decoded (N, 1, 28, 28) uint8 images + int64 labels, in file order.
ARRAYS_SHA256 = {
    "train": "45cf682121d0da63fb72c6579f2e6a57a5896491bd6a23d4a75dc9bbd4472c00",
    "test": "30719d1c3e7956f0d1f828bad1a7fcfa6363bba1cbac150439bdb7f5fa21033f",
}

# The Hub's parquet copy: the dataset repo's parquet-converter commit 7ef1216 ("Update parquet
# files"); the sha256 and sizes are those of its git-lfs pointers.
HUB_REPO = "zalando-datasets/fashion_mnist"
HUB_REVISION = "7ef1216ad86ef4618d6d23cc3ac90be00aa9aa15"
HUB_FILES = {
    "train": ("fashion_mnist/train/0000.parquet", "a5769a70af055b15ada8bd3dad9057557554fdd30e17cba45e7ef0f8bf79c5bb"),
    "test": ("fashion_mnist/test/0000.parquet", "fb36d8b5b74a491bce99357dcee62a32d347a356ea2a35d1c9057e7a7435ca5a"),
}

HOW_TO_GET = (f"Fashion-MNIST is not on this machine: install it with `apt-get install dataset-fashion-mnist` "
              f"(Debian/Ubuntu), or allow a download from the Hugging Face Hub ({HUB_REPO}; unset HF_HUB_OFFLINE), "
              f"or set {DIR_ENV} to a folder holding train-images-idx3-ubyte[.gz] and the three other IDX files")


class FashionMNISTMissing(Exception):
    """Neither source is reachable, or a source's bytes are not the pinned ones (the message says which)."""


def _read_maybe_gz(folder: Path, name: str) -> bytes | None:
    for path, opener in ((folder / f"{name}.gz", gzip.open), (folder / name, open)):
        if path.is_file():
            with opener(path, "rb") as fh:
                return fh.read()
    return None


def _parse_idx(raw: bytes, where: str) -> np.ndarray:
    """An IDX buffer (magic 0x00 0x00 0x08 ndim, big-endian int32 dims, then uint8 data)."""
    if len(raw) < 4 or raw[:3] != b"\x00\x00\x08":
        raise FashionMNISTMissing(f"{where}: not a uint8 IDX file (bad magic number)")
    ndim = raw[3]
    dims = tuple(int(d) for d in np.frombuffer(raw, dtype=">i4", count=ndim, offset=4))
    body = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(dims)):
        raise FashionMNISTMissing(f"{where}: header says {dims} but holds {body.size} bytes")
    return body.reshape(dims)


def from_idx_folder(folder: Path) -> dict[str, ArraySet]:
    """{'train', 'test'} from the four IDX files of `folder`, each checked against RAW_SHA256."""
    raw = {}
    for name, expected in RAW_SHA256.items():
        data = _read_maybe_gz(folder, name)
        if data is None:
            raise FashionMNISTMissing(f"{folder}: {name}[.gz] is missing. {HOW_TO_GET}")
        actual = hashlib.sha256(data).hexdigest()
        if actual != expected:
            raise FashionMNISTMissing(f"{folder / name}: decompressed sha256 is {actual}, expected {expected} "
                                      "(not the original Fashion-MNIST bytes)")
        raw[name] = _parse_idx(data, str(folder / name))
    return {split: ArraySet(np.ascontiguousarray(raw[f"{prefix}-images-idx3-ubyte"][:, None]),
                            raw[f"{prefix}-labels-idx1-ubyte"].astype(np.int64))
            for split, prefix in (("train", "train"), ("test", "t10k"))}


def decode_parquet(path: Path) -> ArraySet:
    """The Hub's parquet layout: `image` {bytes: PNG, path}, `label` int; PNGs decoded losslessly to uint8."""
    import pyarrow.parquet as pq
    from PIL import Image

    try:
        table = pq.read_table(path, columns=["image", "label"])
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a broken file
        raise FashionMNISTMissing(f"{path}: not a Fashion-MNIST parquet file ({exc})") from None
    pngs = table.column("image").combine_chunks().field("bytes").to_pylist()
    labels = np.asarray(table.column("label").to_pylist(), dtype=np.int64)
    images = np.empty((len(pngs), 1, 28, 28), dtype=np.uint8)
    for i, png in enumerate(pngs):
        with Image.open(io.BytesIO(png)) as img:
            if img.size != (28, 28) or img.mode != "L":
                raise FashionMNISTMissing(f"{path}: row {i} is a {img.mode} {img.size} image, expected L 28x28")
            images[i, 0] = np.asarray(img, dtype=np.uint8)
    return ArraySet(images, labels)


def from_hub(repo: str | None = None, revision: str | None = None,
             files: dict[str, tuple[str, str]] | None = None) -> dict[str, ArraySet]:
    """{'train', 'test'} from the Hub's parquet files, downloaded pinned (or read from the cache)."""
    from reconbench.core.hub import download_pinned

    repo, revision = repo or HUB_REPO, revision or HUB_REVISION
    return {split: decode_parquet(download_pinned(repo, name, revision=revision, sha256=sha, repo_type="dataset"))
            for split, (name, sha) in (files or HUB_FILES).items()}


def _checked(arrays: dict[str, ArraySet], source: str) -> dict[str, ArraySet]:
    for split, expected in ARRAYS_SHA256.items():
        actual = arrays[split].sha256
        if actual != expected:
            raise FashionMNISTMissing(f"{source}: the decoded {split} arrays hash to {actual}, the pin is {expected}")
    return arrays


def source_folder() -> Path | None:
    """The folder of IDX files to read: $RECONBENCH_FASHION_MNIST_DIR, else Debian's, else None."""
    override = os.environ.get(DIR_ENV)
    if override:
        return Path(override)
    return DEBIAN_DIR if DEBIAN_DIR.is_dir() else None


@lru_cache(maxsize=1)
def fashion_mnist() -> dict[str, ArraySet]:
    """{'train': 60,000, 'test': 10,000} images (N, 1, 28, 28) uint8 with int64 labels, hash-checked."""
    folder = source_folder()
    if folder is not None:
        return _checked(from_idx_folder(folder), str(folder))
    from reconbench.core.hub import HubError

    try:
        return _checked(from_hub(), f"{HUB_REPO}@{HUB_REVISION[:7]}")
    except HubError as exc:
        raise FashionMNISTMissing(f"{HOW_TO_GET} (the Hub download failed: {exc})") from None
