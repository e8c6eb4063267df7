"""Label bookkeeping apart from quality.

A reconstruction whose label has no target of its class (a wrong label guess from an update, say)
has no pair to be compared with: the scorer gives it the metric's worst value (SSIM -1, MSE 1) and
says so in the metric's note (reconbench.image.metrics.score.sample_level). That count is a fact
about the labels, not about the pixels. This module reads it back from the note, so that a board
cell and a finding can show the quality of the reconstructions that do have a target, with the
wrong labels as a count of their own. Validation holds a claimed note's count to the recomputed one
(submissions/checks/rescore.compare): the board derives quality from it, so it is a claim like the value.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# score.sample_level: "{missing} of {n} reconstructions have no target of their class: scored {worst:g}, ..."
# classifier.py (KNN distance): "... scored at their farthest target" (no fixed value: not invertible)
_NOTE = re.compile(r"(\d+) of (\d+) reconstructions have no target of their class: scored (?:(-?[\d.e+-]+)|at)")


@dataclass(frozen=True)
class LabelsWrong:
    count: int  # reconstructions whose label has no target of its class
    total: int  # all reconstructions
    worst: float | None  # the value each of them was given (None: not a fixed value)

    def text(self) -> str:
        return f"{self.count} of {self.total} label wrong"

    def quality(self, mean: float) -> float | None:
        """The metric's mean over the reconstructions that have a target of their class: the mean
        over all, with the `count` fixed worst values taken out (None when it cannot be)."""
        if self.worst is None or self.count >= self.total:
            return None
        return (mean * self.total - self.count * self.worst) / (self.total - self.count)


def labels_wrong(note) -> LabelsWrong | None:
    """The label-bookkeeping count in a metric's note, or None when every label has its targets."""
    if not isinstance(note, str):
        return None
    match = _NOTE.search(note)
    if match is None or int(match.group(1)) == 0:
        return None
    worst = float(match.group(3)) if match.group(3) is not None else None
    return LabelsWrong(int(match.group(1)), int(match.group(2)), worst if worst is None or math.isfinite(worst) else None)
