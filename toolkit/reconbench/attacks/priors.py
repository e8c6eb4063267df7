"""Image priors and optimisation pieces shared by the optimisation-based attacks.

Kept in one place so that DeepDream, DeepInversion and the others use the same definitions.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn


def total_variation(x: torch.Tensor, p: int = 2) -> torch.Tensor:
    """R_tv: mean |x_{i+1,j} - x_{i,j}|^p + |x_{i,j+1} - x_{i,j}|^p per image, summed over the batch.

    p=2 is DeepInversion's `loss_var_l2`; p=1 its `loss_var_l1`.
    """
    dh = (x[..., 1:, :] - x[..., :-1, :]).abs().pow(p)
    dw = (x[..., :, 1:] - x[..., :, :-1]).abs().pow(p)
    return dh.flatten(1).mean(1).sum() + dw.flatten(1).mean(1).sum()


def l2_prior(x: torch.Tensor) -> torch.Tensor:
    """R_l2: the squared l2 norm of each image, summed over the batch."""
    return x.flatten(1).pow(2).sum(1).sum()


def jitter(x: torch.Tensor, max_shift: int, generator: torch.Generator) -> torch.Tensor:
    """Random roll by up to max_shift pixels (DeepDream/DeepInversion's jitter augmentation)."""
    if max_shift <= 0:
        return x
    dx, dy = torch.randint(-max_shift, max_shift + 1, (2,), generator=generator).tolist()
    return torch.roll(x, shifts=(dx, dy), dims=(-2, -1))


class BatchNormStatistics:
    """Collects, for every BatchNorm2d, ||mu_batch - running_mean||_2 + ||var_batch - running_var||_2.

    This is DeepInversion's feature-distribution regulariser R_feature (Yin et al., CVPR'20, Eq. 4).
    """

    def __init__(self, model: nn.Module):
        self.layers = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
        self.losses: list[torch.Tensor] = []

    def _hook(self, module: nn.BatchNorm2d, inputs: tuple[torch.Tensor, ...], _output: torch.Tensor) -> None:
        x = inputs[0]
        mean = x.mean(dim=(0, 2, 3))
        var = x.permute(1, 0, 2, 3).flatten(1).var(1, unbiased=False)
        self.losses.append(torch.norm(module.running_mean - mean, 2) + torch.norm(module.running_var - var, 2))

    @contextmanager
    def attached(self) -> Iterator["BatchNormStatistics"]:
        handles = [layer.register_forward_hook(self._hook) for layer in self.layers]
        try:
            yield self
        finally:
            for h in handles:
                h.remove()

    def pop(self) -> torch.Tensor:
        total = torch.stack(self.losses).sum() if self.losses else torch.zeros(())
        self.losses = []
        return total


def seeded_generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def batches(n: int, size: int) -> Iterator[slice]:
    for start in range(0, n, size):
        yield slice(start, min(n, start + size))
