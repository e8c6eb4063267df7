"""Deterministic training of a target model on an ArraySet (CPU, fixed seed, fixed batch order)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from reconbench.image.data.arrays import ArraySet


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 60
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.0
    seed: int = 0
    freeze_bn: bool = False  # BatchNorm keeps its initial statistics and affine parameters (SoK Table 7's "fixed")


def accuracy(model: nn.Module, data: ArraySet, device: str | torch.device = "cpu") -> float:
    model.eval()
    with torch.no_grad():
        pred = model(data.as_float(device)).argmax(1).cpu().numpy()
    return float((pred == data.labels).mean())


def train_classifier(model: nn.Module, data: ArraySet, config: TrainConfig, device: str | torch.device = "cpu") -> nn.Module:
    """Adam on cross-entropy with a seeded shuffling; returns the model in eval mode."""
    torch.manual_seed(config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    x, y = data.as_float(device), torch.from_numpy(data.labels).to(device)
    model.to(device).train()
    if config.freeze_bn:
        for bn in (m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)):
            bn.eval().requires_grad_(False)  # normalise with the initial statistics (0, 1), never update them
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=config.lr,
                           weight_decay=config.weight_decay)
    for _ in range(config.epochs):
        order = torch.randperm(len(data), generator=generator).to(device)
        for start in range(0, len(data), config.batch_size):
            idx = order[start : start + config.batch_size]
            opt.zero_grad(set_to_none=True)
            nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
    return model.eval()
