"""The result file: a strict payload (pydantic) plus provenance, signed with ed25519.

On disk a result is a folder with `result.json` = {"payload": ..., "signature": ...} and
`reconstructions.safetensors` (uint8 images N x C x H x W, int64 labels).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import Field, StringConstraints, ValidationError, field_validator

# The envelope both modalities share (core/envelope.py); the names an image result's readers use
# are re-exported here, so this module is the whole image result format.
from reconbench.core.envelope import (  # noqa: F401
    CONFIG_MAX_KEYS,
    NOTE_MAX,
    RESULT_FILE,
    SANDBOX_PATTERN,
    SCHEMA_VERSION,
    AttackInfo,
    ConfigValue,
    HubReference,
    MembershipInfo,
    Provenance,
    ResultError,
    SealedInfo,
    Sha256,
    Signature,
    Slug,
    Strict,
    TargetIdentity,
    _absent,
    first_error,
    git_state,
    make_entry_id,
    read_result_raw,
)
from reconbench.core.io import FileFormatError, atomic_dir, load_arrays, save_arrays
from reconbench.core.signing import SigningError, verify_payload
from reconbench.image.metrics import METRICS, MetricResult

RECONSTRUCTIONS_FILE = "reconstructions.safetensors"

# Plausible ranges per metric; a value outside is an error in the file, not a great result.
VALUE_RANGES = {
    "mse": (0.0, 1.0),
    "psnr": (-1.0, 200.0),
    "ssim": (-1.0, 1.0),
    "lpips": (0.0, 10.0),
    "fid": (0.0, 1e5),
    "acc_top1": (0.0, 1.0),
    "acc_top5": (0.0, 1.0),
    "knn_dist": (0.0, math.inf),
}


# SurrogateInfo's docstring is published in the schema: it cites the module's old name (core/moved.py).
class SurrogateInfo(Strict):
    """How a white-box attack ran in a black-box cell: the surrogate stolen first (reconbench.surrogate)."""

    method: Literal["dfme", "aux"]
    architecture: Annotated[str, StringConstraints(max_length=80)]
    budget: Literal["quick", "default", "paper"]
    config: dict[Annotated[str, StringConstraints(max_length=80)], ConfigValue] = Field(default_factory=dict)
    queries: Annotated[int, Field(ge=0)] = Field(description="target queries spent on stealing (images)")
    agreement: Annotated[float, Field(ge=0, le=1)] = Field(description="top-1 agreement with the target on the test split")
    agreement_images: Annotated[int, Field(gt=0)]
    attack_view: Annotated[str, StringConstraints(pattern=r"^static/white-box/(none|similar|same)$")] = Field(
        description="the attack's view: white-box on the surrogate")


class ReconstructionsInfo(Strict):
    file: Literal["reconstructions.safetensors"] = RECONSTRUCTIONS_FILE
    sha256: Sha256
    count: Annotated[int, Field(gt=0, le=10_000_000)]
    shape: tuple[Annotated[int, Field(gt=0, le=4)], Annotated[int, Field(gt=0, le=4096)], Annotated[int, Field(gt=0, le=4096)]]
    hub: HubReference | None = None


class Payload(Strict):
    schema_version: Literal[1] = SCHEMA_VERSION
    entry_id: Slug
    track: Slug
    scenario: Annotated[str, StringConstraints(pattern=r"^(static|dynamic)/(white-box|black-box)/(none|similar|same)$")]
    attack: AttackInfo
    target: TargetIdentity
    metrics: dict[str, MetricResult]
    reconstructions: ReconstructionsInfo
    provenance: Provenance
    surrogate: SurrogateInfo | None = Field(None, exclude_if=_absent, description="set when run through a stolen surrogate")
    membership: MembershipInfo | None = Field(
        None, exclude_if=_absent, description="the membership gap against the track's holdout (absent in results "
                                              "written before it existed: validate computes it)")
    sealed: SealedInfo | None = Field(
        None, exclude_if=_absent, description="set on a sealed track: the membership gap and extraction count are "
                                              "scored at validation with the board's key")

    @field_validator("metrics")
    @classmethod
    def _known_and_plausible(cls, metrics: dict[str, MetricResult]) -> dict[str, MetricResult]:
        for name, result in metrics.items():
            if name not in METRICS:
                raise ValueError(f"unknown metric '{name}' (known: {', '.join(METRICS)})")
            low, high = VALUE_RANGES.get(name, (-math.inf, math.inf))
            if result.value is not None and not low <= result.value <= high:
                raise ValueError(f"metric '{name}' = {result.value} is outside its range [{low}, {high}]")
            if result.note is not None and len(result.note) > NOTE_MAX:
                raise ValueError(f"metric '{name}': note of {len(result.note)} characters, over the {NOTE_MAX} cap")
        return metrics


class ResultFile(Strict):
    payload: Payload
    signature: Signature


def result_json_schema() -> dict:
    schema = ResultFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "ReconBench result file"
    return schema


def parse_result_json(path: Path, max_bytes: int = 1_000_000) -> ResultFile:
    path = Path(path)
    raw = read_result_raw(path, max_bytes)
    try:
        return ResultFile.model_validate(raw)
    except ValidationError as exc:
        raise ResultError(f"{path}: {first_error(exc)}") from None


def payload_dict(result: ResultFile) -> dict:
    """The payload as the signer saw it: JSON types only, the form the canonicaliser hashes."""
    return result.payload.model_dump(mode="json")


def load_reconstructions(path: Path) -> tuple[np.ndarray, np.ndarray]:
    arrays = load_arrays(path, required={"images": np.uint8, "labels": np.int64})
    images, labels = arrays["images"], arrays["labels"]
    if images.ndim != 4 or labels.shape != (images.shape[0],):
        raise FileFormatError(f"{path}: images must be (N, C, H, W) with N labels, got {images.shape} and {labels.shape}")
    return images, labels


def write_result_dir(out: Path, result: ResultFile, images: np.ndarray, labels: np.ndarray, attack_files=None) -> Path:
    """Write result.json and reconstructions.safetensors (and a bring-your-own attack's source in
    attack/); the folder appears whole or not at all."""
    with atomic_dir(Path(out)) as tmp:
        if attack_files:
            from reconbench.core.attack_source import ATTACK_DIR, copy_source

            copy_source(attack_files, tmp / ATTACK_DIR)
        save_arrays(tmp / RECONSTRUCTIONS_FILE, {"images": images, "labels": labels})
        (tmp / RESULT_FILE).write_text(
            json.dumps(result.model_dump(mode="json"), indent=2, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8"
        )
    return Path(out)


def verify_result_dir(folder: Path, trusted_keys: list[str] | None = None) -> ResultFile:
    """Signature valid and reconstruction file's sha256 as signed; raises ResultError otherwise."""
    from reconbench.core.io import sha256_file

    folder = Path(folder)
    result_path = folder / RESULT_FILE if folder.is_dir() else folder
    folder = result_path.parent
    result = parse_result_json(result_path)
    try:
        verify_payload(payload_dict(result), result.signature.model_dump(), trusted_keys)
    except SigningError as exc:
        raise ResultError(f"{result_path}: {exc}") from None
    info = result.payload.reconstructions
    if info.hub is None:
        recon = folder / info.file
        if not recon.is_file():
            raise ResultError(f"{recon}: reconstruction file not found")
        actual = sha256_file(recon)
        if actual != info.sha256:
            raise ResultError(f"{recon}: sha256 is {actual}, the signed result says {info.sha256}")
    return result
