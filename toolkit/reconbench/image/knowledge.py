"""The threat-model harness: what an attack may see under a scenario (SoK Definition 3.1).

`build_knowledge(track, scenario)` returns a `Knowledge` view. It never holds the target set (nor
the update set of a dynamic scenario): those stay on the evaluator's side. Everything else is
handed out by the view only when the scenario allows it; asking for more raises KnowledgeError.

An evaluation does not hand this object to the attack: `reconbench.pipeline.isolation` runs the attack in
its own process and rebuilds there only what the scenario gives (black-box access becomes a pipe
to the query functions below, which stay in the evaluator's process).

Imports run one way: queries <- dynamic <- knowledge; the registry (tracks) is imported only
inside `build_knowledge`, so the attack's process, which imports this module for the `Knowledge`
class, never loads it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from reconbench.image.data.arrays import ArraySet
from reconbench.image.dynamic import UPDATE_RECIPE, UpdateRecipe, update_view
from reconbench.image.models.training import TrainConfig
from reconbench.core.queries import DEFAULT_QUERY_BUDGET, KnowledgeError, LinkedQueryFunction, QueryBudgetExceeded, QueryFunction
from reconbench.core.scenario import Scenario

if TYPE_CHECKING:
    from reconbench.core.tracks import Track

__all__ = [
    "DEFAULT_QUERY_BUDGET", "Knowledge", "KnowledgeError", "LinkedQueryFunction", "PublicFacts", "QueryBudgetExceeded",
    "QueryFunction", "build_knowledge", "check_attack_fits", "public_facts",
]


@dataclass(frozen=True)
class PublicFacts:
    """What the track publishes about its target, in every scenario: the attacker may use it
    (e.g. to train shadow models) without reaching for the registry.

    train_recipe: how the target was trained (the embedded tracks' recipe, models/embedded.py:
    Adam, 60 epochs, batches of 64, lr 1e-3; Hub tracks state the same default until the zoo
    publishes its recipes through the registry). update_recipe: how a dynamic scenario's update
    is made (reconbench.image.dynamic.UPDATE_RECIPE), None in static scenarios.
    """

    architecture: str
    arch_kwargs: dict[str, Any]
    input_shape: tuple[int, int, int]
    num_classes: int
    train_recipe: TrainConfig = TrainConfig()
    update_recipe: UpdateRecipe | None = None

    def new_model(self) -> nn.Module:
        """A freshly initialised module of the target's (public) architecture: no target weights."""
        from reconbench.image.models import build_model

        return build_model(self.architecture, **self.arch_kwargs)


@dataclass
class Knowledge:
    """What the attacker knows: the scenario's view of the target, plus public facts of the track."""

    track_id: str
    scenario: Scenario
    num_classes: int
    input_shape: tuple[int, int, int]
    target_size: int  # |D_tar|: the required number of reconstructions (the SoK's size rule)
    device: torch.device
    query: Any  # QueryFunction here; reconbench.pipeline.isolation.child.RemoteQuery in the attack's process
    public: PublicFacts
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


def public_facts(track: Track, scenario: Scenario) -> PublicFacts:
    return PublicFacts(
        architecture=track.architecture,
        arch_kwargs=dict(track.arch_kwargs),
        input_shape=tuple(track.input_shape),
        num_classes=track.num_classes,
        update_recipe=UPDATE_RECIPE if scenario.training == "dynamic" else None,
    )


def build_knowledge(
    track: Track,
    scenario: Scenario,
    *,
    device: str | torch.device = "cpu",
    query_budget: int | None = None,
    seed: int = 0,
) -> Knowledge:
    """The scenario's view of `track`; query_budget: the track's own (`Track.query_budget`) unless given."""
    from reconbench.image.track_files import load_splits, load_target_model  # the evaluator's side only

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
    budget = track.query_budget if query_budget is None else query_budget
    query = QueryFunction(target, tuple(track.input_shape), budget, device)
    white_box = copy.deepcopy(target) if scenario.access == "white-box" else None
    knowledge = Knowledge(
        track_id=track.id,
        scenario=scenario,
        num_classes=track.num_classes,
        input_shape=tuple(track.input_shape),
        target_size=track.target_size(scenario),
        device=device,
        query=query,
        public=public_facts(track, scenario),
        _model=white_box,
        _aux=aux,
    )
    if scenario.training == "dynamic":
        # `seed` (the run's seed) is deliberately not passed: the update is part of the track.
        knowledge.extras.update(update_view(scenario, track, splits, target, white_box, query, device))
    return knowledge
