"""The attack interface: every attack declares its taxonomy cell and returns |D_tar| images."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import torch

from reconbench.core.attack_errors import AttackError
from reconbench.core.attack_options import BUDGETS, AttackOptions, Auto, Budget, PositiveInt, resolve_options
from reconbench.core.progress import Progress
from reconbench.image.knowledge import Knowledge

Family = Literal["optimization", "training", "analysis"]
__all__ = [  # Options pieces re-exported: attack authors import everything from here
    "BUDGETS", "Attack", "AttackError", "AttackOptions", "Auto", "Budget", "Family", "PositiveInt", "Progress",
    "Reconstruction", "class_balanced_labels", "enforce_size",
]


@dataclass(frozen=True)
class Reconstruction:
    images: torch.Tensor  # float (N, C, H, W), pixels in [0, 1]
    labels: torch.Tensor  # int64 (N,)
    # Facts about the run for the result's provenance (e.g. a cached GAN prior's key and whether it
    # was trained in this run); they travel with the images, wherever the attack ran.
    provenance: dict[str, int | float | str | bool | None] = field(default_factory=dict)

    def to_uint8(self) -> torch.Tensor:
        return (self.images.detach().clamp(0, 1) * 255).round().to(torch.uint8).cpu()


def enforce_size(rec: Reconstruction, target_size: int, input_shape: tuple[int, ...]) -> Reconstruction:
    """The SoK's size rule (Def. 3.2): |D_rec| = |D_tar|; fewer are replicated cyclically.

    More than |D_tar| is refused: selecting among extra candidates is the attack's job and must
    not use the target set, so the harness will not pick for it.
    """
    check_reconstruction(rec)
    images, labels = rec.images.detach(), rec.labels.detach().to(torch.int64)
    if images.ndim != 4 or tuple(images.shape[1:]) != tuple(input_shape):
        raise AttackError(f"reconstructions must be (N, {', '.join(map(str, input_shape))}), got {tuple(images.shape)}")
    n = images.shape[0]
    if labels.shape != (n,):
        raise AttackError(f"labels must have shape ({n},), got {tuple(labels.shape)}")
    if n == 0:
        raise AttackError("the attack returned no reconstruction")
    if n > target_size:
        raise AttackError(f"the attack returned {n} reconstructions, more than |D_tar| = {target_size}")
    if not torch.isfinite(images).all():
        raise AttackError("reconstructions contain NaN or infinite pixels")
    if n < target_size:
        index = torch.arange(target_size) % n
        images, labels = images[index], labels[index]
    return Reconstruction(images.clamp(0, 1).float().cpu(), labels.cpu(), dict(rec.provenance))


# Pixels a little outside [0, 1] (an optimiser's overshoot) are clamped; further out means another
# scale (0-255, or tanh's [-1, 1]) and clamping would silently binarise or halve the image.
PIXEL_TOLERANCE = 0.5


def check_reconstruction(rec: object) -> None:
    """What run() returned is a Reconstruction of two tensors whose values mean what they say."""
    if not isinstance(rec, Reconstruction):
        raise AttackError(f"the attack's run() returned a {type(rec).__name__}, not a Reconstruction(images, labels)")
    if not (isinstance(rec.images, torch.Tensor) and isinstance(rec.labels, torch.Tensor)):
        raise AttackError("Reconstruction(images, labels) must hold two torch tensors")
    check_value_ranges(rec)


def check_value_ranges(rec: Reconstruction) -> None:
    """Refuse what clamping or casting would silently change: integer pixels, other scales, float labels."""
    images, labels = rec.images, rec.labels
    if not images.dtype.is_floating_point:
        raise AttackError(f"images are {str(images.dtype).removeprefix('torch.')}: return floats in [0, 1] "
                          "(for 0-255 images: images.float() / 255)")
    if labels.dtype.is_floating_point or labels.dtype == torch.bool:
        raise AttackError(f"labels are {str(labels.dtype).removeprefix('torch.')}: return int64 class indices "
                          "(e.g. logits.argmax(1)); they are not rounded for you")
    if images.numel() and torch.isfinite(images).all():
        low, high = float(images.min()), float(images.max())
        if low < -PIXEL_TOLERANCE or high > 1 + PIXEL_TOLERANCE:
            hint = " (0-255 images: divide by 255)" if high > 2 else " ([-1, 1] images: (x + 1) / 2)" if low < -0.5 else ""
            raise AttackError(f"pixel values span [{low:.3g}, {high:.3g}]: images must be floats in [0, 1]{hint}")


class Attack(ABC):
    """Subclass, set the class attributes, declare `Options` (and `presets`), implement `run`.

    `Attack(budget="quick", iterations=30)`: the Options' defaults, then the budget preset, then
    the keyword overrides, validated (attacks/options.py). `self.config` is the plain dict of the
    validated values; an attack may write a resolved "auto" budget back into it, so that the
    result records what ran.
    """

    name: ClassVar[str]
    paper: ClassVar[str]
    family: ClassVar[Family]
    scenarios: ClassVar[tuple[str, ...]]  # taxonomy cells it runs in, e.g. ("static/white-box/none",)
    version: ClassVar[str] = "1"
    Options: ClassVar[type[AttackOptions]] = AttackOptions
    presets: ClassVar[dict[str, dict[str, Any]]] = {}  # "quick"/"paper" -> changed options; "default" = Options
    variant: ClassVar[str] = ""  # a short note when the attack deviates from its paper (shown by `attacks NAME`)
    defaults: ClassVar[dict[str, Any]] = {}  # old style, still accepted: Options derived from it

    def __init__(self, budget: Budget = "default", **config: Any):
        self.budget = budget
        self.config: dict[str, Any] = resolve_options(type(self), budget, config)

    def seed_ignored(self) -> str | None:
        """Why this configuration's output does not depend on the seed (a deterministic start), or None.
        The duplicate rules then suggest what does change the output instead of another seed."""
        return None

    @abstractmethod
    def run(self, knowledge: Knowledge, *, seed: int, progress: Progress) -> Reconstruction:
        """Reconstruct |D_tar| = knowledge.target_size images (fewer are replicated by the harness)."""

    @classmethod
    def code_reference(cls) -> str:
        module = inspect.getmodule(cls)
        return f"{module.__name__ if module else '?'}:{cls.__qualname__}"


def class_balanced_labels(n: int, num_classes: int) -> torch.Tensor:
    """Labels for n reconstructions spread evenly over the classes (the attacker knows no class counts)."""
    return torch.arange(n, dtype=torch.int64) % num_classes
