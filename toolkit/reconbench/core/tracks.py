"""The tracks registry: which dataset, architecture and pinned files make up each track.

The registry is `registry/tracks.json` in the package. A track's target model and target set are
pinned by sha256 (and, for Hub tracks, by repository revision); reconbench.image.track_files loads them
and checks those hashes, so every contributor scores against the same bytes. This module only
reads the registry (no torch, no Hub): everything that loads files sits below it, not beside it.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from reconbench.core.scenario import DEFAULT_QUERY_BUDGET, Scenario

REGISTRY_ENV = "RECONBENCH_REGISTRY"  # a registry file to use instead of the packaged one
ZOO_FILE = "zoo.json"  # beside tracks.json: the target-model zoo grid (reconbench.zoo.grid)
FASHION_FILE = "fashion.json"  # beside tracks.json: the Fashion-MNIST tracks (reconbench.image.models.fashion_registry)
SEALED_FILE = "sealed.json"  # beside tracks.json: the sealed twins' draws (reconbench.image.models.sealed_registry)
GENERATED_FILES = (FASHION_FILE, ZOO_FILE, SEALED_FILE)  # generated registry files, merged after tracks.json in this order


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


class TailBound(BaseModel):
    """Where a dataset is too small to count a rate of natural pairs below the cap: the bound
    C(s) <= anchor_rate * (s / anchor) ** exponent that set the threshold (image/metrics/extraction.py)."""

    model_config = ConfigDict(extra="forbid")

    anchor_pairs: int
    anchor_rate: float
    anchor: float  # per-pixel MSE of the anchor_pairs-th smallest same-class pair
    exponent: float
    exponent_own: float
    exponent_reference: float
    reference: str
    rate_cap: float


class ExtractionCalibration(BaseModel):
    """The extraction count's threshold and pair rate, calibrated on the track's whole public dataset
    (reconbench.image.metrics.extraction; core/extraction.py uses them)."""

    model_config = ConfigDict(extra="forbid")

    threshold: float
    quantile: float
    pair_rate: float
    pairs_within: int
    pairs: int
    dataset_sha256: str
    derivation: str
    tail: TailBound | None = None  # set where the counted rate exceeded the cap (small datasets: digits)


class RetiredCalibration(BaseModel):
    """An earlier extraction calibration of the track (its constants only): entries signed while it was the
    registry's claim their count at it. Such a claim is re-scored at the current calibration and shown so;
    a count claimed at constants the registry never held is refused (submissions/checks/rescore.py)."""

    model_config = ConfigDict(extra="forbid")

    threshold: float
    pair_rate: float
    until: str  # the commit that replaced it (the registry's history holds its derivation)


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


class SealedObservation(BaseModel):
    """What the attack of a sealed update twin observes, computed with the key from the draw's members
    (image/dynamic.py's recipe) and published, since nobody without the key could compute it."""

    model_config = ConfigDict(extra="forbid")

    gradients_file: str  # data-relative safetensors: the update's gradients at the model before it
    gradients_sha256: str
    updated_model_file: str  # data-relative safetensors: the model after the fine-tune on the members
    updated_model_sha256: str


SHA256_HEX = r"^[0-9a-f]{64}$"
SEALED_ROLES = ("model", "gradients", "updated_model")  # a v2 draw's encrypted files (core/sealed_weights labels)


class SealedFile(BaseModel):
    """One encrypted weight file of a v2 draw (core/sealed_weights.py): what ships is the ciphertext, pinned by
    its own hash (anyone checks the shipped bytes), and the plaintext's hash, checked after decryption inside
    the board's sealed run and by `seal verify` after the reveal. Its AES-GCM label is "<track id>/<role>"."""

    model_config = ConfigDict(extra="forbid")

    file: str = Field(pattern=r"^fashion/sealed/[A-Za-z0-9._-]+\.sealed$")  # inside the package's data folder
    sha256: str = Field(pattern=SHA256_HEX)  # of the ciphertext
    plain_sha256: str = Field(pattern=SHA256_HEX)  # of the decrypted safetensors bytes


class Seal(BaseModel):
    """A sealed track's draw (reconbench.core.seal), in one of two schemes.

    v1 (season 2026-s1, burned): which half of a public pool of 2n images (the sealed block's first 2n) the
    model trained on was drawn from the board's key; the model and the pool's hash are public. The model's
    loss on its public pool tells its members apart (issue 43), so these draws are public practice draws.

    v2 (2026-s2 on): the pool itself is drawn from the whole sealed block with the season's key
    (core/seal.block_draw: per class `per_class[c]` members and as many non-members), and the draw's
    weight files ship only encrypted (`files`, core/sealed_weights.py): nothing public but the block, the
    recipe and the hashes below. `commitment` is core/seal.commitment_v2 over `block_sha256` (the sealed
    block in the dataset's view, fashion_splits.sealed_block), the pool's block indices and the membership.
    A v2 row publishes no hash of the pool (`pool_sha256` None, no target/update set hash): an unsalted hash
    of the pool would let anyone test a guessed pool offline, and the commitment, salted with a secret
    nonce, already binds the pool and its membership; inside the board's run the pool is checked by opening
    that commitment. The plaintext weights' hashes stay public (`target_model_sha256`, `plain_sha256`): they
    only confirm a complete guess of the member set, one training or fine-tune per guess, among at least
    C(486, n_c) choices per class (the smallest twin, u8: 486^8 ~ 3e21 update sets), and they let anyone
    check the decrypted files after the reveal.

    The target set the board scores against is the whole pool (nearest pool item); the membership gap and
    the extraction count need the key."""

    model_config = ConfigDict(extra="forbid")

    scheme: Literal["v1", "v2"] = "v1"
    group: str  # the sealed twin (e.g. fashion-n100-sealed): its draws are the tracks <group>-d<i>
    draw: int = Field(ge=0)
    draws: int = Field(ge=1, description="K: independent draws of the twin, each a model trained on its own half")
    open_twin: str  # the open track of the same recipe, public membership (development, examples)
    season: str
    reveal_after: str  # ISO date: when the season's key is published (recon-submit seal reveal)
    pool_size: int
    pool_sha256: str | None = None  # v1: content hash of the public pool (= the track's target_set_sha256); v2: None
    commitment: str  # core/seal.commitment (v1) or commitment_v2 (v2) of this draw
    record_signer: str | None = None  # core/seal.record_signer_public: the key CI's sealed.json records are signed by
    observation: SealedObservation | None = None  # v1 update twin: its published (plaintext) observation
    block_sha256: str | None = Field(None, pattern=SHA256_HEX)  # v2: the sealed block the pool is drawn from
    per_class: dict[int, int] | None = None  # v2: members per class (the open twin's target or update set's counts)
    files: dict[str, SealedFile] = Field(default_factory=dict)  # v2: role (SEALED_ROLES) -> its encrypted file

    @model_validator(mode="after")
    def _one_scheme(self) -> "Seal":
        if self.scheme == "v1":
            if self.pool_sha256 is None:
                raise ValueError("a v1 seal pins its public pool (pool_sha256)")
            if self.block_sha256 is not None or self.per_class is not None or self.files:
                raise ValueError("block_sha256, per_class and files belong to scheme v2")
            return self
        if self.pool_sha256 is not None or self.observation is not None:
            raise ValueError("a v2 seal publishes no pool hash and no plaintext observation (its files are encrypted)")
        if self.block_sha256 is None or not self.per_class:
            raise ValueError("a v2 seal names the block it draws from (block_sha256) and its per-class counts")
        if 2 * sum(self.per_class.values()) != self.pool_size or min(self.per_class.values()) < 1:
            raise ValueError(f"a v2 seal's pool_size {self.pool_size} is not twice its per-class counts' sum")
        unknown = set(self.files) - set(SEALED_ROLES)
        if unknown or not ({"model"} <= set(self.files) or {"gradients", "updated_model"} <= set(self.files)):
            raise ValueError(f"a v2 seal's files are its encrypted model, or an update twin's gradients and "
                             f"updated_model (roles {', '.join(SEALED_ROLES)}); got {', '.join(sorted(self.files)) or 'none'}")
        return self


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
    gradient_batch_size: int | None = Field(
        None, ge=1, description="dynamic white-box cells: images per observed gradient (None: "
                                "reconbench.image.dynamic.GRADIENT_BATCH_SIZE); the update set is cut into batches of it")
    status: Literal["embedded", "published", "unpublished"]
    source: EmbeddedSource | HubSource | None = None
    target_model_sha256: str | None = None
    target_set_sha256: str | None = None
    update_set_sha256: str | None = None
    holdout_set_sha256: str | None = Field(
        None, description="content hash of the holdout: non-members with the target set's size and class counts, "
                          "never trained on by any shipped model, never in an attack's view (the membership gap's "
                          "reference; reconbench.image.track_files.load_holdout)")
    update_holdout_set_sha256: str | None = Field(
        None, description="content hash of the holdout matched to the update set (dynamic scenarios)")
    scenarios: list[str]
    query_budget: int = Field(
        DEFAULT_QUERY_BUDGET, ge=1,
        description="images the attacker may query the target with in one run (black-box cells, surrogate stealing "
                    "included); every query is counted against it and an attack preset that needs more is refused")
    train_accuracy: float | None = None
    test_accuracy: float | None = None
    memorization: float | None = None
    recipe: str | None = None
    near_copy: NearCopy | None = None
    seal: Seal | None = None
    extraction: ExtractionCalibration | None = None
    retired_extraction: list[RetiredCalibration] = Field(
        default_factory=list, description="earlier extraction calibrations, kept only to recognise the counts entries "
                                          "signed at them claim (re-scored at the current one); never used to score")


    evaluation_model: EvaluationModel | None = None
    retired_evaluation_models: list[EvaluationModel] = Field(
        default_factory=list,
        description="earlier evaluation classifiers of the track, kept only to verify the Acc@1/Acc@5/KNN claims of "
                    "entries scored with them (validate tries them when the current one disagrees); never used for "
                    "a new score or a gap")

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


def embedded_file(name: str) -> Path:
    """A file of the package's data folder (reconbench/data/: the embedded tracks' weights and files)."""
    return Path(str(resources.files("reconbench") / "data" / name))


def registry_path() -> Path:
    import os

    override = os.environ.get(REGISTRY_ENV)
    if override:
        return Path(override)
    return Path(str(resources.files("reconbench") / "registry" / "tracks.json"))


@lru_cache(maxsize=8)
def read_registry_file(path: str, mtime: float, schema: type[BaseModel] | None = None, what: str = "tracks registry"):
    """A registry file validated by `schema` (Registry by default), cached until its mtime changes."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise TrackError(f"{path}: cannot read the {what} ({exc})") from None
    return (schema or Registry).model_validate(raw)



def load_registry() -> Registry:
    path = registry_path()
    registry = read_registry_file(str(path), path.stat().st_mtime if path.exists() else 0.0)
    if os.environ.get(REGISTRY_ENV):  # an override file is the whole registry
        return registry
    # The packaged registry = tracks.json + the generated files beside it (Fashion-MNIST, the zoo grid).
    tracks, seen = list(registry.tracks), {path.name: {t.id for t in registry.tracks}}
    for name in GENERATED_FILES:
        extra = path.with_name(name)
        if not extra.exists():
            continue
        part = read_registry_file(str(extra), extra.stat().st_mtime)
        ids = {t.id for t in part.tracks}
        for other, other_ids in seen.items():
            if ids & other_ids:
                raise TrackError(f"{extra}: track id(s) also in {other}: {', '.join(sorted(ids & other_ids))}")
        seen[name] = ids
        tracks += part.tracks
    return Registry(schema_version=1, tracks=tracks)


def all_tracks() -> list[Track]:
    return load_registry().tracks


def extraction_calibration(track: Track) -> ExtractionCalibration | None:
    """The extraction threshold and pair rate that the count and the copy rule use on `track`. They are
    calibrated on the whole public dataset (issue 33), so a sealed draw, whose registry row carries none,
    takes its dataset's, as registered on the open tracks of that dataset: the same threshold keyed and
    keyless, open and sealed (issue 43)."""
    if track.extraction is not None:
        return track.extraction
    return next((t.extraction for t in all_tracks() if t.dataset == track.dataset and t.extraction is not None), None)


def sealed_draws(group: str) -> list[Track]:
    """The draws of a sealed twin (<group>-d0 …), in draw order; [] for any other name."""
    return sorted((t for t in all_tracks() if t.seal is not None and t.seal.group == group), key=lambda t: t.seal.draw)


def pick_draws(group: str, draws: str | int = "all") -> list[Track]:
    """`--draws all|N`: every draw of a sealed twin, or its first N (trying an attack out: the board's verdict
    needs all K, a row with fewer says "partial")."""
    found = sealed_draws(group)
    if not found:
        raise TrackError(f"--draws: '{group}' is not a sealed twin (its draws are what --draws picks; "
                         "`recon-submit tracks` marks the sealed tracks)")
    if str(draws) == "all":
        return found
    try:
        n = int(draws)
    except ValueError:
        n = 0
    if not 1 <= n <= len(found):
        raise TrackError(f"--draws {draws}: give 'all' or a number of draws from 1 to {len(found)} ('{group}' has {len(found)})")
    return found[:n]


def get_track(track_id: str) -> Track:
    for track in all_tracks():
        if track.id == track_id:
            return track
    import difflib

    draws = [t.id for t in sealed_draws(track_id)]
    if draws:  # a sealed twin is its K draws: an entry runs on each (the board's verdict needs them all)
        raise TrackError(f"'{track_id}' is a sealed twin of {len(draws)} draws ({', '.join(draws)}): evaluate runs "
                         f"on each with --track {track_id} --draws all; its board reports the mean across them "
                         "(docs/sealed.md)")
    ids = [t.id for t in all_tracks()]
    close = difflib.get_close_matches(track_id, ids, n=3, cutoff=0.5)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else "see `recon-submit tracks --all`"
    raise TrackError(f"unknown track '{track_id}' ({hint})")
