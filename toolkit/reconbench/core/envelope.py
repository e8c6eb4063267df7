"""The result envelope both modalities share: a strict payload's common parts (the attack, the
target's identity, provenance, the membership gap, the signature), the entry id, and reading a
result file's JSON strictly. Each modality's result file builds its payload from these
(image/results.py, text/results.py); reconbench.core.signing signs it.
"""

from __future__ import annotations

import json
import re
import subprocess
import unicodedata
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_serializer, model_validator

from reconbench.core.io import strict_json_loads
from reconbench.core.report import GapResult
from reconbench.core.extraction import ExtractionResult

RESULT_FILE = "result.json"
SCHEMA_VERSION = 1
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]{0,79}$")]
ShortText = Annotated[str, StringConstraints(max_length=2000)]
SANDBOX_PATTERN = r"^(none|bubblewrap [0-9][0-9A-Za-z.+~-]{0,39})$"  # provenance.sandbox
ConfigValue = int | float | Annotated[str, StringConstraints(max_length=2000)] | bool | None
# Free text a contributor writes into a signed payload is shown on the site: every field is capped.
NOTE_MAX = 2000  # a metric's note ("weights unavailable", a caveat): a sentence or two
CONFIG_MAX_KEYS = 200  # the largest attack configuration today has ~20 options
# Clock skew between the machine that ran the attack and CI: a day, as the issue allows.
FUTURE_SLACK = timedelta(days=1)
# wall_seconds is perf_counter (monotonic) around the attack; started/finished are wall-clock reads
# just outside it. On a quiet machine they agree to milliseconds, but a loaded virtual machine's wall
# clock was seen to drift 7% from the monotonic one (a 905 s span around 838 s measured): 5 s + 25%
# keeps honest long runs valid and still refuses a wall time unrelated to the span.
WALL_SLACK_S, WALL_SLACK_REL = 5.0, 0.25


# The docstrings and descriptions below are the published schema (`recon-submit schema`): the module
# names they cite are the names before the package layout moved them (core/moved.py resolves them),
# so the schema stays byte-identical.
class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)


def _absent(value: object) -> bool:
    """Fields added after the first entries were signed are left out of the dump when unset, so
    that older entries' signed payloads (which lack them) dump to the very bytes that were signed."""
    return value is None


class AttackInfo(Strict):
    name: Slug
    version: Annotated[str, StringConstraints(max_length=40)]
    family: Literal["optimization", "training", "analysis", "extraction"]  # extraction: text Complete (SoK App. B)
    paper: ShortText
    code: ShortText = Field(description="module:Class of the attack, or file.py:Class for a user's own")
    config: dict[Annotated[str, StringConstraints(max_length=80)], ConfigValue] = Field(
        default_factory=dict, max_length=CONFIG_MAX_KEYS)
    budget: Literal["quick", "default", "paper"] | None = Field(
        None, exclude_if=_absent, description="budget preset the config started from (config: the values that ran)"
    )
    source_sha256: Sha256 | None = Field(
        None, exclude_if=_absent,
        description="bring-your-own attacks: sha256 of the attack/ source the entry ships (reconbench.attack_source)")


class TargetIdentity(Strict):
    model_sha256: Sha256
    target_set_sha256: Sha256 = Field(description="content hash of D_tar (the update set in dynamic scenarios)")


class HubReference(Strict):
    repo: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][\w.-]*/[\w.-]+$", max_length=200)]
    revision: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{40}$")]
    filename: Annotated[str, StringConstraints(max_length=200)]


class Provenance(Strict):
    toolkit_version: ShortText
    git_commit: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{40}$")] | None = None
    git_dirty: bool | None = None
    python: ShortText
    torch: ShortText
    device: ShortText
    hardware: ShortText
    seed: int
    command: ShortText
    started: datetime
    finished: datetime
    wall_seconds: Annotated[float, Field(ge=0)]
    queries: Annotated[int, Field(ge=0)] | None = Field(default=None, description="black-box queries used (images)")
    # Left out of the signed form when absent, so results written before it existed still verify.
    attack_facts: Annotated[dict[Annotated[str, StringConstraints(max_length=80)], int | float | ShortText | bool | None],
                            Field(max_length=32)] | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="facts the attack reported about its run, e.g. its cached GAN prior's key and whether it was trained in this run",
    )
    # The OS sandbox the attack's process ran in (reconbench.pipeline.isolation.sandbox). Left out of the signed
    # form when absent: results written before it existed still verify, and read as unknown ("none").
    sandbox: Annotated[str, StringConstraints(pattern=SANDBOX_PATTERN)] | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description='"bubblewrap <version>" when the attack ran in the bubblewrap sandbox, "none" when it ran '
                    "unsandboxed (absent in results made before the field existed: read as none)",
    )

    # The resource limits the attack's process ran under (reconbench.pipeline.isolation.limits), e.g.
    # "memory=8GiB pids=1024 cpu=43200s wall=21600s tmp=2GiB shm=512MiB". Left out when absent.
    limits: Annotated[str, StringConstraints(pattern=r"^[a-z]+=[0-9A-Za-z]{1,24}( [a-z]+=[0-9A-Za-z]{1,24}){0,15}$")] | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="the limits (memory, tasks, CPU and wall time, /tmp and /dev/shm sizes) the attack's process ran "
                    "under: its budget's, or higher where the run raised them with --limit (absent: made before the field)",
    )

    @property
    def sandboxed(self) -> bool:
        """Whether the attack ran in the OS sandbox (absent: made before the field existed, so not known to)."""
        return (self.sandbox or "none") != "none"

    @model_validator(mode="after")
    def _plausible_times(self) -> "Provenance":
        started, finished = _utc(self.started), _utc(self.finished)
        if started > finished:
            raise ValueError(f"started ({self.started.isoformat()}) is after finished ({self.finished.isoformat()})")
        if finished > datetime.now(timezone.utc) + FUTURE_SLACK:
            raise ValueError(f"finished ({self.finished.isoformat()}) is more than a day in the future")
        span = (finished - started).total_seconds()
        if abs(span - self.wall_seconds) > WALL_SLACK_S + WALL_SLACK_REL * span:
            raise ValueError(f"wall_seconds {self.wall_seconds:g} does not match started..finished ({span:g} s)")
        return self


def _utc(moment: datetime) -> datetime:
    """A naive timestamp is read as UTC (evaluate always writes an aware one)."""
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


class MembershipInfo(Strict):
    """The membership gap of every metric (reconbench.metrics.membership): the reconstructions scored
    against the target set and against the track's holdout, with the same engine."""

    holdout_sha256: Sha256 = Field(description="content hash of the holdout the gaps were measured against")
    test: Literal["membership permutation"] = Field(
        "membership permutation", description="paired permutation test over the pool's membership labels, within class")
    permutations: Annotated[int, Field(ge=1, le=1_000_000)]
    seed: int
    metrics: dict[Annotated[str, StringConstraints(max_length=80)], GapResult] = Field(max_length=64)
    extraction: ExtractionResult | None = Field(
        None, description="the extraction count (core/extraction.py): members within the track's extraction threshold "
                          "of some reconstruction, against the holdout; absent from results written before it existed")

    @model_serializer(mode="wrap")
    def _without_absent_count(self, handler):
        # a result signed before the count existed has no such key: its canonical form must not gain one
        out = handler(self)
        if out.get("extraction") is None:
            out.pop("extraction", None)
        return out

    @classmethod
    def of(cls, holdout_sha256: str, gaps: dict[str, GapResult], extraction: ExtractionResult | None = None) -> "MembershipInfo":
        from reconbench.core.membership import PERMUTATIONS, SEED

        return cls(holdout_sha256=holdout_sha256, permutations=PERMUTATIONS, seed=SEED, metrics=dict(gaps),
                   extraction=extraction)


class SealedInfo(Strict):
    """A result on a sealed track (reconbench.core.seal): its metrics are against the whole pool
    (nearest pool item); the membership gap and the extraction count need the members, which only the
    board's key opens, so they are scored at validation (validate --seal-key) and published by the board."""

    status: Literal["scored at validation"] = "scored at validation"
    group: Annotated[str, StringConstraints(max_length=80)]
    draw: Annotated[int, Field(ge=0)]
    season: Annotated[str, StringConstraints(max_length=40)]
    # None on a v2 draw (issue 43): its pool is secret and its registry row publishes no hash of it; such a result
    # is written only by the board's sealed run, into its private output (submissions/sealed_run.py)
    pool_sha256: Sha256 | None = None
    commitment: Sha256
    pending: list[Annotated[str, StringConstraints(max_length=40)]] = Field(max_length=8)


class Signature(Strict):
    alg: Literal["ed25519"]
    key_id: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{16}$")]
    public_key: Annotated[str, StringConstraints(max_length=64)]
    value: Annotated[str, StringConstraints(max_length=128)]


def make_entry_id(track: str, attack: str, started: datetime, recon_sha256: str) -> str:
    safe_attack = re.sub(r"[^a-z0-9-]+", "-", attack.lower()).strip("-")[:30] or "attack"
    return f"{track}-{safe_attack}-{started:%Y%m%d%H%M%S}-{recon_sha256[:8]}"


def git_state(start: Path) -> tuple[str | None, bool | None]:
    """The commit of the checkout the toolkit runs from (if it runs from one), and whether the
    toolkit's code there differs from that commit. Only the folder `start` (the package) counts:
    new entries under submissions/, results or notes elsewhere in the checkout do not."""
    try:
        top = subprocess.run(["git", "-C", str(start), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        if top.returncode != 0:
            return None, None
        dirty = subprocess.run(["git", "-C", str(start), "status", "--porcelain", "--", "."],
                               capture_output=True, text=True, timeout=5)
        return top.stdout.strip(), bool(dirty.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return None, None


class ResultError(Exception):
    """A result folder that fails to parse or verify; the message names the file and the problem."""


def first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "(top level)"
    return f"{where}: {err['msg']}" + (f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else "")


def read_result_raw(path: Path, max_bytes: int = 1_000_000) -> object:
    """The strictly parsed JSON of a result file (size-capped, UTF-8, no duplicate keys), unvalidated:
    the caller picks the schema (image results here, text results in reconbench.text.results)."""
    path = Path(path)
    try:
        if path.stat().st_size > max_bytes:
            raise ResultError(f"{path}: {path.stat().st_size} bytes, over the {max_bytes}-byte limit for a result file")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultError(f"{path}: cannot be read as UTF-8 text ({exc})") from None
    try:
        data = strict_json_loads(text)
    except (json.JSONDecodeError, ValueError) as exc:
        raise ResultError(f"{path}: malformed JSON ({exc})") from None
    hidden = hidden_text(data)
    if hidden:
        raise ResultError(f"{path}: {hidden}")
    return data


# Every string of a result is shown somewhere (the board, `validate`, a terminal): a bidi override or
# a zero-width character in any of them (a version, a command, a note, a config value, a key) would
# make it read as something else, so a result holds plain text only, as a README and team.toml do.
_HIDDEN = ("Cc", "Cf", "Co", "Cs", "Zl", "Zp")


def hidden_text(data: object, where: str = "") -> str | None:
    """Where `data` (parsed JSON) holds a control, format or private-use character, or text not in
    NFC (a look-alike spelled with combining marks), and which; None if it holds none."""
    if isinstance(data, dict):
        for key, value in data.items():
            here = f"{where}.{key}" if where else str(key)
            found = hidden_text(key, f"{here} (its key)") or hidden_text(value, here)
            if found:
                return found
    elif isinstance(data, list):
        return next((f for i, v in enumerate(data) if (f := hidden_text(v, f"{where}[{i}]"))), None)
    elif isinstance(data, str):
        bad = next((c for c in data if unicodedata.category(c) in _HIDDEN and c not in "\n\t"), None)
        if bad is not None:
            return (f"{ascii(where)[1:-1][:120]} holds the control or format character {ascii(bad)} (bidi overrides, "
                    "zero-width and control characters can disguise what the board shows)")
        if unicodedata.normalize("NFC", data) != data:
            return f"{ascii(where)[1:-1][:120]} is not in Unicode NFC (combining marks can spell a look-alike)"
    return None
