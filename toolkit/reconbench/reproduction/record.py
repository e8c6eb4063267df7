"""The reproduction record: what a reproducer obtained, signed by a key the maintainers list.

On disk: `<entry>/reproduction.json` = {"record": {...}, "signature": {...}}; the signature covers
the RFC 8785 canonical form of "record", as for result files.

What the signer vouches for, and what it only passes on (schema_version 2): the record's top-level
fields are what the signing side computed itself: the metrics, re-scored from the re-run's
reconstructions against the target set; their comparisons with the claim; the hash of those
reconstructions; the entry's payload hash; the signer's own toolkit and machine (`scored_on`).
`reported_by_run` is what the job that RAN the attack wrote into its result.json (device, hardware,
wall time, its toolkit commit, the scenario, query counts, the sandbox): that job ran contributor
code, so none of it is verified; `run_checks` compares its scenario and query counts with the
claim, and a disagreement makes the verdict "not-reproduced". Records of schema_version 1 (made
before this split) hold the same run facts under `run`; they are read, and shown, the same way.
A record's `verdict` is not trusted on its own: validation recomputes the comparison of its metrics
with the claim (reproduction/compare.py). Reproducer keys are listed in
`maintainers/reproducers.toml` (CODEOWNERS: maintainers only); `RECONBENCH_REPRODUCERS` or
`--reproducers` names another file. Workflows pass the BASE branch's file, never the pull
request's, so a pull request cannot list its own key.
"""

from __future__ import annotations

import os
import tomllib
from datetime import datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, ValidationError, model_validator

from reconbench.core.io import strict_json_loads, write_json
from reconbench.image.metrics import MetricResult
from reconbench.core.envelope import Sha256, Signature, Slug, Strict, first_error
from reconbench.core.signing import SigningError, verify_payload

RECORD_FILE = "reproduction.json"
REPRODUCERS_ENV = "RECONBENCH_REPRODUCERS"
MAX_RECORD_BYTES = 256 * 1024
Short = Annotated[str, StringConstraints(max_length=400)]


class RecordError(Exception):
    """A reproduction record or reproducers file that cannot be used; the message names it."""


class Comparison(Strict):
    metric: Annotated[str, StringConstraints(max_length=40)]
    claimed: float | None
    obtained: float | None
    claimed_coverage: float | None = None
    obtained_coverage: float | None = None
    tolerance: Short
    within: bool | None = Field(description="None: not compared (the claim or the re-run has no value)")


def _absent(value) -> bool:
    return value is None or value == []


class RunInfo(Strict):
    """The re-run as the job that ran it reported it (its result.json): NOT verified by the signer."""

    device: Short
    hardware: Short
    wall_seconds: Annotated[float, Field(ge=0, le=1e7)]
    toolkit_commit: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{40}$")] | None = None
    # schema_version 2: what the run job says it ran (compared with the claim in run_checks)
    scenario: Short | None = Field(default=None, exclude_if=_absent)
    queries: Annotated[int, Field(ge=0)] | None = Field(default=None, exclude_if=_absent)
    surrogate_queries: Annotated[int, Field(ge=0)] | None = Field(default=None, exclude_if=_absent)
    sandbox: Short | None = Field(default=None, exclude_if=_absent)


class RunCheck(Strict):
    """One fact the run job reported, against the entry's claim."""

    what: Literal["scenario", "provenance.queries", "surrogate.queries", "sandbox"]
    claimed: int | Short | None
    reported: int | Short | None
    rule: Short
    ok: bool


class ReproductionRecord(Strict):
    kind: Literal["reconbench-reproduction"] = "reconbench-reproduction"
    schema_version: Literal[1, 2] = 2
    entry_id: Slug
    team: Slug
    payload_sha256: Sha256 = Field(description="sha256 of the RFC 8785 form of the entry's signed payload")
    attack_source_sha256: Sha256 | None = None
    toolkit_version: Short
    toolkit_commit: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{40}$")] | None = None
    scored_on: Short
    run: RunInfo | None = Field(default=None, exclude_if=_absent, description="schema_version 1: reported by the run job")
    reported_by_run: RunInfo | None = Field(
        default=None, exclude_if=_absent,
        description="what the job that ran the attack reported (its result.json); not verified by the signer")
    run_checks: list[RunCheck] = Field(default_factory=list, max_length=8, exclude_if=_absent)
    reconstructions_sha256: Sha256
    # how the signer came by the run: re-run in its own sandbox in the same invocation, or handed in
    # (--from-run; then its reconstructions must be the entry's own file: reproduction/compare.py)
    run_seen: Literal["same-invocation", "handed-in"] | None = Field(default=None, exclude_if=_absent)
    metrics: dict[Annotated[str, StringConstraints(max_length=40)], MetricResult]
    comparisons: list[Comparison] = Field(max_length=64)
    problems: list[Short] = Field(default_factory=list, max_length=64, exclude_if=_absent,
                                  description="why the verdict is not-reproduced (schema_version 2)")
    verdict: Literal["reproduced", "not-reproduced"]
    created: datetime

    @model_validator(mode="after")
    def _one_run_block(self) -> "ReproductionRecord":
        if self.schema_version == 1 and (self.run is None or self.reported_by_run is not None or self.run_checks):
            raise ValueError("a schema_version 1 record holds the run's report under `run` (and no run_checks)")
        if self.schema_version == 2 and (self.reported_by_run is None or self.run is not None):
            raise ValueError("a schema_version 2 record holds the run's report under `reported_by_run`, not `run`")
        return self

    @property
    def reported(self) -> RunInfo:
        """What the run job reported (either schema version)."""
        return self.reported_by_run if self.reported_by_run is not None else self.run


class SignedRecord(Strict):
    record: ReproductionRecord
    signature: Signature


def default_reproducers_path() -> Path:
    env = os.environ.get(REPRODUCERS_ENV)
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "maintainers" / "reproducers.toml"  # a source checkout


def reproducer_keys(path: Path | None = None) -> dict[str, str]:
    """public key (base64) -> reproducer name, from the maintainers' file."""
    path = Path(path) if path else default_reproducers_path()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RecordError(f"{path}: reproducer keys file not found (set {REPRODUCERS_ENV})") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RecordError(f"{path}: cannot be read as TOML ({exc})") from None
    keys = {}
    for item in data.get("reproducer", []):
        if not isinstance(item, dict) or not isinstance(item.get("key"), str) or not isinstance(item.get("name"), str):
            raise RecordError(f"{path}: each [[reproducer]] needs a name and a key")
        keys[item["key"]] = item["name"]
    return keys


def read_record(path: Path) -> SignedRecord:
    from reconbench.submissions.team import read_capped  # size first, no links

    try:
        raw = read_capped(path, MAX_RECORD_BYTES)
        return SignedRecord.model_validate(strict_json_loads(raw))
    except (ValueError, UnicodeDecodeError) as exc:
        if isinstance(exc, ValidationError):
            raise RecordError(f"{path}: {first_error(exc)}") from None
        raise RecordError(f"{path}: not a reproduction record ({exc})") from None
    except Exception as exc:  # TeamError from read_capped: a link, too large, unreadable
        raise RecordError(f"{path}: {exc}") from None


def verify_record(signed: SignedRecord, keys: dict[str, str]) -> str:
    """The reproducer's name; RecordError unless a listed key signed this very record."""
    try:
        key = verify_payload(signed.record.model_dump(mode="json"), signed.signature.model_dump())
    except SigningError as exc:
        raise RecordError(f"{RECORD_FILE}: {exc}") from None
    if signed.signature.public_key not in keys:
        raise RecordError(f"{RECORD_FILE}: signed by key {key}, which is not a reproducer key listed by the maintainers")
    return keys[signed.signature.public_key]


def write_record(path: Path, signed: SignedRecord) -> None:
    write_json(Path(path), signed.model_dump(mode="json"))
