"""PLG-MI's conditional ResNet generator and spectral-norm projection discriminator.

Sources (read, not copied): LetheSec/PLG-MI-Attack@3cf8735 `models/generators/resnet64.py`
(ResNetGenerator l.9-48), `models/generators/resblocks.py` (Block l.14-72),
`links/conditional_batchnorm.py` (CategoricalConditionalBatchNorm2d l.41-61),
`models/discriminators/snresnet64.py` (SNResNetProjectionDiscriminator l.11-54) and
`models/discriminators/resblocks.py` (Block l.10-53, OptimizedBlock l.56-81).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn import init
from torch.nn.utils import spectral_norm


class CategoricalBatchNorm(nn.BatchNorm2d):
    """BatchNorm without affine parameters, then a per-class gain (init 1) and bias (init 0)."""

    def __init__(self, num_classes: int, features: int):
        super().__init__(features, affine=False)
        self.gain, self.bias_table = nn.Embedding(num_classes, features), nn.Embedding(num_classes, features)
        init.ones_(self.gain.weight)
        init.zeros_(self.bias_table.weight)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return super().forward(x) * self.gain(y)[:, :, None, None] + self.bias_table(y)[:, :, None, None]


def _up(x: torch.Tensor) -> torch.Tensor:
    return F.interpolate(x, scale_factor=2, mode="bilinear")  # resblocks.py l.9-11


class UpBlock(nn.Module):
    """CBN(y) -> ReLU -> bilinear x2 -> conv3 -> CBN(y) -> ReLU -> conv3, plus bilinear x2 -> conv1."""

    def __init__(self, cin: int, cout: int, num_classes: int):
        super().__init__()
        self.b1, self.b2 = CategoricalBatchNorm(num_classes, cin), CategoricalBatchNorm(num_classes, cout)
        self.c1, self.c2, self.sc = nn.Conv2d(cin, cout, 3, 1, 1), nn.Conv2d(cout, cout, 3, 1, 1), nn.Conv2d(cin, cout, 1)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.c1(_up(F.relu(self.b1(x, y))))
        return self.sc(_up(x)) + self.c2(F.relu(self.b2(h, y)))


class CondResNetGenerator(nn.Module):
    """Linear z -> (width*2^n_up, bottom, bottom), n_up up-blocks halving the width, then an
    unconditional BN -> ReLU -> conv1x1 -> tanh. The official `_initialize` is never called, so
    PyTorch's default init applies (here too). The tanh output goes to D and T unchanged."""

    def __init__(self, z_dim: int, channels: int, width: int, bottom: int, n_up: int, num_classes: int):
        super().__init__()
        top = width * 2 ** n_up
        self.z_dim, self.top, self.bottom, self.num_classes = z_dim, top, bottom, num_classes
        self.project = nn.Linear(z_dim, top * bottom * bottom)
        self.blocks = nn.ModuleList(UpBlock(top // 2 ** i, top // 2 ** (i + 1), num_classes) for i in range(n_up))
        self.bn, self.out = nn.BatchNorm2d(width), nn.Conv2d(width, channels, 1)

    def forward(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.project(z).view(z.shape[0], self.top, self.bottom, self.bottom)
        for block in self.blocks:
            h = block(h, y)
        return torch.tanh(self.out(F.relu(self.bn(h))))


def _sn_conv(cin: int, cout: int, k: int, gain: float) -> nn.Module:
    conv = nn.Conv2d(cin, cout, k, 1, k // 2)
    init.xavier_uniform_(conv.weight, gain)  # the official init, applied to the weight SN wraps
    return spectral_norm(conv)


class DownBlock(nn.Module):
    """ReLU -> conv3 -> ReLU -> conv3 (-> avgpool), shortcut conv1 (-> avgpool); hidden width = input width."""

    def __init__(self, cin: int, cout: int, downsample: bool):
        super().__init__()
        self.downsample = downsample
        self.c1, self.c2 = _sn_conv(cin, cin, 3, math.sqrt(2)), _sn_conv(cin, cout, 3, math.sqrt(2))
        self.sc = _sn_conv(cin, cout, 1, 1.0) if (cin != cout or downsample) else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.c2(F.relu(self.c1(F.relu(x))))
        s = self.sc(x) if self.sc is not None else x
        if self.downsample:
            h, s = F.avg_pool2d(h, 2), F.avg_pool2d(s, 2)
        return s + h


class OptimizedBlock(nn.Module):
    """The first block: conv3 -> ReLU -> conv3 -> avgpool, shortcut avgpool -> conv1."""

    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.c1, self.c2, self.sc = _sn_conv(cin, cout, 3, math.sqrt(2)), _sn_conv(cout, cout, 3, math.sqrt(2)), _sn_conv(cin, cout, 1, 1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.sc(F.avg_pool2d(x, 2)) + F.avg_pool2d(self.c2(F.relu(self.c1(x))), 2)


class SNProjectionDiscriminator(nn.Module):
    """OptimizedBlock, then down-blocks given as (width, downsample), ReLU, a SUM over H and W, and
    SN-Linear(h) + <SN-Embedding(y), h> (the projection term)."""

    def __init__(self, channels: int, width: int, blocks: tuple[tuple[int, bool], ...], num_classes: int):
        super().__init__()
        layers: list[nn.Module] = [OptimizedBlock(channels, width)]
        c = width
        for cout, down in blocks:
            layers.append(DownBlock(c, cout, down))
            c = cout
        self.blocks = nn.Sequential(*layers)
        linear, embed = nn.Linear(c, 1), nn.Embedding(num_classes, c)
        init.xavier_uniform_(linear.weight)
        init.xavier_uniform_(embed.weight)
        self.linear, self.embed = spectral_norm(linear), spectral_norm(embed)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.blocks(x)).sum(dim=(2, 3))
        return (self.linear(h) + (self.embed(y) * h).sum(1, keepdim=True)).view(-1)
