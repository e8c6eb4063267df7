"""Small pieces the three GAN attacks share."""

from __future__ import annotations

from collections.abc import Iterator

import torch

from reconbench.image.attacks.base import AttackError
from reconbench.image.knowledge import Knowledge


def aux_images(knowledge: Knowledge, minimum: int) -> torch.Tensor:
    """The attacker's auxiliary images in [0, 1] on the attack's device (labels are never used:
    GMI trains on images alone, KEDMI and PLG-MI label them with the target)."""
    aux = knowledge.aux_data
    if len(aux) < minimum:
        raise AttackError(f"the GAN prior needs at least {minimum} auxiliary images, the scenario gives {len(aux)}")
    return aux.as_float(knowledge.device)


def chunks(n: int, size: int) -> Iterator[slice]:
    for start in range(0, n, size):
        yield slice(start, min(n, start + size))


def slot_generator(seed: int, stream: int) -> torch.Generator:
    """A CPU generator per (run seed, purpose): restart r of Revealer, the samples of KEDMI, ..."""
    return torch.Generator().manual_seed(seed * 1_000_003 + stream)
