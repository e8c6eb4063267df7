"""The record of a maintainer's re-run of a judge study (judge/rerun.py makes it; judge/check.py reads it).

A study is its signer's claim: validation checks that its votes, orders and aggregates are
consistent and that its candidates are the right reconstructions, but the answers themselves came
from an endpoint only the signer saw, so a re-signed study with flipped votes validates. The site
therefore shows a study as SELF-REPORTED unless a maintainer has re-run it: the plan is rebuilt from
the study itself (its conditions, seed, targets, repeats, order modes, image size, temperature,
re-asks and judge model), checked to be the study's (same targets and candidates), asked of the
maintainers' endpoint with a fresh answer cache, aggregated, and compared with the study's Pred
Rates; the result is `judgements/<study-id>/rerun.json` = {"record": ..., "signature": ...}, signed
by a reproducer key the maintainers list (maintainers/reproducers.toml), as a reproduction record is.

Tolerance: a judge's answers are samples, so Pred Rate is compared within three binomial standard
errors at the worst case p = 1/2: |study - re-run| <= 3 * sqrt(1/4 / n) per condition and order
mode, n the smaller of the two counts of valid answers (n = 500: 0.067). Validation recomputes the
comparison from the record's aggregates; the record's `agrees` is not taken on trust.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationError

from reconbench.core.io import strict_json_loads
from reconbench.judge.study import Judge, Strict, Text
from reconbench.core.envelope import Sha256, Signature, Slug

RERUN_FILE = "rerun.json"
MAX_BYTES = 4_000_000
SIGMAS = 3.0


class RerunError(Exception):
    """A re-run that cannot be made or a record that cannot be used; the message names the file."""


class PredComparison(Strict):
    mode: Literal["random", "fixed"]
    condition: Annotated[int, Field(ge=0, lt=16)]
    study: float
    rerun: float
    tolerance: float
    within: bool


class RerunRecord(Strict):
    kind: Literal["reconbench-judge-rerun"] = "reconbench-judge-rerun"
    schema_version: Literal[1] = 1
    study_id: Slug
    team: Slug
    study_payload_sha256: Sha256 = Field(description="sha256 of the RFC 8785 form of the study's signed payload")
    judge: Judge = Field(description="the maintainers' endpoint (no credentials) and the models it reported")
    aggregates: dict[Literal["random", "fixed"], dict]
    comparisons: list[PredComparison] = Field(max_length=32)
    agrees: bool
    toolkit_version: Text
    created: Text


class SignedRerun(Strict):
    record: RerunRecord
    signature: Signature


def payload_sha256(raw_payload: dict) -> str:
    from reconbench.core.signing import canonical

    return hashlib.sha256(canonical(raw_payload)).hexdigest()


def tolerance(n_study: int, n_rerun: int) -> float:
    n = min(n_study, n_rerun)
    return 1.0 if n <= 0 else SIGMAS * math.sqrt(0.25 / n)


def compare(study_aggregates: dict, rerun_aggregates: dict) -> list[PredComparison]:
    out = []
    for mode in sorted(study_aggregates):
        a, b = study_aggregates[mode], rerun_aggregates.get(mode)
        if b is None or len(b.get("pred_rate", [])) != len(a["pred_rate"]):
            raise RerunError(f"the re-run has no {mode}-order aggregates for every condition")
        tol = tolerance(int(a["valid_answers"]), int(b["valid_answers"]))
        for c, (x, y) in enumerate(zip(a["pred_rate"], b["pred_rate"])):
            out.append(PredComparison(mode=mode, condition=c, study=float(x), rerun=float(y), tolerance=round(tol, 6),
                                      within=abs(float(x) - float(y)) <= tol))
    return out


def read_rerun(path: Path) -> SignedRerun:
    from reconbench.core.envelope import first_error
    from reconbench.submissions.team import TeamError, read_capped

    try:
        return SignedRerun.model_validate(strict_json_loads(read_capped(Path(path), MAX_BYTES)))
    except ValidationError as exc:
        raise RerunError(f"{path}: {first_error(exc)}") from None
    except (TeamError, ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise RerunError(f"{path}: not a re-run record ({str(exc)[:200]})") from None


def verify_rerun(path: Path, raw_payload: dict, study_aggregates: dict, reproducers: Path | None = None) -> dict:
    """What the page shows of a re-run record: {by, agrees, comparisons, judge, created}; RerunError when it
    is not signed by a listed reproducer or not for this very study."""
    from reconbench.reproduction.record import RecordError, reproducer_keys
    from reconbench.core.signing import SigningError, verify_payload

    signed = read_rerun(path)
    try:
        keys = reproducer_keys(reproducers)
        verify_payload(signed.record.model_dump(mode="json"), signed.signature.model_dump())
    except (RecordError, SigningError) as exc:
        raise RerunError(f"{path}: {exc}") from None
    if signed.signature.public_key not in keys:
        raise RerunError(f"{path}: signed by a key that is not a reproducer key listed by the maintainers")
    rec = signed.record
    if rec.study_payload_sha256 != payload_sha256(raw_payload):
        raise RerunError(f"{path}: the re-run is of another study, or of another version of this one")
    comparisons = compare(study_aggregates, rec.aggregates)  # recomputed: `agrees` is not taken on trust
    return {"by": keys[signed.signature.public_key], "agrees": all(c.within for c in comparisons),
            "comparisons": comparisons, "judge": rec.judge, "created": rec.created[:10],
            "aggregates": rec.aggregates}
