"""The text attack interface: a taxonomy cell, typed Options with budget presets, and exactly one
reconstruction per target id (the SoK's size rule, Def. 3.2, for per-sample text attacks)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from reconbench.core.progress import Progress
from reconbench.image.attacks.base import Attack
from reconbench.core.attack_errors import AttackError
from reconbench.core.attack_options import AttackOptions, Budget, resolve_options
from reconbench.text.items import TextItem

# Complete extracts memorised text by prompting (Carlini et al. 2021); Vec2Text trains an inverter
# (the SoK's "training-based" family, §2.2).
TextFamily = Literal["extraction", "training"]
Role = Literal["generator", "embedder"]
# A reconstruction longer than this is cut (characters): enough for any sentence or short document,
# and bounds what a result file can carry.
MAX_TEXT_CHARS = 10_000

__all__ = ["AttackError", "AttackOptions", "Progress", "TextAttack", "TextFamily", "TextReconstruction", "enforce_one_per_id"]


@dataclass(frozen=True)
class TextReconstruction:
    items: tuple[TextItem, ...]  # one per target id
    provenance: dict[str, int | float | str | bool | None] = field(default_factory=dict)


def enforce_one_per_id(rec: object, target_ids: tuple[str, ...] | list[str]) -> TextReconstruction:
    """Exactly one reconstruction per target id, returned in target order; anything else is refused.

    Unlike images (matched to targets by the metrics), a text reconstruction answers one target,
    so a missing, duplicated or unknown id is an error, not something to replicate around.
    """
    if not isinstance(rec, TextReconstruction):
        raise AttackError(f"the text attack's run() returned a {type(rec).__name__}, not a TextReconstruction")
    by_id: dict[str, str] = {}
    for item in rec.items:
        if not isinstance(item, TextItem) or not isinstance(item.id, str) or not isinstance(item.text, str):
            raise AttackError("a text reconstruction must be TextItem(id: str, text: str) items")
        if item.id in by_id:
            raise AttackError(f"the attack returned two reconstructions for target id '{item.id}'")
        by_id[item.id] = item.text
    wanted = list(target_ids)
    unknown = [i for i in by_id if i not in set(wanted)]
    if unknown:
        raise AttackError(f"the attack returned reconstructions for unknown id(s): {', '.join(unknown[:5])}")
    missing = [i for i in wanted if i not in by_id]
    if missing:
        raise AttackError(f"the attack returned no reconstruction for {len(missing)} target id(s), e.g. '{missing[0]}'")
    items = tuple(TextItem(i, by_id[i][:MAX_TEXT_CHARS]) for i in wanted)
    return TextReconstruction(items, dict(rec.provenance))


class TextAttack(ABC):
    """Subclass, set the class attributes, declare Options (and presets), implement `run`.

    Options and presets work as for image attacks (reconbench.core.attack_options): `Complete(budget="quick",
    max_new_tokens=32)` validates the defaults, then the preset, then the overrides.
    """

    name: ClassVar[str]
    paper: ClassVar[str]
    family: ClassVar[TextFamily]
    scenarios: ClassVar[tuple[str, ...]]
    role: ClassVar[Role]  # which of the track's target models it attacks
    version: ClassVar[str] = "1"
    Options: ClassVar[type[AttackOptions]] = AttackOptions
    presets: ClassVar[dict[str, dict[str, Any]]] = {}
    variant: ClassVar[str] = ""

    def __init__(self, budget: Budget = "default", **config: Any):
        self.budget = budget
        self.config: dict[str, Any] = resolve_options(type(self), budget, config)

    @abstractmethod
    def run(self, knowledge: Any, *, seed: int, progress: Progress) -> TextReconstruction:
        """One reconstruction per id in knowledge.target_ids (a reconbench.text.knowledge.TextKnowledge)."""

    code_reference = classmethod(Attack.code_reference.__func__)  # "module:Class", as image attacks record it
