"""What every check shares: the Check record, the per-entry context, and the failure signal."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    from reconbench.image.results import ResultFile
    from reconbench.core.scenario import Scenario
    from reconbench.submissions.board import Board
    from reconbench.submissions.layout import Unit
    from reconbench.submissions.team import Team
    from reconbench.core.tracks import Track

Status = Literal["pass", "fail", "not-run", "warn"]
# "reproduced" needs someone else to have re-run the attack from the signed code, seed and config
# and signed a record within tolerance (checks/reproduction.py; docs/architecture.md, Trust).
# "held": near-copies of public images (checks/nearcopies.py); listed with the evidence, never ranked.
TrustLevel = Literal["failed", "held", "signed", "re-scored", "reproduced"]


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    message: str
    details: tuple[str, ...] = ()  # more lines: every problem found, offending indices, ...

    def to_dict(self) -> dict:
        return {"name": self.name, "status": self.status, "message": self.message, "details": list(self.details)}


class CheckFailed(Exception):
    """Raised inside a check: the entry fails this check with this message (and stops here)."""

    def __init__(self, message: str, details: list[str] | tuple[str, ...] = ()):
        super().__init__(message)
        self.message = message
        self.details = tuple(details)


def require_signed_sha256(path: Path, signed: str) -> None:
    """The file's bytes are the ones the result signed (image and text reconstructions alike)."""
    from reconbench.core.io import sha256_file

    actual = sha256_file(path)
    if actual != signed:
        raise CheckFailed(f"{path}: sha256 is {actual}, the signed result says {signed} "
                          "(the file was changed or swapped after signing)")


@dataclass
class Context:
    """What one entry's checks learn, in order; each check reads what the earlier ones left."""

    unit: Unit
    root: Path
    board: Board
    rescore: bool = True
    device: str = "cpu"
    weights_dir: Path | None = None
    team: Team | None = None
    result: ResultFile | None = None
    readme: str | None = None
    key_id: str | None = None
    track: Track | None = None
    scenario: Scenario | None = None
    recon_path: Path | None = None
    images: np.ndarray | None = None
    labels: np.ndarray | None = None
    texts: object | None = None  # a text entry's reconstructions (reconbench.text.items.TextSet), as signed
    target_texts: object | None = None  # a text entry's target split (TextSet), loaded by the text registry check
    text_flags: object | None = None  # the text copy rule's flags and pool names (checks/text_scores.py), computed once
    rescored: bool = False  # every claimed metric recomputed and within tolerance
    unverified: list[str] = field(default_factory=list)  # claimed metrics that could not be recomputed here
    exact_copies: dict[int, int] = field(default_factory=dict)  # reconstruction -> its exact target (checks/copies.py)
    held_reason: str | None = None  # set by the near-copy check: the entry is listed, not ranked
    replicate_of: Path | None = None  # the same run as this earlier entry, other reconstructions (checks/duplicates.py)
    evidence: dict = field(default_factory=dict)  # near-copy evidence: flagged, total, rows (checks/nearcopies.py)
    reproduced: bool = False  # a valid reproduction record with verdict "reproduced" (checks/reproduction.py)
    membership: dict = field(default_factory=dict)  # metric -> GapResult recomputed against the holdout (rescore)
    gaps: dict = field(default_factory=dict)  # metric -> metrics.membership.Gap (per-reconstruction best values)
    # metric -> GapResult of the reconstructions mirrored (held rule); None: deferred (rescore.deferred_mirrored)
    mirrored: dict | None = field(default_factory=dict)
    record_lifts: Callable[[], bool] | None = None  # whether the entry's own reproduction record is accepted
    seal_key: bytes | None = None  # the board's seal key (validate --seal-key): sealed tracks' numbers (checks/sealed.py)
    write_sealed: bool = False  # write a missing sealed.json (maintainers, with the key)
    sealed: dict | None = None  # a sealed entry's record: recomputed with the key, or as CI recorded it
    extraction: object | None = None  # core.extraction.ExtractionResult recomputed (rescore)
    recovery: object | None = None  # core.recovery.RecoveryResult computed at re-scoring (never claimed: checks/recovery.py)
    public_copies: list = field(default_factory=list)  # (reconstruction, public image, MSE) within the extraction threshold

    @property
    def entry_dir(self) -> Path:
        return self.unit.path

    @property
    def team_dir(self) -> Path:
        return self.unit.path.parent if self.unit.entry_id else self.unit.path
