"""Dataset preparation: nested, class-balanced, disjoint, hash-pinned splits, the same bytes every
time; and the readers of the original file formats, on small synthetic files in those formats."""

import gzip
import json

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from reconbench.cli import app
from reconbench.core.io import sha256_file
from reconbench.core.io import FileFormatError, load_arrays
from reconbench.zoo import ZooError
from reconbench.zoo.datasets import DATASETS, DatasetSpec
from reconbench.zoo.prepare import cut_splits, load_split, prepare_dataset, read_manifest, stratified_order
from reconbench.zoo.sources import (CELEBA_CROP_BOX, load_celeba, load_cifar_binary, load_ffhq, load_mnist_like,
                                    read_idx)

runner = CliRunner()


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    out = tmp_path_factory.mktemp("prep") / "digits"
    return out, prepare_dataset("digits", out)


def index(folder, split):
    return load_arrays(folder / f"{split}.safetensors")["index"]


def test_target_sets_are_nested_class_balanced_and_disjoint_from_other_splits(digits):
    folder, manifest = digits
    sets = {n: set(index(folder, f"target-n{n}")) for n in (50, 100, 200)}
    assert sets[50] < sets[100] < sets[200]
    for n in (50, 100, 200):
        assert np.bincount(load_split(folder, f"target-n{n}").labels).tolist() == [n // 10] * 10
    others = {s: set(index(folder, s)) for s in ("update", "aux_same", "test")}
    assert len(others["update"]) == 50 and len(others["test"]) == 300 and len(others["aux_same"]) == 1247
    everything = [sets[200], *others.values()]
    assert sum(map(len, everything)) == len(set().union(*everything)) == 1797  # disjoint, and all used
    assert np.bincount(load_split(folder, "test").labels).tolist() == [30] * 10


def test_manifest_pins_every_file_and_the_content(digits):
    folder, manifest = digits
    assert read_manifest(folder) == manifest
    for split, entry in manifest["splits"].items():
        assert sha256_file(folder / entry["file"]) == entry["sha256"]
        assert load_split(folder, split).sha256 == entry["content_sha256"]
    assert manifest["sizes"] == [50, 100, 200] and manifest["licence_id"] == "cc-by-4.0"


def test_preparing_twice_gives_the_same_bytes(digits, tmp_path):
    folder, _ = digits
    again = tmp_path / "again"
    res = runner.invoke(app, ["data", "prepare", "digits", "--out", str(again)])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in again.iterdir()) == sorted(p.name for p in folder.iterdir())
    for p in folder.iterdir():
        assert (again / p.name).read_bytes() == p.read_bytes(), p.name


def test_refuses_existing_output_and_changed_files(digits, tmp_path):
    folder, _ = digits
    res = runner.invoke(app, ["data", "prepare", "digits", "--out", str(folder)])
    assert res.exit_code == 1 and "already exists" in res.output
    copy = tmp_path / "copy"
    copy.mkdir()
    for p in folder.iterdir():
        (copy / p.name).write_bytes(p.read_bytes())
    data = bytearray((copy / "test.safetensors").read_bytes())
    data[-1] ^= 1
    (copy / "test.safetensors").write_bytes(bytes(data))
    with pytest.raises(FileFormatError, match="test.safetensors: sha256 is"):
        load_split(copy, "test")
    res = runner.invoke(app, ["data", "prepare", "cifar10", "--out", str(tmp_path / "c")])
    assert res.exit_code == 1 and "--source" in res.output and not (tmp_path / "c").exists()


def test_stratified_order_is_round_robin():
    labels = np.array([0] * 5 + [1] * 3 + [2] * 4)
    order = stratified_order(labels, seed=1)
    assert sorted(order) == list(range(12))
    rounds = [sorted(labels[order[i:i + 3]]) for i in (0, 3, 6)]
    assert rounds == [[0, 1, 2]] * 3  # one of each class per round while every class has images left
    assert (order == stratified_order(labels, seed=1)).all() and not (order == stratified_order(labels, seed=2)).all()


def test_too_small_a_pool_is_refused():
    spec = DATASETS["digits"]
    from reconbench.image.data.arrays import ArraySet

    pool = ArraySet(np.zeros((520, 1, 8, 8), np.uint8), np.arange(520, dtype=np.int64) % 10)
    with pytest.raises(ZooError, match="too few for the update set"):
        cut_splits(spec, pool, None)


# ---------------------------------------------------------------- original formats, synthetic files

def write_idx(path, array, gz=False):
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    data = header + array.astype(np.uint8).tobytes()
    (gzip.open if gz else open)(path, "wb").write(data)


def make_mnist(root, folder, n_train, n_test, gz=False):
    raw = root / folder / "raw"
    raw.mkdir(parents=True)
    rng = np.random.default_rng(0)
    suffix = ".gz" if gz else ""
    for split, n in (("train", n_train), ("t10k", n_test)):
        write_idx(raw / f"{split}-images-idx3-ubyte{suffix}", rng.integers(1, 256, (n, 28, 28)), gz)
        write_idx(raw / f"{split}-labels-idx1-ubyte{suffix}", np.arange(n) % 10, gz)


def test_mnist_idx_reader_pads_to_32(tmp_path):
    make_mnist(tmp_path, "MNIST", 30, 10, gz=True)
    train, test = load_mnist_like(tmp_path, "MNIST")
    assert train.images.shape == (30, 1, 32, 32) and test.images.shape == (10, 1, 32, 32)
    assert (train.images[:, :, :2] == 0).all() and (train.images[:, :, :, -2:] == 0).all()
    assert (train.images[:, :, 2:30, 2:30] > 0).all() and train.labels.tolist() == [i % 10 for i in range(30)]
    (tmp_path / "bad").write_bytes(b"\x00\x00\x0d\x01")
    with pytest.raises(FileFormatError, match="bad magic"):
        read_idx(tmp_path / "bad")


def test_mnist_prepare_end_to_end_with_kmnist_as_similar_data(tmp_path):
    make_mnist(tmp_path, "MNIST", 20_400, 50)
    make_mnist(tmp_path, "KMNIST", 40, 5)
    manifest = prepare_dataset("mnist", tmp_path / "out", tmp_path)
    s = manifest["splits"]
    assert s["target-n100"]["count"] == 100 and s["target-n20000"]["count"] == 20_000
    assert s["update"]["count"] == 100 and s["aux_same"]["count"] == 300 and s["test"]["count"] == 50
    assert s["aux_similar"]["count"] == 40 and manifest["similar"] == "kmnist"
    assert load_split(tmp_path / "out", "aux_similar").images.shape == (40, 1, 32, 32)


def test_cifar_binary_reader(tmp_path):
    rng = np.random.default_rng(0)
    folder = tmp_path / "cifar-10-batches-bin"
    folder.mkdir()
    rows = {}
    for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
        rows[name] = rng.integers(0, 256, (4, 1 + 3072)).astype(np.uint8)
        rows[name][:, 0] %= 10
        rows[name].tofile(folder / name)
    train, test = load_cifar_binary(tmp_path, "cifar10")
    assert train.images.shape == (20, 3, 32, 32) and test.labels.tolist() == rows["test_batch.bin"][:, 0].tolist()
    assert (test.images[1, 0].ravel() == rows["test_batch.bin"][1, 1:1025]).all()  # red plane first, row-major
    folder = tmp_path / "cifar-100-binary"
    folder.mkdir()
    for name in ("train.bin", "test.bin"):
        r = rng.integers(0, 100, (3, 2 + 3072)).astype(np.uint8)
        r.tofile(folder / name)
    train100, _ = load_cifar_binary(tmp_path, "cifar100")
    assert train100.labels.tolist() == np.fromfile(folder / "train.bin", np.uint8).reshape(3, -1)[:, 1].tolist()
    (folder / "test.bin").write_bytes(b"123")
    with pytest.raises(FileFormatError, match="not a multiple"):
        load_cifar_binary(tmp_path, "cifar100")


def test_celeba_reader_takes_the_gmi_crop_and_the_largest_identities(tmp_path):
    base = tmp_path / "celeba"
    (base / "img_align_celeba").mkdir(parents=True)
    left, top, right, bottom = CELEBA_CROP_BOX
    assert (right - left, bottom - top) == (108, 108) and (left, top) == ((178 - 108) // 2, (218 - 108) // 2)
    lines = []
    for i, identity in enumerate([7, 7, 7, 3, 3, 9, 5, 5]):  # counts: 7 -> 3, 3 -> 2, 5 -> 2, 9 -> 1
        img = np.zeros((218, 178, 3), np.uint8)
        img[top:bottom, left:right] = (10 * i, 100, 200)
        name = f"{i + 1:06d}.png"  # lossless here; the real files are JPEG, read by the same code
        Image.fromarray(img).save(base / "img_align_celeba" / name)
        lines.append(f"{name} {identity}")
    (base / "identity_CelebA.txt").write_text("\n".join(lines) + "\n")
    faces = load_celeba(tmp_path, identities=2)  # 7 (3 images) and, of the tied 3 and 5, identity 3
    assert faces.images.shape == (5, 3, 64, 64)
    assert faces.labels.tolist() == [1, 1, 1, 0, 0]  # labels follow identity numbers: 3 -> 0, 7 -> 1
    assert (faces.images[0, 1] == 100).all() and (faces.images[4, 0] == 40).all()  # only the crop survives
    Image.fromarray(np.zeros((10, 10, 3), np.uint8)).save(base / "img_align_celeba" / "000001.png")
    with pytest.raises(FileFormatError, match="000001.png: image is 10x10, expected 178x218"):
        load_celeba(tmp_path, identities=2)


def test_ffhq_reader_crops_88_and_has_no_labels(tmp_path):
    folder = tmp_path / "thumbnails128x128" / "00000"
    folder.mkdir(parents=True)
    for i in range(5):
        img = np.zeros((128, 128, 3), np.uint8)
        img[20:108, 20:108] = 50 + i
        Image.fromarray(img).save(folder / f"{i:05d}.png")
    faces = load_ffhq(tmp_path, count=3, seed=0)
    assert faces.images.shape == (3, 3, 64, 64) and (faces.labels == -1).all()
    assert all(len(np.unique(im)) == 1 for im in faces.images)  # the border is cropped away
    with pytest.raises(FileFormatError, match="5 PNG thumbnails found, 6 needed"):
        load_ffhq(tmp_path, count=6, seed=0)


def test_every_sok_dataset_names_its_similar_data_and_licence():
    assert {n: DATASETS[n].similar for n in ("celeba", "cifar10", "mnist")} == {
        "celeba": "ffhq", "cifar10": "cifar100", "mnist": "kmnist"}
    for spec in DATASETS.values():
        assert isinstance(spec, DatasetSpec) and spec.licence and spec.licence_id
        assert max(spec.sizes) + spec.update_size <= 60_000
    assert DATASETS["celeba"].sizes == (1000, 2000, 5000, 10000, 15000, 20000)
    assert DATASETS["cifar10"].sizes[0] == 100 and DATASETS["mnist"].sizes[-1] == 20000
    assert json.dumps(DATASETS["celeba"].input_shape) == "[3, 64, 64]"
