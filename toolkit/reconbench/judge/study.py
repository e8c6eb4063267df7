"""The signed study file: judgements/<study-id>/study.json = {"payload": ..., "signature": ...}.

The payload holds the judge model (as requested and as the endpoint reported it), the exact prompt,
the options, the conditions (entries, pinned by the sha256 of their result.json and reconstructions),
the sampled targets with each condition's candidate, every vote (order shown, answers, the position
chosen and the condition it maps to) and the aggregates per order mode. The signature covers the
RFC 8785 canonical form of the payload (reconbench.core.signing).
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from reconbench._version import __version__
from reconbench.core.io import atomic_path, strict_json_loads
from reconbench.judge import STUDY_FILE
from reconbench.judge.aggregate import aggregates
from reconbench.judge.prompt import ANSWER_CHARS, MAX_CONDITIONS, MIN_CONDITIONS
from reconbench.core.envelope import Sha256, Signature, Slug
from reconbench.core.signing import sign_payload

SCHEMA_VERSION = 1
MAX_BYTES = 16_000_000  # 1,000 targets x 5 repeats x 2 modes is ~2 MB; 8x that is a mistake or abuse


def _plain(text: str) -> str:
    from reconbench.submissions.layout import is_plain_text

    if not is_plain_text(text):  # no bidi overrides or zero-width characters in what the site shows
        raise ValueError("must be NFC text without control or format characters")
    return text


Text = Annotated[str, StringConstraints(max_length=400), AfterValidator(_plain)]


def check_title(title: str | None) -> None:
    """Refuse a bad --title before any call is made (not after a study's worth of them)."""
    if title is not None and (len(title) > 400 or not title.strip()):
        raise ValueError("--title must be 1 to 400 characters")
    if title is not None:
        _plain(title)
Answer = Annotated[str, StringConstraints(max_length=ANSWER_CHARS)] | None


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True, strict=True)


class ConditionRef(Strict):
    team: Slug
    entry_id: Slug
    attack: Slug
    result_sha256: Sha256
    reconstructions_sha256: Sha256


class Candidate(Strict):
    rec_index: Annotated[int, Field(ge=0)]
    mse: Annotated[float, Field(ge=0, le=1)]
    psnr: float | None
    same_class: bool


class Vote(Strict):
    repeat: Annotated[int, Field(ge=0)]
    order: list[Annotated[int, Field(ge=0, lt=MAX_CONDITIONS)]]
    answers: list[Answer] = Field(min_length=1, max_length=11)
    position: Annotated[int, Field(ge=2, le=MAX_CONDITIONS + 1)] | None
    condition: Annotated[int, Field(ge=0, lt=MAX_CONDITIONS)] | None


class Target(Strict):
    index: Annotated[int, Field(ge=0)]
    label: int
    candidates: list[Candidate] = Field(min_length=MIN_CONDITIONS, max_length=MAX_CONDITIONS)
    votes: dict[Literal["random", "fixed"], list[Vote]]


class Judge(Strict):
    model: Text = Field(description="the model name requested (--model)")
    models_reported: list[Text] = Field(min_length=1, description="the model names the endpoint reported")
    endpoint: Text = Field(description="base URL without credentials")


class StudyOptions(Strict):
    targets: Annotated[int, Field(ge=1)]
    repeats: Annotated[int, Field(ge=1, le=20)]
    seed: int
    modes: list[Literal["random", "fixed"]] = Field(min_length=1, max_length=2)
    image_size: Annotated[int, Field(ge=16, le=2048)]
    temperature: float | None
    max_tokens: int | None
    invalid_retries: Annotated[int, Field(ge=0, le=10)]
    layout: Text
    candidate_rule: Text


class StudyPayload(Strict):
    schema_version: Literal[1] = SCHEMA_VERSION
    study_id: Slug
    team: Slug
    title: Text
    created: Text
    toolkit_version: Text
    track: Slug
    split: Literal["target", "update"]
    target_set_size: Annotated[int, Field(ge=1)]
    judge: Judge
    prompt: Annotated[str, StringConstraints(max_length=1000)]
    options: StudyOptions
    conditions: list[ConditionRef] = Field(min_length=MIN_CONDITIONS, max_length=MAX_CONDITIONS)
    targets: list[Target] = Field(min_length=1)
    aggregates: dict[Literal["random", "fixed"], dict]


class StudyFile(Strict):
    payload: StudyPayload
    signature: Signature


class StudyError(Exception):
    """A study file that cannot be read, parsed or trusted; the message names the file."""


CANDIDATE_RULE = ("per target and condition, the reconstruction with the highest PSNR against the target "
                  "(same class when the condition has one; ties to the lowest index)")


def build_payload(plan, records: dict[str, dict], *, team: str, title: str | None, endpoint: str) -> dict:
    from reconbench.judge.runner import votes_of
    from reconbench.judge.selection import short_hash

    opts = plan.options
    votes = {mode: votes_of(plan, records, mode) for mode in opts.modes}
    targets = [{"index": index, "label": plan.target_labels[t], "candidates": plan.candidates[t],
                "votes": {mode: votes[mode][t] for mode in opts.modes}} for t, index in enumerate(plan.indices)]
    reported = sorted({records[c.key]["model"] for c in plan.calls})
    now = datetime.now(timezone.utc).replace(microsecond=0)
    conditions = [{"team": c.team, "entry_id": c.entry_id, "attack": c.attack, "result_sha256": c.result_sha256,
                   "reconstructions_sha256": c.reconstructions_sha256} for c in plan.conditions]
    digest = short_hash(opts.model, plan.prompt, *[c.result_sha256 for c in plan.conditions], str(opts.seed),
                        str(len(plan.indices)), str(opts.repeats), "+".join(opts.modes))
    payload = {
        "schema_version": SCHEMA_VERSION,
        "study_id": f"{plan.track}-judge-{now:%Y%m%d%H%M%S}-{digest}",
        "team": team,
        "title": title or " vs ".join(c.attack for c in plan.conditions) + f" on {plan.track}",
        "created": now.isoformat(),
        "toolkit_version": __version__,
        "track": plan.track, "split": plan.split, "target_set_size": plan.n_targets_total,
        "judge": {"model": opts.model, "models_reported": reported, "endpoint": endpoint},
        "prompt": plan.prompt,
        "options": {"targets": len(plan.indices), "repeats": opts.repeats, "seed": opts.seed, "modes": list(opts.modes),
                    "image_size": opts.image_size, "temperature": opts.temperature, "max_tokens": opts.max_tokens,
                    "invalid_retries": opts.invalid_retries, "layout": plan.options.params()["layout"],
                    "candidate_rule": CANDIDATE_RULE},
        "conditions": conditions,
        "targets": targets,
        "aggregates": {mode: aggregates([{"votes": v} for v in votes[mode]], plan.k, opts.repeats) for mode in opts.modes},
    }
    StudyPayload.model_validate(payload)  # our own output must pass our own schema
    return payload


def write_study(folder: Path, payload: dict, key) -> Path:
    """Sign and write folder/study.json atomically (sorted keys, two-space indent)."""
    signed = {"payload": payload, "signature": sign_payload(payload, key)}
    path = Path(folder) / STUDY_FILE
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(signed, indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False) + "\n",
                       encoding="utf-8")
        os.chmod(tmp, 0o644)  # a public file (mkstemp creates 0600)
    return path


def read_study(path: Path) -> tuple[StudyFile, dict]:
    """(parsed file, raw payload dict as signed); strict JSON: no duplicate keys, no NaN/Infinity."""
    from reconbench.core.envelope import first_error
    from reconbench.submissions.team import TeamError, read_capped

    try:
        data = read_capped(Path(path), MAX_BYTES)
    except TeamError as exc:
        raise StudyError(str(exc)) from None
    try:
        raw = strict_json_loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise StudyError(f"{path}: malformed JSON ({str(exc)[:200]})") from None
    try:
        parsed = StudyFile.model_validate(raw)
    except ValidationError as exc:
        raise StudyError(f"{path}: {first_error(exc)}") from None
    return parsed, raw["payload"]
