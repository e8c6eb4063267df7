"""The tracks registry: which dataset, architecture and pinned files make up each track.

The registry is `registry/tracks.json` in the package. A track's target model and target set are
pinned by sha256 (and, for Hub tracks, by repository revision); loading checks those hashes, so
every contributor scores against the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Collection
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from reconbench.scenario import Scenario

if TYPE_CHECKING:  # the registry itself stays free of torch: listing tracks must start fast
    import torch
    from torch import nn

    from reconbench.data.arrays import TrackSplits

REGISTRY_ENV = "RECONBENCH_REGISTRY"  # a registry file to use instead of the packaged one
ZOO_FILE = "zoo.json"  # beside tracks.json: the target-model zoo grid (reconbench.zoo.grid)


class TrackError(Exception):
    """A track that is unknown, not yet published, or whose pinned files do not check out."""


class HubSource(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["hub"] = "hub"
    model_repo: str
    model_revision: str
    data_repo: str
    data_revision: str
    files: dict[str, str] = Field(default_factory=dict, description="file name -> sha256")


class EmbeddedSource(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["embedded"] = "embedded"
    model_file: str  # inside the package's data folder


class NearCopy(BaseModel):
    """Near-copy thresholds calibrated from the track's public data (reconbench.submissions.nearcopy)."""

    model_config = ConfigDict(extra="forbid")

    pixel_mse: float
    structure: float
    percentile: float
    pool_sha256: str
    derivation: str


class EvaluationModel(BaseModel):
    """The track's evaluation classifier (acc_top1, acc_top5, knn_dist; metrics/classifier.py):
    another architecture than the target, trained on data of the same distribution."""

    model_config = ConfigDict(extra="forbid")

    architecture: str
    arch_kwargs: dict[str, int] = Field(default_factory=dict)
    file: str  # embedded tracks: inside the package's data folder; Hub tracks: in the model repository
    sha256: str
    trained_on: str
    accuracy: dict[str, float] = Field(default_factory=dict, description="split -> accuracy")
    recipe: str


class Track(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    title: str
    dataset: str
    architecture: str
    arch_kwargs: dict[str, int] = Field(default_factory=dict)
    variant: str | None = None
    input_shape: tuple[int, int, int]
    num_classes: int
    train_size: int
    update_size: int | None = None
    status: Literal["embedded", "published", "unpublished"]
    source: EmbeddedSource | HubSource | None = None
    target_model_sha256: str | None = None
    target_set_sha256: str | None = None
    update_set_sha256: str | None = None
    scenarios: list[str]
    train_accuracy: float | None = None
    test_accuracy: float | None = None
    memorization: float | None = None
    recipe: str | None = None
    near_copy: NearCopy | None = None


    evaluation_model: EvaluationModel | None = None

    def scenario_list(self) -> list[Scenario]:
        return [Scenario.parse(s) for s in self.scenarios]

    def target_size(self, scenario: Scenario) -> int:
        """|D_tar|: the training set (static) or the update set (dynamic, SoK Def. 3.2)."""
        if scenario.training == "dynamic":
            if not self.update_size:
                raise TrackError(f"track '{self.id}' has no update set, so no dynamic scenario")
            return self.update_size
        return self.train_size

    def require_runnable(self) -> None:
        if self.status == "unpublished":
            raise TrackError(
                f"track '{self.id}' is not published yet: its target model has not been pinned in the "
                "registry (maintainers: see `recon-submit hub publish`)"
            )

    def offers(self, scenario: Scenario) -> bool:
        return str(scenario) in self.scenarios


class Registry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1]
    tracks: list[Track]


def registry_path() -> Path:
    import os

    override = os.environ.get(REGISTRY_ENV)
    if override:
        return Path(override)
    return Path(str(resources.files("reconbench") / "registry" / "tracks.json"))


@lru_cache(maxsize=4)
def _load_registry(path: str, mtime: float) -> Registry:
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise TrackError(f"{path}: cannot read the tracks registry ({exc})") from None
    return Registry.model_validate(raw)


def load_registry() -> Registry:
    path = registry_path()
    registry = _load_registry(str(path), path.stat().st_mtime if path.exists() else 0.0)
    zoo = path.with_name(ZOO_FILE)
    if os.environ.get(REGISTRY_ENV) or not zoo.exists():  # an override file is the whole registry
        return registry
    # The packaged registry = tracks.json + the generated target-model zoo grid (registry/zoo.json).
    grid = _load_registry(str(zoo), zoo.stat().st_mtime)
    clash = {t.id for t in registry.tracks} & {t.id for t in grid.tracks}
    if clash:
        raise TrackError(f"{zoo}: track id(s) also in {path.name}: {', '.join(sorted(clash))}")
    return Registry(schema_version=1, tracks=registry.tracks + grid.tracks)


def all_tracks() -> list[Track]:
    return load_registry().tracks


def get_track(track_id: str) -> Track:
    for track in all_tracks():
        if track.id == track_id:
            return track
    known = ", ".join(t.id for t in all_tracks())
    raise TrackError(f"unknown track '{track_id}' (known: {known})")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def embedded_file(name: str) -> Path:
    return Path(str(resources.files("reconbench") / "data" / name))


def _check(what: str, path_or_name: str, actual: str | None, expected: str | None) -> None:
    if expected is not None and actual != expected:
        raise TrackError(f"{path_or_name}: {what} sha256 is {actual}, the registry pins {expected}")


def load_splits(track: Track, parts: Collection[str] | None = None) -> TrackSplits:
    """The evaluator's view of the data: all splits, hash-checked. Never handed to an attack whole.

    `parts` (of target, update, aux_same, aux_similar, test): a Hub track downloads only these, the
    others are None (the knowledge view never fetches the target set); embedded tracks return all.
    """
    track.require_runnable()
    if track.source is not None and track.source.kind == "hub":
        from reconbench.zoo.loading import load_hub_splits  # the Hub zoo (issue: target-model zoo)

        splits = load_hub_splits(track, parts)
    elif track.dataset == "sklearn-digits":
        from reconbench.data.digits import digits_splits

        splits = digits_splits()
    elif track.dataset == "sklearn-digits-0v1":
        from reconbench.data.digits import binary_digits_splits

        splits = binary_digits_splits()
    else:
        raise TrackError(f"track '{track.id}': no loader for dataset '{track.dataset}'")
    if splits.target is not None:
        _check("target set", track.id, splits.target.sha256, track.target_set_sha256)
    if splits.update is not None:
        _check("update set", track.id, splits.update.sha256, track.update_set_sha256)
    return splits


def model_file(track: Track) -> Path:
    track.require_runnable()
    if track.source is None:
        raise TrackError(f"track '{track.id}' names no source for its target model")
    if track.source.kind == "embedded":
        path = embedded_file(track.source.model_file)
    else:
        from reconbench.zoo.loading import download_model_file

        path = download_model_file(track)
    if not path.is_file():
        raise TrackError(f"{path}: target model weight file of track '{track.id}' is missing")
    _check("target model", str(path), sha256_bytes(path.read_bytes()), track.target_model_sha256)
    return path


def load_target_model(track: Track, device: str | torch.device = "cpu") -> nn.Module:
    from reconbench.models import load_model

    return load_model(track.architecture, model_file(track), device=device, **track.arch_kwargs)
