"""GMI's MNIST classifiers (github.com/AI-secure/GMI-Attack @ dac39bc, MNIST/classify.py), at 32x32.

MCNN (l.15-39) is GMI's MNIST target and SCNN (l.41-71) its evaluation classifier; both take
1x32x32 images and end in a linear layer on a flat feature. `width` scales every channel count
(GMI: 64 for MCNN, 32 for SCNN); the Fashion-MNIST tracks use 16 and 8 to keep the shipped
weights small (~0.26 MB and ~0.45 MB). They return logits only (GMI returns [feature, logits]:
the toolkit reads features from the last linear layer's input instead).
"""

from __future__ import annotations

import torch
from torch import nn


class MCNN(nn.Module):
    """conv7-BN-LReLU-pool, conv5-BN-LReLU-pool, conv5-BN-LReLU (to 1x1), linear: GMI's MNIST target."""

    def __init__(self, in_channels: int = 1, num_classes: int = 10, width: int = 64, norm: str = "batch"):
        super().__init__()
        if norm not in ("batch", "group"):
            raise ValueError(f"MCNN norm={norm!r}: expected 'batch' or 'group'")

        def norm_layer(c: int) -> nn.Module:
            # "group": DP-SGD needs per-sample gradients, which BatchNorm mixes across a batch (the zoo's
            # DP variant does the same; 8 channels a group)
            return nn.BatchNorm2d(c) if norm == "batch" else nn.GroupNorm(max(1, c // 8), c)

        self.feature = nn.Sequential(
            nn.Conv2d(in_channels, width, 7, stride=1, padding=1), norm_layer(width), nn.LeakyReLU(0.2),
            nn.MaxPool2d(2, 2),
            nn.Conv2d(width, 2 * width, 5, stride=1), norm_layer(2 * width), nn.LeakyReLU(0.2),
            nn.MaxPool2d(2, 2),
            nn.Conv2d(2 * width, 4 * width, 5, stride=1), norm_layer(4 * width), nn.LeakyReLU(0.2),
        )
        self.fc_layer = nn.Linear(4 * width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc_layer(self.feature(x).flatten(1))


class SCNN(nn.Module):
    """Five conv-BN-LReLU layers (two pools) to a 1x1 map, linear: GMI's MNIST evaluation classifier."""

    def __init__(self, in_channels: int = 1, num_classes: int = 10, width: int = 32):
        super().__init__()

        def block(cin: int, cout: int, k: int, p: int) -> list[nn.Module]:
            return [nn.Conv2d(cin, cout, k, stride=1, padding=p), nn.BatchNorm2d(cout), nn.LeakyReLU(0.2)]

        w = width
        self.feature = nn.Sequential(
            *block(in_channels, w, 7, 1), nn.MaxPool2d(2, 2),
            *block(w, 2 * w, 5, 0), nn.MaxPool2d(2, 2),
            *block(2 * w, 4 * w, 5, 0), *block(4 * w, 8 * w, 3, 1), *block(8 * w, 16 * w, 3, 1),
        )
        self.fc_layer = nn.Linear(16 * w, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc_layer(self.feature(x).flatten(1))
