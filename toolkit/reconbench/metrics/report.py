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

    def to_dict(self) -> dict[str, dict]:
        """JSON-ready form of the metrics (matches are left out: they are per-sample data)."""
        return {name: result.model_dump() for name, result in self.metrics.items()}

    def summary(self) -> dict[str, str]:
        return {name: result.format() for name, result in self.metrics.items()}
