"""The text zoo: prepare a grid dataset's splits from its Hub source.

    recon-submit data prepare sst2            -> zoo-build/data/sst2/   (text/zoo.py: prepare_text_dataset)
    recon-submit targets train sst2-n1000     -> zoo-build/targets/sst2-n1000/  (text/finetune.py)
    recon-submit hub publish sst2-n1000 --org ORG   (text/publish.py: publish_text_track)

Prepare reads the source's parquet files (downloaded from the dataset repo at a commit, or from a
local copy with --source), keeps the text column, strips each text, drops empty and repeated
texts (and test texts that also occur in the pool), and cuts the splits with one seeded
permutation (text/grid.py `derivation` says it in a sentence). Ids are `<dataset>-<split>-<row>`,
the row of the text in its parquet file. Output: target-n<size>.jsonl (nested), aux.jsonl,
test.jsonl in the items.jsonl_bytes form, and manifest.json (source commit and file sha256, every
split's sha256 = its TextSet.sha256, counts, the command).
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

import numpy as np

from reconbench.core.io import FileFormatError, atomic_dir, read_format_json, sha256_file
from reconbench.text.grid import TextDatasetSpec, get_text_dataset
from reconbench.text.items import TextSet, jsonl_bytes
from reconbench.zoo import ZooError

FORMAT = "reconbench-text-data/1"
MANIFEST = "manifest.json"
SPLIT_SEED = 20250609  # as the image zoo's splits (zoo/prepare.py): the SoK's arXiv date


def target_split(size: int) -> str:
    return f"target-n{size}"


# ---------------------------------------------------------------- source

def read_parquet_texts(path: Path, column: str) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path, columns=[column])
    except (OSError, pa.ArrowException, KeyError) as exc:
        raise FileFormatError(f"{path}: cannot read the text column '{column}' ({type(exc).__name__}: {exc})") from None
    col = table.column(column)
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        raise FileFormatError(f"{path}: column '{column}' holds {col.type}, not text")
    return [t if t is not None else "" for t in col.to_pylist()]


def fetch_source(spec: TextDatasetSpec, source: Path | None, revision: str | None) -> tuple[dict[str, Path], dict]:
    """Local paths of the pool and test parquet files, and the provenance to record."""
    files = [spec.pool_file, spec.test_file]
    if source is not None:
        paths = {f: Path(source) / f for f in files}
        for p in paths.values():
            if not p.is_file():
                raise FileFormatError(f"{p}: not found (--source must hold {', '.join(files)} as in {spec.repo})")
        return paths, {"repo": spec.repo, "revision": None, "local_copy": True,
                       "files": {f: sha256_file(p) for f, p in paths.items()}}
    from reconbench.core.hub import download_at_commit, resolve_commit

    commit = resolve_commit(spec.repo, revision=revision or spec.revision or "main", repo_type="dataset")
    paths, hashes = {}, {}
    for f in files:
        paths[f], hashes[f] = download_at_commit(spec.repo, f, revision=commit, sha256=spec.files_sha256.get(f),
                                                 repo_type="dataset")
    return paths, {"repo": spec.repo, "revision": commit, "local_copy": False, "files": hashes}


# ---------------------------------------------------------------- splits

def _clean(texts: list[str], exclude: set[str] = frozenset()) -> list[int]:
    """Rows to keep: stripped text non-empty, first occurrence, not in `exclude`."""
    seen, keep = set(exclude), []
    for i, t in enumerate(texts):
        t = t.strip()
        if t and t not in seen:
            seen.add(t)
            keep.append(i)
    return keep


def cut_text_splits(spec: TextDatasetSpec, pool: list[str], test: list[str], seed: int = SPLIT_SEED) -> dict[str, TextSet]:
    rows = _clean(pool)
    need = max(spec.sizes) + 1
    if len(rows) < need:
        raise ZooError(f"dataset '{spec.name}': {len(rows):,} usable texts in {spec.pool_file}, {need:,} needed "
                       f"(the largest target set and at least one aux text)")
    rng = np.random.default_rng(seed)
    order = [rows[i] for i in rng.permutation(len(rows))]
    block = order[:max(spec.sizes)]

    def textset(name: str, idx, texts: list[str], split: str) -> TextSet:
        return TextSet.of(name, [(f"{spec.name}-{split}-{i}", texts[i].strip()) for i in sorted(idx)])

    out = {target_split(n): textset("target", block[:n], pool, spec.pool_split) for n in sorted(spec.sizes)}
    out["aux"] = textset("aux", order[len(block):len(block) + spec.aux_max], pool, spec.pool_split)
    test_rows = _clean(test, exclude={pool[i].strip() for i in rows})
    if not test_rows:
        raise ZooError(f"dataset '{spec.name}': no usable test text in {spec.test_file}")
    pick = rng.choice(len(test_rows), size=min(spec.test_max, len(test_rows)), replace=False)
    out["test"] = textset("test", [test_rows[i] for i in pick], test, spec.test_split)
    return out


def prepare_text_dataset(name: str, out: Path, source: Path | None = None, *, revision: str | None = None,
                         command: str | None = None) -> dict:
    """Build every split of text dataset `name` into the new folder `out`; returns the manifest."""
    import pyarrow

    spec = get_text_dataset(name)
    paths, provenance = fetch_source(spec, source, revision)
    splits = cut_text_splits(spec, read_parquet_texts(paths[spec.pool_file], spec.column),
                             read_parquet_texts(paths[spec.test_file], spec.column))
    manifest = {
        "format": FORMAT, "dataset": name, "title": spec.title, "column": spec.column, "source": provenance,
        "pool_file": spec.pool_file, "test_file": spec.test_file, "sizes": sorted(spec.sizes),
        "aux_max": spec.aux_max, "test_max": spec.test_max, "split_seed": SPLIT_SEED, "licence": spec.licence,
        "recipe": command or f"recon-submit data prepare {name}" + (" --source DIR" if source else ""),
        "versions": {"python": platform.python_version(), "numpy": np.__version__, "pyarrow": pyarrow.__version__},
        "splits": {},
    }
    with atomic_dir(Path(out)) as tmp:
        for split, items in splits.items():
            data = jsonl_bytes(items.items)
            (tmp / f"{split}.jsonl").write_bytes(data)
            manifest["splits"][split] = {"file": f"{split}.jsonl", "sha256": items.sha256, "count": len(items)}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


def read_text_manifest(data_dir: Path) -> dict:
    path = Path(data_dir) / MANIFEST
    manifest = read_format_json(path, FORMAT, missing="no manifest; run `recon-submit data prepare` first",
                                invalid="not a valid manifest")
    if not isinstance(manifest.get("splits"), dict):
        raise FileFormatError(f"{path}: not a {FORMAT} manifest")
    return manifest


def load_prepared_split(data_dir: Path, split: str, manifest: dict | None = None) -> TextSet:
    """One split of a prepared folder, read strictly and checked against the manifest's sha256."""
    from reconbench.text.jsonl import TextFileError, read_jsonl

    from reconbench.zoo.prepare import split_entry

    path, entry = split_entry(data_dir, manifest or read_text_manifest(data_dir), split)
    try:
        items = read_jsonl(path)
    except TextFileError as exc:
        raise FileFormatError(str(exc)) from None
    if items.sha256 != entry["sha256"]:
        raise FileFormatError(f"{path}: sha256 is {items.sha256}, the manifest says {entry['sha256']}")
    return TextSet(split, items.items)
