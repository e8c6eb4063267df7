"""ResNet-18 (He et al., CVPR'16), torchvision's module names, sized for small images.

- image_size <= 32: the CIFAR stem of the paper's Sec. 4.2 (one 3x3 conv, stride 1, no max-pool),
  so that a 32x32 image is not reduced to 8x8 before the first block;
- larger images (64x64 faces): the ImageNet stem (7x7 conv, stride 2, then a 3x3 max-pool).
`group_norm=g` swaps every BatchNorm for GroupNorm with gcd(g, C) groups (DP-SGD, see vgg.py).
Inputs are pixels in [0, 1]. Module names are torchvision's, so its ImageNet weights load by name
(all but `conv1` when the stem or the input channels differ).
"""

from __future__ import annotations

import math
from functools import partial

from torch import nn
from torchvision.models.resnet import BasicBlock, ResNet


def _group_norm(channels: int, groups: int) -> nn.GroupNorm:
    return nn.GroupNorm(math.gcd(groups, channels), channels)


class ResNet18(ResNet):
    def __init__(self, in_channels: int = 3, num_classes: int = 10, image_size: int = 32, group_norm: int = 0):
        norm = partial(_group_norm, groups=group_norm) if group_norm else None
        super().__init__(BasicBlock, [2, 2, 2, 2], num_classes=num_classes, norm_layer=norm)
        if image_size <= 32:
            self.conv1 = nn.Conv2d(in_channels, 64, 3, stride=1, padding=1, bias=False)
            self.maxpool = nn.Identity()
        elif in_channels != 3:
            self.conv1 = nn.Conv2d(in_channels, 64, 7, stride=2, padding=3, bias=False)
        nn.init.kaiming_normal_(self.conv1.weight, mode="fan_out", nonlinearity="relu")
