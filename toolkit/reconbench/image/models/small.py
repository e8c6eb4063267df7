"""The small targets of the embedded `digits` track. Inputs are pixels in [0, 1], (N, C, H, W)."""

from __future__ import annotations

import torch
from torch import nn


class SmallCNN(nn.Module):
    """Two conv blocks with BatchNorm (so that DeepInversion has running statistics to match)."""

    def __init__(self, in_channels: int = 1, num_classes: int = 10, image_size: int = 8, width: int = 16):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, padding=1, bias=False),
            nn.BatchNorm2d(2 * width),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        flat = 2 * width * (image_size // 2) ** 2
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(flat, 64), nn.ReLU(), nn.Linear(64, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


class HomogeneousMLP(nn.Module):
    """Bias-free ReLU MLP: positively homogeneous, as Bias-Rec (Haim et al., NeurIPS'22) requires."""

    def __init__(self, in_features: int = 64, num_classes: int = 10, hidden: int = 128, depth: int = 2):
        super().__init__()
        layers: list[nn.Module] = [nn.Flatten()]
        width = in_features
        for _ in range(depth):
            layers += [nn.Linear(width, hidden, bias=False), nn.ReLU()]
            width = hidden
        layers.append(nn.Linear(width, num_classes, bias=False))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)
