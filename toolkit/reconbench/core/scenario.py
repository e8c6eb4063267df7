"""The paper's Definition 3.1: extra knowledge K = (training type, model access, data access)."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict

Training = Literal["static", "dynamic"]
Access = Literal["white-box", "black-box"]
DataAccess = Literal["none", "similar", "same"]

# Images an attacker may query the target with in one run, where a track states no `query_budget`
# (tracks.Track.query_budget: the budget is the track's, so every entry of a track had the same one).
DEFAULT_QUERY_BUDGET = 1_000_000


class Scenario(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    training: Training
    access: Access
    data: DataAccess

    @classmethod
    def parse(cls, text: str) -> "Scenario":
        """Parse 'static/white-box/none' (the form used in the registry, results and the CLI)."""
        parts = text.strip().split("/")
        if len(parts) != 3:
            raise ValueError(f"scenario '{text}' must be training/access/data, e.g. static/white-box/none")
        training, access, data = parts
        for value, kind in ((training, Training), (access, Access), (data, DataAccess)):
            if value not in get_args(kind):
                raise ValueError(f"scenario '{text}': '{value}' is not one of {', '.join(get_args(kind))}")
        return cls(training=training, access=access, data=data)

    def __str__(self) -> str:
        return f"{self.training}/{self.access}/{self.data}"

    def allows(self, needed: "Scenario") -> bool:
        """True when this scenario gives at least the knowledge `needed` asks for.

        White-box includes black-box (a module can be queried); same-distribution data is more
        than similar, which is more than none. Training type must match: a dynamic view (an
        update) is a different object, not more of the same.
        """
        order = {"none": 0, "similar": 1, "same": 2}
        return (
            self.training == needed.training
            and (self.access == needed.access or self.access == "white-box")
            and order[self.data] >= order[needed.data]
        )
