"""VGG16 with BatchNorm as the model-inversion line (GMI, KEDMI, PLGMI) uses it for face identities.

Layout (KEDMI `classify.py`, class VGG16; Simonyan & Zisserman, ICLR'15, configuration D with BN):

    features: 13 conv3x3 + BN + ReLU in five blocks, each block closed by a 2x2 max-pool
    flatten -> [optional linear bottleneck] -> BatchNorm1d (bias frozen: "no shift") -> Linear

On 64x64 faces the flattened features are 512 x 2 x 2 = 2,048, the SoK's "bottleneck of 2,048";
on 32x32 (CIFAR-10, MNIST padded to 32) they are 512. The module indices of `features` are those
of torchvision's `vgg16_bn`, so its ImageNet weights load by name.

Adaptations, all off by default:
- `bottleneck=b`: a linear layer flat -> b before the BatchNorm1d, for the SoK's bottleneck
  ablation (2,048 -> 512 -> 128, Table 6). The SoK does not say how the width was reduced; a
  projection keeps every layer before it identical to the original.
- `group_norm=g`: GroupNorm (Wu & He, ECCV'18) with gcd(g, C) groups instead of BatchNorm: per-sample
  gradients, which DP-SGD needs, are not defined through batch statistics (opacus refuses BN).
- `width_div=k`: every conv width divided by k, for fast tests only.
- A max-pool that would shrink the map below 1x1 is skipped (an Identity at the same index), so
  that the 8x8 `digits` stand-in fits; at 32x32 and above nothing changes.
Inputs are pixels in [0, 1], (N, C, H, W), as everywhere in the toolkit; no normalisation layer
(KEDMI feeds `ToTensor()` output straight in).
"""

from __future__ import annotations

import math

import torch
from torch import nn

# Configuration "D" of Simonyan & Zisserman (Table 1): conv widths, "M" = 2x2 max-pool.
VGG16_LAYERS = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")


def norm2d(channels: int, group_norm: int) -> nn.Module:
    return nn.GroupNorm(math.gcd(group_norm, channels), channels) if group_norm else nn.BatchNorm2d(channels)


class VGG16(nn.Module):
    def __init__(self, in_channels: int = 3, num_classes: int = 1000, image_size: int = 64, bottleneck: int = 0,
                 group_norm: int = 0, width_div: int = 1):
        super().__init__()
        layers: list[nn.Module] = []
        channels, size = in_channels, image_size
        for item in VGG16_LAYERS:
            if item == "M":
                layers.append(nn.MaxPool2d(2) if size >= 2 else nn.Identity())
                size = max(size // 2, 1)
            else:
                width = max(int(item) // width_div, 1)
                layers += [nn.Conv2d(channels, width, 3, padding=1), norm2d(width, group_norm), nn.ReLU()]
                channels = width
        self.features = nn.Sequential(*layers)
        self.feat_dim = channels * size * size
        self.project = nn.Linear(self.feat_dim, bottleneck) if bottleneck else nn.Identity()
        width = bottleneck or self.feat_dim
        self.bn = nn.GroupNorm(math.gcd(group_norm, width), width) if group_norm else nn.BatchNorm1d(width)
        self.bn.bias.requires_grad_(False)  # KEDMI: "no shift"
        self.fc = nn.Linear(width, num_classes)
        for m in self.modules():  # He et al. (ICCV'15) init for convs, as torchvision's VGG
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                nn.init.zeros_(m.bias)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """The bottleneck features (what the SoK's ablation shrinks), before the last linear layer."""
        return self.bn(self.project(torch.flatten(self.features(x), 1)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.embed(x))
