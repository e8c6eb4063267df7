"""Result types of the metric suite: one value per metric, plus the nearest-neighbour maps.

`MetricResult` is what goes into a result file (pydantic, ``extra="forbid"``: a typo in a field
name is an error, not a silently dropped number). `ScoreReport` is the in-memory return value
of `score()`; its match arrays are for inspection and are not serialised.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator


class MetricResult(BaseModel):
    """One metric's outcome.

    value:    the S-Dis (sample level) or the dataset-level number; None when not computed.
    coverage: SoK coverage alpha in [0, 1] (sample-level metrics only; None for dataset level).
    status:   "computed" or "not_computed" (missing weights, disabled, too few samples).
    note:     why it was not computed, or a caveat about how it was computed.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: float | None = None
    coverage: float | None = Field(default=None, ge=0.0, le=1.0)
    status: Literal["computed", "not_computed"]
    note: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "MetricResult":
        if self.status == "computed":
            if self.value is None or not math.isfinite(self.value):
                raise ValueError("a computed metric needs a finite value")
        elif self.value is not None or self.coverage is not None:
            raise ValueError("a not_computed metric carries no value or coverage")
        return self

    @classmethod
    def not_computed(cls, note: str) -> "MetricResult":
        return cls(status="not_computed", note=note)

    def format(self, digits: int = 3) -> str:
        """Render as the SoK tables do: ``value (coverage%)``."""
        if self.status != "computed":
            return "n/a"
        text = f"{self.value:.{digits}f}"
        if self.coverage is not None:
            text += f" ({100 * self.coverage:.2f}%)"
        return text


class GapResult(BaseModel):
    """One metric's membership gap (metrics/membership.py), as a result file carries it.

    vs_target / vs_holdout: the metric against the target set and against the holdout (same engine);
    gap: signed so that positive = closer to the members; low, high: its 95% interval; p: one-sided
    (H1: gap > 0); per_class: each class's mean difference (images). status "not_applicable": the
    metric compares no image (Acc@1); "not_computed": as for its MetricResult (weights missing, ...).
    Dataset-level metrics (FID, PRDC) carry vs_target / vs_holdout / gap without interval or p.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    status: Literal["computed", "not_computed", "not_applicable"]
    vs_target: float | None = None
    vs_holdout: float | None = None
    gap: float | None = None
    low: float | None = None
    high: float | None = None
    p: float | None = Field(default=None, ge=0.0, le=1.0)
    per_class: dict[str, float] | None = Field(default=None, max_length=100_000)
    note: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "GapResult":
        numbers = (self.vs_target, self.vs_holdout, self.gap)
        if self.status == "computed":
            if any(v is None for v in numbers):
                raise ValueError("a computed gap needs vs_target, vs_holdout and gap")
            if (self.low is None) != (self.high is None) or (self.low is None) != (self.p is None):
                raise ValueError("a gap's interval and p come together")
            if self.low is not None and not self.low <= self.high:
                raise ValueError(f"interval [{self.low}, {self.high}] is empty")
        elif any(v is not None for v in numbers + (self.low, self.high, self.p)):
            raise ValueError(f"a {self.status} gap carries no numbers")
        return self

    @classmethod
    def not_computed(cls, note: str) -> "GapResult":
        return cls(status="not_computed", note=note)

    @classmethod
    def not_applicable(cls, note: str) -> "GapResult":
        return cls(status="not_applicable", note=note)

    @classmethod
    def of(cls, gap, note: str | None = None) -> "GapResult":
        """From a membership.Gap."""
        return cls(status="computed", vs_target=gap.vs_target, vs_holdout=gap.vs_holdout, gap=gap.gap,
                   low=gap.low, high=gap.high, p=gap.p, note=note or _p_note(gap),
                   per_class=dict(gap.per_group) if gap.per_group and list(gap.per_group) != ["all"] else None)

    def format(self, digits: int = 3) -> str:
        if self.status != "computed":
            return "n/a"
        if self.low is None:
            return f"{self.gap:+.{digits}f}"
        return f"{self.gap:+.{digits}f} [{self.low:+.{digits}f}, {self.high:+.{digits}f}]"


def _p_note(gap) -> str | None:
    if gap.p_method.startswith("permutation"):
        return None if gap.p_method == "permutation" else f"p: {gap.p_method}"
    return f"p <= 1/(B+1) = {gap.p:.2g}: no permutation of {gap.permutations} reached the gap"


@dataclass(frozen=True)
class ScoreReport:
    """metrics: name -> MetricResult for every name in METRICS (always all keys).

    matches: name -> int64 array of length N; matches[name][i] is the index (into the target set)
    of the target matched to reconstruction i by that metric's nearest-neighbour map, or -1 when
    the target set holds no image of reconstruction i's class. Present for the sample-level
    metrics that were computed ("mse", "psnr", "ssim", "lpips").

    provenance: what a result file should record next to the numbers (sha256 of the backbone
    files used, the SSIM window, the LPIPS input size), as strings.
    """

    metrics: dict[str, MetricResult]
    matches: dict[str, np.ndarray] = field(default_factory=dict)
    provenance: dict[str, str] = field(default_factory=dict)  # weight digests and settings used
    membership: dict[str, GapResult] = field(default_factory=dict)  # metric -> its gap, when a holdout was given
    gaps: dict = field(default_factory=dict)  # metric -> membership.Gap (per-reconstruction best values, for plots)
    extraction: object | None = None  # core.extraction.ExtractionResult, when a holdout and a calibration were given
    # class -> (rec idx, target idx, holdout idx, (n, P) matrix) per kernel ("mse", "ssim") when a holdout was
    # given (image/metrics/leakage.class_matrices): the recovery count reads the SSIM ones (never serialised)
    matrices: dict = field(default_factory=dict)

    def to_dict(self) -> dict[str, dict]:
        """JSON-ready form of the metrics (matches are left out: they are per-sample data)."""
        return {name: result.model_dump() for name, result in self.metrics.items()}

    def summary(self) -> dict[str, str]:
        return {name: result.format() for name, result in self.metrics.items()}


# What each number means, for the metric registries of both modalities (image/metrics/info.py,
# text/metrics/info.py) and the site.
@dataclass(frozen=True)
class MetricInfo:
    name: str
    formula: str
    range: str
    direction: Literal["↓", "↑"]
    level: Literal["sample", "dataset", "classifier"]  # classifier: judged by the track's evaluation model
    reference: str
    caveat: str = ""  # what a reader must know beside the number (shown with the column header)
