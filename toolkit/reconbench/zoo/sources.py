"""Readers for the original public files of the zoo's datasets, in torchvision's folder layout.

Every reader returns ArraySets (uint8 N x C x H x W, int64 labels) and needs a local copy: this
package never downloads a dataset. Only formats that need no unpickling are read (the toolkit
never unpickles outside data), which is why CIFAR comes from its *binary* distribution
(`cifar-10-binary.tar.gz`), not from the pickled python one that torchvision's class reads.

| dataset | files under --source                                         | preprocessing               |
|---------|--------------------------------------------------------------|-----------------------------|
| MNIST   | MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]  | zero-pad 28x28 -> 32x32     |
| KMNIST  | KMNIST/raw/ (same four idx files)                            | zero-pad 28x28 -> 32x32     |
| CIFAR-10| cifar-10-batches-bin/{data_batch_1..5,test_batch}.bin        | none (32x32)                |
| CIFAR-100| cifar-100-binary/{train,test}.bin (fine labels)             | none (32x32)                |
| CelebA  | celeba/img_align_celeba/*.jpg, celeba/identity_CelebA.txt    | GMI crop 108x108, -> 64x64  |
| FFHQ    | thumbnails128x128/**/*.png                                   | center crop 88, -> 64x64    |

MNIST is padded, not resized: VGG16's five 2x2 pools need 32x32, and a zero border is exact
(no resampler, so the bytes do not depend on a library version). KEDMI resizes to 32 instead.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from reconbench.image.data.arrays import ArraySet
from reconbench.core.io import FileFormatError

# CelebA: the crop of the GMI/KEDMI/PLGMI line. KEDMI, dataloader.py `get_processor`
# (github.com/SCccc21/Knowledge-Enriched-DMI): crop_size = 108, offset_height = (218 - 108) // 2 = 55,
# offset_width = (178 - 108) // 2 = 35, then `transforms.Resize((64, 64))` (PIL bilinear).
# As a PIL box (left, top, right, bottom) on the aligned 178x218 images:
CELEBA_SIZE = (178, 218)
CELEBA_CROP_BOX = (35, 55, 143, 163)
CELEBA_RESIZE = 64
# FFHQ thumbnails: the same line's crop for FFHQ (KEDMI dataloader.py, "dataset ffhq":
# crop_size = 88, offset (128 - 88) // 2 = 20), then 64x64.
FFHQ_SIZE = (128, 128)
FFHQ_CROP_BOX = (20, 20, 108, 108)


def _find(root: Path, candidates: list[str], gz: bool = False) -> Path:
    """The first candidate file that exists under root (also as .gz where the reader takes gzip)."""
    for rel in candidates:
        for name in (rel, rel + ".gz") if gz else (rel,):
            if (root / name).is_file():
                return root / name
    raise FileFormatError(f"{root}: none of {', '.join(candidates)}{' (or .gz)' if gz else ''} found")


def read_idx(path: Path) -> np.ndarray:
    """An IDX file (LeCun's MNIST format): magic 0x0000 + dtype 0x08 (uint8) + ndim, big-endian dims."""
    raw = (gzip.open if path.suffix == ".gz" else open)(path, "rb").read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise FileFormatError(f"{path}: not a uint8 IDX file (bad magic number)")
    ndim = raw[3]
    dims = np.frombuffer(raw, dtype=">i4", count=ndim, offset=4).astype(np.int64)
    body = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(dims)):
        raise FileFormatError(f"{path}: header says {tuple(dims)} but holds {body.size} bytes")
    return body.reshape(tuple(dims))


def load_mnist_like(root: Path, folder: str) -> tuple[ArraySet, ArraySet]:
    """(train, test) of MNIST or KMNIST from torchvision's `<folder>/raw/` layout, padded to 32x32."""
    out = []
    for split in ("train", "t10k"):
        where = [f"{folder}/raw/{split}", f"{folder}/{split}", split]
        images = read_idx(_find(root, [w + "-images-idx3-ubyte" for w in where], gz=True))
        labels = read_idx(_find(root, [w + "-labels-idx1-ubyte" for w in where], gz=True))
        if images.ndim != 3 or images.shape[1:] != (28, 28) or labels.shape != images.shape[:1]:
            raise FileFormatError(f"{root}/{folder}: {split} images {images.shape} / labels {labels.shape} are not N x 28 x 28 / N")
        padded = np.pad(images, ((0, 0), (2, 2), (2, 2)))[:, None]
        out.append(ArraySet(np.ascontiguousarray(padded), labels.astype(np.int64)))
    return out[0], out[1]


def _read_cifar_bin(path: Path, label_bytes: int) -> ArraySet:
    record = label_bytes + 3 * 32 * 32
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size == 0 or raw.size % record:
        raise FileFormatError(f"{path}: size {raw.size} is not a multiple of the {record}-byte CIFAR record")
    rows = raw.reshape(-1, record)
    # The last label byte is the class (CIFAR-100 stores coarse, then fine).
    return ArraySet(np.ascontiguousarray(rows[:, label_bytes:].reshape(-1, 3, 32, 32)),
                    rows[:, label_bytes - 1].astype(np.int64))


def load_cifar_binary(root: Path, which: str) -> tuple[ArraySet, ArraySet]:
    """(train, test) of CIFAR-10 (`which="cifar10"`) or CIFAR-100 (fine labels) from the binary version."""
    if which == "cifar10":
        folder, label_bytes = "cifar-10-batches-bin", 1
        train_files = [f"data_batch_{i}.bin" for i in range(1, 6)]
        test_file = "test_batch.bin"
    else:
        folder, label_bytes, train_files, test_file = "cifar-100-binary", 2, ["train.bin"], "test.bin"
    parts = [_read_cifar_bin(_find(root, [f"{folder}/{f}", f]), label_bytes) for f in train_files]
    train = ArraySet(np.concatenate([p.images for p in parts]), np.concatenate([p.labels for p in parts]))
    return train, _read_cifar_bin(_find(root, [f"{folder}/{test_file}", test_file]), label_bytes)


def _crop_resize(path: Path, size: tuple[int, int], box: tuple[int, int, int, int], out: int) -> np.ndarray:
    from PIL import Image

    try:
        with Image.open(path) as img:
            img = img.convert("RGB")
            if img.size != size:
                raise FileFormatError(f"{path}: image is {img.size[0]}x{img.size[1]}, expected {size[0]}x{size[1]}")
            img = img.crop(box).resize((out, out), Image.Resampling.BILINEAR)
            return np.asarray(img, dtype=np.uint8).transpose(2, 0, 1)
    except OSError as exc:
        raise FileFormatError(f"{path}: cannot decode the image ({exc})") from None


def celeba_identities(identity_file: Path) -> dict[str, int]:
    """file name -> CelebA identity number, from identity_CelebA.txt ("000001.jpg 2880" per line)."""
    out = {}
    for n, line in enumerate(identity_file.read_text().splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            raise FileFormatError(f"{identity_file}:{n}: expected '<file> <identity>', got {line!r}")
        out[parts[0]] = int(parts[1])
    return out


def load_celeba(root: Path, identities: int = 1000) -> ArraySet:
    """Every image of the `identities` identities with the most images, labelled 0..identities-1.

    Selection (our rule; the GMI/KEDMI code ships fixed file lists instead): sort identities by
    image count, descending, ties by identity number; labels follow ascending identity number.
    Images are in file-name order.
    """
    base = root / "celeba" if (root / "celeba").is_dir() else root
    ident = celeba_identities(_find(base, ["identity_CelebA.txt"]))
    counts: dict[int, int] = {}
    for who in ident.values():
        counts[who] = counts.get(who, 0) + 1
    if len(counts) < identities:
        raise FileFormatError(f"{base}/identity_CelebA.txt: only {len(counts)} identities, {identities} needed")
    chosen = sorted(sorted(counts, key=lambda who: (-counts[who], who))[:identities])
    label_of = {who: i for i, who in enumerate(chosen)}
    files = sorted(f for f, who in ident.items() if who in label_of)
    folder = base / "img_align_celeba"
    images = np.stack([_crop_resize(folder / f, CELEBA_SIZE, CELEBA_CROP_BOX, CELEBA_RESIZE) for f in files])
    return ArraySet(images, np.array([label_of[ident[f]] for f in files], dtype=np.int64))


def load_ffhq(root: Path, count: int, seed: int) -> ArraySet:
    """`count` FFHQ thumbnails (a seeded choice, in file-name order), cropped to 88 and resized to 64.

    FFHQ has no labels: every label is -1 (the attacker gets images only).
    """
    folder = root / "thumbnails128x128" if (root / "thumbnails128x128").is_dir() else root
    files = sorted(folder.rglob("*.png"))
    if len(files) < count:
        raise FileFormatError(f"{folder}: {len(files)} PNG thumbnails found, {count} needed")
    pick = np.sort(np.random.default_rng(seed).choice(len(files), size=count, replace=False))
    images = np.stack([_crop_resize(files[i], FFHQ_SIZE, FFHQ_CROP_BOX, CELEBA_RESIZE) for i in pick])
    return ArraySet(images, np.full(count, -1, dtype=np.int64))
