"""Cut a dataset's splits deterministically and write them as safetensors plus a manifest.

One seeded, class-stratified ordering of the pool decides everything:

    order = round-robin over the classes (a fixed, seeded class order), each class's images in a
            seeded random order: one image of every class, then a second of every class, ...
    [test block, only where the source has no test split] [target block: max size] [update] [aux_same]

The target set of size n is the first n images of the target block, so the sets are nested
(1k inside 2k inside 5k ...), as the SoK's GPT-4o protocol needs (SoK §6.1: one target appears in
all six training sets), and class-balanced: on CelebA the 1k set is one image per identity, which
is what the SoK's 100% coverage at 1k implies. Every split is disjoint from every other; within a
split images are in source order, so a split's hash does not depend on the ordering.

Output folder (`manifest.json` lists each file's sha256 and content hash):
    target-n<size>.safetensors  update.safetensors  aux_same.safetensors  test.safetensors
    aux_similar.safetensors (where the dataset has one)  manifest.json
Each file holds `images` uint8 (N, C, H, W), `labels` int64 and `index` int64 (position in the
source, for provenance). No safetensors metadata: its key order is not stable between runs.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

import numpy as np

from reconbench.image.data.arrays import ArraySet
from reconbench.core.io import FileFormatError, atomic_dir, load_arrays, read_json, save_arrays, sha256_file
from reconbench.zoo import ZooError
from reconbench.zoo.datasets import DatasetSpec, get_dataset

MANIFEST = "manifest.json"
FORMAT = "reconbench-zoo-data/1"
SPLIT_SEED = 20250609  # arXiv date of the SoK, as for the embedded digits track; any fixed value would do
SIMILAR_SEED = 20250610  # which similar-distribution images are kept when there are more than aux_max


def split_file(name: str) -> str:
    return f"{name}.safetensors"


def target_split(size: int) -> str:
    return f"target-n{size}"


def stratified_order(labels: np.ndarray, seed: int) -> np.ndarray:
    """Round-robin over classes in a seeded class order; each class in a seeded random order."""
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    class_rank = np.empty(int(classes.max()) + 1, dtype=np.int64)
    class_rank[classes] = rng.permutation(len(classes))
    within = np.empty(len(labels), dtype=np.int64)  # how many of its class come before it
    for c in classes:
        members = np.flatnonzero(labels == c)
        within[rng.permutation(members)] = np.arange(len(members))
    return np.lexsort((class_rank[labels], within))  # primary key: round; then class order


def cut_splits(spec: DatasetSpec, pool: ArraySet, test: ArraySet | None, seed: int = SPLIT_SEED) -> dict[str, tuple[ArraySet, np.ndarray]]:
    """split name -> (arrays, source index). `test` None: hold test_per_class per class out of the pool."""
    order = stratified_order(pool.labels, seed)
    pos = 0
    splits: dict[str, tuple[ArraySet, np.ndarray]] = {}

    def take(count: int, what: str) -> np.ndarray:
        nonlocal pos
        block = order[pos:pos + count]
        if len(block) < count:
            raise ZooError(f"dataset '{spec.name}': {len(pool)} images are too few for the {what} "
                           f"({count} needed after the {pos} already used)")
        pos += count
        return block

    if test is None:
        idx = np.sort(take(spec.test_per_class * spec.num_classes, "test split"))
        splits["test"] = (pool.subset(idx), idx)
    else:
        splits["test"] = (test, np.arange(len(test), dtype=np.int64))
    target_block = take(max(spec.sizes), "largest target set")
    for size in sorted(spec.sizes):
        idx = np.sort(target_block[:size])
        splits[target_split(size)] = (pool.subset(idx), idx)
    idx = np.sort(take(spec.update_size, "update set"))
    splits["update"] = (pool.subset(idx), idx)
    idx = np.sort(order[pos:pos + spec.aux_max])
    if len(idx) == 0:
        raise ZooError(f"dataset '{spec.name}': no image left for the auxiliary split")
    splits["aux_same"] = (pool.subset(idx), idx)
    return splits


def cap_similar(similar: ArraySet, limit: int) -> tuple[ArraySet, np.ndarray]:
    if len(similar) <= limit:
        return similar, np.arange(len(similar), dtype=np.int64)
    idx = np.sort(np.random.default_rng(SIMILAR_SEED).choice(len(similar), size=limit, replace=False))
    return similar.subset(idx), idx


def _versions() -> dict[str, str]:
    import PIL

    return {"python": platform.python_version(), "numpy": np.__version__, "pillow": PIL.__version__}


def prepare_dataset(name: str, out: Path, source: Path | None = None, *, command: str | None = None) -> dict:
    """Build every split of dataset `name` into the new folder `out`; returns the manifest."""
    spec = get_dataset(name)
    pool, test = spec.load(source)
    splits = cut_splits(spec, pool, test)
    if spec.similar_loader is not None:
        splits["aux_similar"] = cap_similar(spec.similar_loader(source, spec.aux_max), spec.aux_max)
    for split, (arrays, _) in splits.items():
        if tuple(arrays.images.shape[1:]) != spec.input_shape:
            raise ZooError(f"dataset '{name}': split {split} has images {arrays.images.shape[1:]}, expected {spec.input_shape}")
    manifest = {
        "format": FORMAT,
        "dataset": name,
        "title": spec.title,
        "num_classes": spec.num_classes,
        "input_shape": list(spec.input_shape),
        "sizes": sorted(spec.sizes),
        "update_size": spec.update_size,
        "split_seed": SPLIT_SEED,
        "similar": spec.similar,
        "licence": spec.licence,
        "licence_id": spec.licence_id,
        "recipe": command or f"recon-submit data prepare {name}" + (" --source DIR" if source else ""),
        "versions": _versions(),
        "splits": {},
    }
    with atomic_dir(Path(out)) as tmp:
        for split, (arrays, index) in splits.items():
            path = tmp / split_file(split)
            save_arrays(path, {"images": arrays.images, "labels": arrays.labels, "index": index.astype(np.int64)})
            manifest["splits"][split] = {
                "file": path.name,
                "sha256": sha256_file(path),
                "content_sha256": arrays.sha256,
                "count": len(arrays),
                "classes": int(len(np.unique(arrays.labels))),
            }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


# ---------------------------------------------------------------- reading a prepared folder

def read_manifest(data_dir: Path) -> dict:
    path = Path(data_dir) / MANIFEST
    manifest = read_json(path, missing="no manifest; run `recon-submit data prepare` first",
                         invalid="not a valid manifest")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or not isinstance(manifest.get("splits"), dict):
        raise FileFormatError(f"{path}: not a {FORMAT} manifest")
    return manifest


def manifest_sha256(data_dir: Path) -> str:
    return sha256_file(Path(data_dir) / MANIFEST)


def split_entry(data_dir: Path, manifest: dict, split: str) -> tuple[Path, dict]:
    """(path, manifest entry) of a split of a prepared folder (image or text zoo)."""
    entry = manifest["splits"].get(split)
    if entry is None:
        raise FileFormatError(f"{Path(data_dir) / MANIFEST}: no split '{split}' (has {', '.join(sorted(manifest['splits']))})")
    return Path(data_dir) / entry["file"], entry


def load_split(data_dir: Path, split: str, manifest: dict | None = None) -> ArraySet:
    """One split of a prepared folder, checked against the manifest's file sha256."""
    path, entry = split_entry(data_dir, manifest or read_manifest(data_dir), split)
    if not path.is_file():
        raise FileFormatError(f"{path}: listed in the manifest but missing")
    actual = sha256_file(path)
    if actual != entry["sha256"]:
        raise FileFormatError(f"{path}: sha256 is {actual}, the manifest says {entry['sha256']}")
    arrays = load_arrays(path, required={"images": np.uint8, "labels": np.int64})
    return ArraySet(arrays["images"], arrays["labels"])
