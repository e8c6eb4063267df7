"""The text result: the image result's envelope and provenance, a text payload, and reconstructions.jsonl.

On disk a text result is a folder with `result.json` = {"payload": ..., "signature": ...} where
payload.modality is "text", and `reconstructions.jsonl` (text/jsonl.py: one {"id", "text"} object
per line, in the target set's order, the items.jsonl_bytes form, size-capped). The payload pins
the file by sha256, count and byte size, and is signed like an image payload (reconbench.core.signing:
ed25519 over RFC 8785), so one changed byte of either file is caught by `verify`.

What differs from an image payload: `modality`, `role` (the target model the attack ran against:
"generator" for Complete, "embedder" for Vec2Text), the text metrics (bleu, rouge_l, similarity,
exact_match; shares in [0, 1], similarity a mean cosine in [-1, 1]; higher = stronger attack; no coverage: each reconstruction is scored
against its own target), and no surrogate. An image payload has no `modality` key, so the schema of
every image result already signed stays as it was.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, ValidationError, field_validator

from reconbench.core.io import atomic_dir, sha256_file
from reconbench.core.report import MetricResult
from reconbench.core.envelope import (
    NOTE_MAX,
    RESULT_FILE,
    SCHEMA_VERSION,
    AttackInfo,
    MembershipInfo,
    Provenance,
    ResultError,
    Sha256,
    Signature,
    Slug,
    Strict,
    TargetIdentity,
    first_error,
    read_result_raw,
)
# parse_any_result and verify_any_result_dir fall back to the image format for a result that is not text
from reconbench.image.results import ResultFile, parse_result_json, verify_result_dir
from reconbench.core.signing import SigningError, sign_payload, verify_payload
from reconbench.text.items import TextItem, TextSet, jsonl_bytes
from reconbench.text.metrics.info import RANGES
from reconbench.text.jsonl import MAX_FILE_BYTES, MAX_ITEMS, TEXT_RECONSTRUCTIONS_FILE, TextFileError, read_jsonl

# The metrics a text result may claim (reconbench.text.metrics computes them): all in [0, 1], all ↑.
TEXT_METRIC_NAMES = ("bleu", "rouge_l", "similarity", "exact_match")
TEXT_METRIC_RANGES = RANGES  # similarity is a mean cosine, which can be negative (text/metrics/info.py)
TEXT_SCENARIO = r"^static/(white-box|black-box)/(none|similar|same)$"  # the SoK's text attacks are static


class TextAttackInfo(AttackInfo):
    """AttackInfo with the text attacks' families: Complete is an extraction attack (Carlini et al.), which
    is none of the SoK's three image families; Vec2Text trains an inverter ("training")."""

    family: Literal["extraction", "training", "optimization", "analysis"]


class TextReconstructionsInfo(Strict):
    file: Literal["reconstructions.jsonl"] = TEXT_RECONSTRUCTIONS_FILE
    sha256: Sha256
    count: Annotated[int, Field(gt=0, le=MAX_ITEMS)]
    bytes: Annotated[int, Field(gt=0, le=MAX_FILE_BYTES)] = Field(description="size of reconstructions.jsonl")


class TextPayload(Strict):
    schema_version: Literal[1] = SCHEMA_VERSION
    modality: Literal["text"] = "text"
    entry_id: Slug
    track: Slug
    scenario: Annotated[str, StringConstraints(pattern=TEXT_SCENARIO)]
    role: Literal["generator", "embedder"] = Field(description="the target model attacked: Complete the generator, "
                                                               "Vec2Text the embedder")
    attack: TextAttackInfo
    target: TargetIdentity = Field(description="model_sha256: the role's weight file; target_set_sha256: the "
                                               "target split's TextSet.sha256")
    metrics: dict[str, MetricResult]
    reconstructions: TextReconstructionsInfo
    provenance: Provenance
    membership: MembershipInfo | None = Field(
        None, exclude_if=lambda v: v is None,
        description="the membership gap against the track's holdout (reconbench.text.metrics.leakage); absent in "
                    "results written before it existed: validate computes it")

    @field_validator("metrics")
    @classmethod
    def _known_and_plausible(cls, metrics: dict[str, MetricResult]) -> dict[str, MetricResult]:
        for name, result in metrics.items():
            if name not in TEXT_METRIC_NAMES:
                raise ValueError(f"unknown text metric '{name}' (known: {', '.join(TEXT_METRIC_NAMES)})")
            low, high = TEXT_METRIC_RANGES[name]
            if result.value is not None and not low <= result.value <= high:
                raise ValueError(f"metric '{name}' = {result.value} is outside its range [{low:g}, {high:g}]")
            if result.coverage is not None:
                raise ValueError(f"metric '{name}': text metrics have no coverage (each text is scored against its own target)")
            if result.note is not None and len(result.note) > NOTE_MAX:
                raise ValueError(f"metric '{name}': note of {len(result.note)} characters, over the {NOTE_MAX} cap")
        return metrics


class TextResultFile(Strict):
    payload: TextPayload
    signature: Signature


AnyResult = ResultFile | TextResultFile


def text_result_json_schema() -> dict:
    schema = TextResultFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "ReconBench text result file"
    return schema


def is_text_raw(raw: object) -> bool:
    """Whether parsed result JSON declares itself a text result (payload.modality == "text")."""
    return isinstance(raw, dict) and isinstance(raw.get("payload"), dict) and raw["payload"].get("modality") == "text"


def parse_any_result(path: Path, max_bytes: int = 1_000_000) -> AnyResult:
    """A result.json of either modality, under that modality's strict schema; ResultError otherwise."""
    path = Path(path)
    raw = read_result_raw(path, max_bytes)
    if not is_text_raw(raw):
        return parse_result_json(path, max_bytes)  # reads the (small, capped) file again: one code path for images
    try:
        return TextResultFile.model_validate(raw)
    except ValidationError as exc:
        raise ResultError(f"{path}: {first_error(exc)}") from None


def sign_text_result(payload: TextPayload, key) -> TextResultFile:
    return TextResultFile(payload=payload, signature=Signature(**sign_payload(payload.model_dump(mode="json"), key)))


def write_text_result_dir(out: Path, result: TextResultFile, items: list[TextItem] | tuple[TextItem, ...]) -> Path:
    """Write result.json and reconstructions.jsonl; the folder appears whole or not at all."""
    data = jsonl_bytes(items)
    info = result.payload.reconstructions
    if len(data) != info.bytes or len(items) != info.count:
        raise ResultError(f"{out}: the payload says {info.count} texts in {info.bytes} bytes, the file holds "
                          f"{len(items)} in {len(data)} bytes")
    with atomic_dir(Path(out)) as tmp:
        (tmp / TEXT_RECONSTRUCTIONS_FILE).write_bytes(data)
        if sha256_file(tmp / TEXT_RECONSTRUCTIONS_FILE) != info.sha256:
            raise ResultError(f"{out}: reconstructions.jsonl does not hash to the signed sha256")
        (tmp / RESULT_FILE).write_text(
            json.dumps(result.model_dump(mode="json"), indent=2, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8"
        )
    return Path(out)


def reconstructions_info(items: list[TextItem] | tuple[TextItem, ...]) -> TextReconstructionsInfo:
    import hashlib

    data = jsonl_bytes(items)
    return TextReconstructionsInfo(sha256=hashlib.sha256(data).hexdigest(), count=len(items), bytes=len(data))


def load_text_reconstructions(folder: Path, result: TextResultFile) -> TextSet:
    """The signed reconstructions of a verified text result folder: size, sha256, then the strict format."""
    info = result.payload.reconstructions
    path = Path(folder) / info.file
    if not path.is_file() and not path.is_symlink():
        raise ResultError(f"{path}: reconstruction file not found")
    try:
        size = path.lstat().st_size
        if size != info.bytes:
            raise ResultError(f"{path}: {size:,} bytes, the signed result says {info.bytes:,}")
        actual = sha256_file(path)
        if actual != info.sha256:
            raise ResultError(f"{path}: sha256 is {actual}, the signed result says {info.sha256}")
        recs = read_jsonl(path)
    except TextFileError as exc:
        raise ResultError(str(exc)) from None
    if len(recs) != info.count:
        raise ResultError(f"{path}: {len(recs)} reconstructions, the signed result says {info.count}")
    return recs


def verify_text_result_dir(folder: Path, trusted_keys: list[str] | None = None) -> TextResultFile:
    folder = Path(folder)
    result_path = folder / RESULT_FILE if folder.is_dir() else folder
    result = parse_any_result(result_path)
    if not isinstance(result, TextResultFile):
        raise ResultError(f"{result_path}: an image result, not a text result")
    try:
        verify_payload(result.payload.model_dump(mode="json"), result.signature.model_dump(), trusted_keys)
    except SigningError as exc:
        raise ResultError(f"{result_path}: {exc}") from None
    load_text_reconstructions(result_path.parent, result)
    return result


def verify_any_result_dir(folder: Path, trusted_keys: list[str] | None = None) -> AnyResult:
    """`recon-submit verify`: the signature, and the reconstruction file as signed, for either modality."""
    folder = Path(folder)
    result_path = folder / RESULT_FILE if folder.is_dir() else folder
    if is_text_raw(read_result_raw(result_path)):
        return verify_text_result_dir(folder, trusted_keys)
    return verify_result_dir(folder, trusted_keys)
