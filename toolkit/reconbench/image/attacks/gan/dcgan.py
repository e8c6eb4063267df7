"""The DCGAN-style networks of GMI (Revealer) and KEDMI, at any size that halves down to a few pixels.

Sources (read, not copied): AI-secure/GMI-Attack@dac39bc `Celeba/generator.py` (Generator, l.4-29),
`Celeba/discri.py` (DGWGAN, l.29-50); SCccc21/Knowledge-Enriched-DMI@1ec92f4 `discri.py`
(MinibatchDiscrimination l.7-32, MinibatchDiscriminator l.34-70). The official 64x64 pairs are
`paper_generator()` etc. in architectures.py; the digits pairs are the same layer types with fewer
stages (see architectures.py for both specs).
"""

from __future__ import annotations

import torch
from torch import nn


class DCGenerator(nn.Module):
    """z -> Linear (no bias) + BN1d + ReLU to (width*2^(n_up-1), bottom, bottom), then n_up-1
    ConvTranspose k5 s2 p2 op1 + BN + ReLU stages halving the width, then a ConvTranspose to the
    image channels and a sigmoid: pixels in [0, 1] (GMI generator.py l.7-23; KEDMI's is identical)."""

    def __init__(self, z_dim: int, channels: int, width: int, bottom: int, n_up: int):
        super().__init__()
        top = width * 2 ** (n_up - 1)
        self.z_dim, self.top, self.bottom = z_dim, top, bottom
        self.project = nn.Sequential(nn.Linear(z_dim, top * bottom * bottom, bias=False),
                                     nn.BatchNorm1d(top * bottom * bottom), nn.ReLU())
        layers: list[nn.Module] = []
        c = top
        for _ in range(n_up - 1):
            layers += [nn.ConvTranspose2d(c, c // 2, 5, 2, padding=2, output_padding=1, bias=False),
                       nn.BatchNorm2d(c // 2), nn.ReLU()]
            c //= 2
        layers += [nn.ConvTranspose2d(c, channels, 5, 2, padding=2, output_padding=1), nn.Sigmoid()]
        self.up = nn.Sequential(*layers)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.up(self.project(z).view(z.shape[0], self.top, self.bottom, self.bottom))


def _conv_in_lrelu(cin: int, cout: int, k: int, s: int, p: int) -> nn.Sequential:
    # InstanceNorm stands in for LayerNorm, as the official comment says (GMI discri.py l.36-38).
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, p), nn.InstanceNorm2d(cout, affine=True), nn.LeakyReLU(0.2))


class WGANCritic(nn.Module):
    """GMI's DGWGAN: Conv k5 s2 + LeakyReLU (no norm), n_down-1 Conv k5 s2 + IN + LeakyReLU stages
    doubling the width, then a valid conv to one score per image (no sigmoid)."""

    def __init__(self, channels: int, width: int, n_down: int, final_kernel: int):
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(channels, width, 5, 2, 2), nn.LeakyReLU(0.2)]
        c = width
        for _ in range(n_down - 1):
            layers.append(_conv_in_lrelu(c, c * 2, 5, 2, 2))
            c *= 2
        layers.append(nn.Conv2d(c, 1, final_kernel))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).view(-1)


class MinibatchDiscrimination(nn.Module):
    """Salimans et al.'s minibatch features as in KEDMI discri.py l.7-32 (T ~ N(0, 1), L1 distances,
    o_b(i) = sum_{j != i} exp(-|M_i,b - M_j,b|_1)). With that init the distances are in the hundreds
    and exp underflows to 0 (measured, see the digest): kept for fidelity, not for effect."""

    def __init__(self, in_features: int, kernels: int = 64, kernel_dims: int = 50):
        super().__init__()
        self.kernels, self.kernel_dims = kernels, kernel_dims
        self.T = nn.Parameter(torch.randn(in_features, kernels * kernel_dims))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def project(v: torch.Tensor) -> torch.Tensor:
            return (v @ self.T).view(-1, self.kernels, self.kernel_dims).transpose(0, 1)  # B x N x C

        with torch.no_grad():
            m = project(x)
            l1 = torch.cdist(m, m, p=1) + torch.eye(m.shape[1], device=m.device) * 1e4  # B x N x N
        if x.dtype == torch.float32 and bool((l1 > 110).all()):
            # exp(-d) underflows to exactly 0 in float32 beyond d ~ 104, so the features and their
            # gradient are exactly 0: skip the slow differentiable pass (bit-identical result)
            return torch.cat([x, x.new_zeros(x.shape[0], self.kernels)], 1)
        m = project(x)
        return torch.cat([x, (torch.exp(-torch.cdist(m, m, p=1)).sum(2) - 1).T], 1)


class KPlus1Discriminator(nn.Module):
    """KEDMI's MinibatchDiscriminator: IN conv stages (the first one normalised too), one k3 s2 p1
    stage, minibatch discrimination, then a linear head with one logit per real class; the fake
    class's logit is an implicit 0. Returns (features, logits) like the official forward (l.54-70)."""

    def __init__(self, channels: int, k5_widths: tuple[int, ...], k3_width: int, num_classes: int, feature_size: int):
        super().__init__()
        layers, c = [], channels
        for w in k5_widths:
            layers.append(_conv_in_lrelu(c, w, 5, 2, 2))
            c = w
        layers.append(_conv_in_lrelu(c, k3_width, 3, 2, 1))
        self.convs = nn.Sequential(*layers)
        features = k3_width * feature_size * feature_size
        self.mbd = MinibatchDiscrimination(features)
        self.head = nn.Linear(features + self.mbd.kernels, num_classes)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        feat = self.convs(x).flatten(1)
        return feat, self.head(self.mbd(feat))
