"""The threat-model harness: what an attack may see under a scenario (SoK Definition 3.1).

`build_knowledge(track, scenario)` returns a `Knowledge` view. It never holds the target set (nor
the update set of a dynamic scenario): those stay on the evaluator's side. Everything else is
handed out by the view only when the scenario allows it; asking for more raises KnowledgeError.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch
from torch import nn

from reconbench.data.arrays import ArraySet
from reconbench.scenario import Scenario
from reconbench.tracks import Track
from reconbench.track_files import load_splits, load_target_model

DEFAULT_QUERY_BUDGET = 1_000_000  # images; black-box attacks record what they used in provenance


class KnowledgeError(Exception):
    """An attack asked for knowledge its scenario does not give."""


class QueryBudgetExceeded(KnowledgeError):
    pass


class QueryFunction:
    """Black-box access: output probabilities only, no gradients, every image counted."""

    def __init__(self, model: nn.Module, input_shape: tuple[int, int, int], budget: int, device: torch.device):
        self._model = model
        self._input_shape = tuple(input_shape)
        self._device = device
        self.budget = budget
        self.queries = 0

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 4 or tuple(x.shape[1:]) != self._input_shape:
            raise ValueError(f"query expects (N, {', '.join(map(str, self._input_shape))}), got {tuple(x.shape)}")
        if self.queries + x.shape[0] > self.budget:
            raise QueryBudgetExceeded(
                f"query budget of {self.budget} images exhausted ({self.queries} used, {x.shape[0]} asked)"
            )
        self.queries += int(x.shape[0])
        with torch.no_grad():
            probs = torch.softmax(self._model(x.detach().to(self._device).clamp(0, 1)), dim=1)
        return probs.detach()

    def __getattr__(self, name: str):
        # Keeps `query.parameters()`, `query.state_dict()` and friends from leaking the module.
        raise KnowledgeError(f"black-box access gives output probabilities only, not '{name}'")


@dataclass
class Knowledge:
    """What the attacker knows: the scenario's view of the target, plus public facts of the track."""

    track_id: str
    scenario: Scenario
    num_classes: int
    input_shape: tuple[int, int, int]
    target_size: int  # |D_tar|: the required number of reconstructions (the SoK's size rule)
    device: torch.device
    query: QueryFunction
    _model: nn.Module | None = field(default=None, repr=False)
    _aux: ArraySet | None = field(default=None, repr=False)
    extras: dict[str, object] = field(default_factory=dict, repr=False)  # dynamic views live here

    @property
    def model(self) -> nn.Module:
        if self._model is None:
            raise KnowledgeError(f"scenario {self.scenario} is black-box: the model's parameters are not available")
        return self._model

    @property
    def aux_data(self) -> ArraySet:
        if self._aux is None:
            raise KnowledgeError(f"scenario {self.scenario} gives no auxiliary data")
        return self._aux

    def extra(self, name: str):
        if name not in self.extras:
            raise KnowledgeError(f"scenario {self.scenario} does not give '{name}'")
        return self.extras[name]


def check_attack_fits(attack_name: str, attack_scenarios: list[str] | tuple[str, ...], scenario: Scenario) -> None:
    """Refuse, before anything runs, an attack that needs more than the scenario gives."""
    needed = [Scenario.parse(s) for s in attack_scenarios]
    if not any(scenario.allows(n) for n in needed):
        raise KnowledgeError(
            f"attack '{attack_name}' needs one of [{', '.join(map(str, needed))}], "
            f"but scenario {scenario} gives less (or another training type)"
        )


def build_knowledge(
    track: Track,
    scenario: Scenario,
    *,
    device: str | torch.device = "cpu",
    query_budget: int = DEFAULT_QUERY_BUDGET,
    seed: int = 0,
) -> Knowledge:
    if not track.offers(scenario):
        raise KnowledgeError(f"track '{track.id}' does not offer scenario {scenario} (offers: {', '.join(track.scenarios)})")
    device = torch.device(device)
    # Only what the scenario may see is fetched (Hub tracks download per split): never the target set.
    parts = {"none": [], "same": ["aux_same"], "similar": ["aux_similar"]}[scenario.data]
    splits = load_splits(track, parts + (["update"] if scenario.training == "dynamic" else []))
    target = load_target_model(track, device=device)
    for p in target.parameters():
        p.requires_grad_(False)
    aux = {"none": None, "same": splits.aux_same, "similar": splits.aux_similar}[scenario.data]
    if scenario.data == "similar" and aux is None:
        raise KnowledgeError(f"track '{track.id}' has no similar-distribution data")
    knowledge = Knowledge(
        track_id=track.id,
        scenario=scenario,
        num_classes=track.num_classes,
        input_shape=tuple(track.input_shape),
        target_size=track.target_size(scenario),
        device=device,
        query=QueryFunction(target, tuple(track.input_shape), query_budget, device),
        _model=copy.deepcopy(target) if scenario.access == "white-box" else None,
        _aux=aux,
    )
    if scenario.training == "dynamic":
        from reconbench.dynamic import add_update_view

        add_update_view(knowledge, track, splits, target, seed=seed)
    return knowledge
