"""Black-box access: counted query functions, and the errors of the threat-model harness.

The lowest layer of the harness: `knowledge` (the views) and `dynamic` (the update's views) both
build on it, so neither imports the other's internals (no import circle).
"""

from __future__ import annotations

import torch
from torch import nn

from reconbench.core.scenario import DEFAULT_QUERY_BUDGET  # images; black-box attacks record what they used in provenance


class KnowledgeError(Exception):
    """An attack asked for knowledge its scenario does not give."""


class QueryBudgetExceeded(KnowledgeError):
    pass


def check_query_shape(shape: tuple[int, ...], input_shape: tuple[int, ...]) -> None:
    if len(shape) != 4 or tuple(shape[1:]) != tuple(input_shape):
        raise ValueError(f"query expects (N, {', '.join(map(str, input_shape))}), got {tuple(shape)}")


class QueryFunction:
    """Black-box access: output probabilities only, no gradients, every image counted.

    Parent-side object: in an evaluation it lives in the evaluator's process, and the attack's
    process holds a `reconbench.pipeline.isolation.child.RemoteQuery` that forwards images to it."""

    def __init__(self, model: nn.Module, input_shape: tuple[int, int, int], budget: int, device: torch.device):
        self._model = model
        self._input_shape = tuple(input_shape)
        self._device = device
        self.budget = budget
        self.queries = 0

    def _charge(self, n: int) -> None:
        if self.queries + n > self.budget:
            raise QueryBudgetExceeded(f"query budget of {self.budget} images exhausted ({self.queries} used, {n} asked)")

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        check_query_shape(tuple(x.shape), self._input_shape)
        self._charge(int(x.shape[0]))
        self.queries += int(x.shape[0])
        with torch.no_grad():
            probs = torch.softmax(self._model(x.detach().to(self._device).clamp(0, 1)), dim=1)
        return probs.detach()

    def __getattr__(self, name: str):
        # Keeps `query.parameters()`, `query.state_dict()` and friends from leaking the module.
        raise KnowledgeError(f"black-box access gives output probabilities only, not '{name}'")


class LinkedQueryFunction(QueryFunction):
    """A QueryFunction on another model version that also charges a shared counter and budget."""

    def __init__(self, model: nn.Module, shared: QueryFunction, input_shape: tuple[int, int, int], device: torch.device):
        super().__init__(model, input_shape, shared.budget, device)
        self._shared = shared

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        n = int(x.shape[0]) if x.ndim == 4 else 0
        self._shared._charge(n)
        probs = super().__call__(x)  # checks the shape, counts this version's share
        self._shared.queries += n
        return probs
