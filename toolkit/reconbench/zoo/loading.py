"""Pinned downloads of a published zoo track (tracks.py calls these for `"kind": "hub"` sources).

Each file is fetched through reconbench.core.hub at the commit the registry pins and checked against
its sha256 before use; once cached, nothing touches the network again. Only the parts asked for
are fetched: the knowledge view asks for the model and the auxiliary split its scenario allows,
scoring asks for the target (or update) set; the target set is never fetched for an attack.

File names inside the repos (written by `recon-submit hub publish`):
    model repo  <org>/<track id>:            model.safetensors, config.json, README.md
    data repo   <org>/reconbench-<dataset>:  target-n<size>.safetensors, update.safetensors,
                aux_same.safetensors, aux_similar.safetensors, test.safetensors, holdout-n<size>.safetensors,
                update_holdout.safetensors, manifest.json, README.md
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import numpy as np

from reconbench.image.data.arrays import ArraySet, TrackSplits
from reconbench.core.hub import download_pinned
from reconbench.core.io import load_arrays
from reconbench.core.tracks import HubSource, Track, TrackError

MODEL_FILE = "model.safetensors"
PARTS = ("target", "update", "aux_same", "aux_similar", "test", "holdout", "update_holdout")


def part_file(track: Track, part: str) -> str:
    """The data repo's file name of a split of this track."""
    if part in ("target", "holdout"):  # one data repo serves every target size: both carry the size
        return f"{part}-n{track.train_size}.safetensors"
    if part not in PARTS:
        raise TrackError(f"track '{track.id}': unknown split '{part}' (known: {', '.join(PARTS)})")
    return f"{part}.safetensors"


def _source(track: Track) -> HubSource:
    if not isinstance(track.source, HubSource):
        raise TrackError(f"track '{track.id}' is not a Hub track")
    return track.source


def _pinned(track: Track, filename: str) -> str:
    sha = _source(track).files.get(filename)
    if not sha:
        raise TrackError(f"track '{track.id}': the registry pins no sha256 for '{filename}'")
    return sha


def download_model_file(track: Track) -> Path:
    src = _source(track)
    return download_pinned(src.model_repo, MODEL_FILE, revision=src.model_revision,
                           sha256=_pinned(track, MODEL_FILE), repo_type="model")


def download_split(track: Track, part: str) -> ArraySet:
    src, name = _source(track), part_file(track, part)
    path = download_pinned(src.data_repo, name, revision=src.data_revision, sha256=_pinned(track, name),
                           repo_type="dataset")
    arrays = load_arrays(path, required={"images": np.uint8, "labels": np.int64})
    return ArraySet(arrays["images"], arrays["labels"])


def load_hub_splits(track: Track, parts: Collection[str] | None = None) -> TrackSplits:
    """The splits named in `parts` (all when None), downloaded and hash-checked; the others are None.

    aux_similar, holdout and update_holdout are None as well where the track has none (no pinned file)."""
    wanted = set(PARTS if parts is None else parts)
    unknown = wanted - set(PARTS)
    if unknown:
        raise TrackError(f"track '{track.id}': unknown split(s) {', '.join(sorted(unknown))}")
    for optional in ("aux_similar", "holdout", "update_holdout"):  # tracks published before the holdout have none
        if optional in wanted and part_file(track, optional) not in _source(track).files:
            wanted.discard(optional)
    got = {part: download_split(track, part) for part in PARTS if part in wanted}
    return TrackSplits(target=got.get("target"), update=got.get("update"), aux_same=got.get("aux_same"),
                       test=got.get("test"), aux_similar=got.get("aux_similar"), holdout=got.get("holdout"),
                       update_holdout=got.get("update_holdout"))
