"""PLG-MI's augmentations of generated images, differentiable, in plain torch (no kornia).

Official list (LetheSec/PLG-MI-Attack@3cf8735 train_cgan.py l.250-255, reconstruct.py l.66-71):
RandomResizedCrop(size, scale 0.8-1, ratio 1), ColorJitter(brightness 0.2, contrast 0.2; p 0.5 in
cGAN training, kornia's default p 1.0 in the attack), RandomHorizontalFlip, RandomRotation(5 deg).
The repo pins kornia 0.6.6, whose ColorJitter shifts brightness additively by factor - 1 in
[-0.2, 0.2] and scales contrast by a factor in [0.8, 1.2], each clamped to [0, 1], in a random order
per call; that is the behaviour pinned here. Crop, flip and rotation are composed into one bilinear
resampling with zero padding (kornia resamples once per step: a small, stated difference). The flip
is left out for digits (Architecture.flip), where a mirrored digit is another symbol.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def color_jitter(x: torch.Tensor, p: float, generator: torch.Generator, brightness: float = 0.2, contrast: float = 0.2) -> torch.Tensor:
    n = x.shape[0]
    apply = (torch.rand(n, generator=generator) < p).to(x)[:, None, None, None]
    shift = ((torch.rand(n, generator=generator) * 2 - 1) * brightness).to(x)[:, None, None, None]
    scale = (1 + (torch.rand(n, generator=generator) * 2 - 1) * contrast).to(x)[:, None, None, None]
    steps = [lambda t: (t + shift).clamp(0, 1), lambda t: (t * scale).clamp(0, 1)]
    if torch.rand(1, generator=generator).item() < 0.5:
        steps.reverse()
    out = x
    for step in steps:
        out = step(out)
    return apply * out + (1 - apply) * x


def geometric(x: torch.Tensor, generator: torch.Generator, *, flip: bool, max_degrees: float = 5.0,
              scale: tuple[float, float] = (0.8, 1.0)) -> torch.Tensor:
    """Random square crop of area fraction in `scale` resized back, optional flip, small rotation."""
    n = x.shape[0]
    side = torch.sqrt(torch.empty(n).uniform_(*scale, generator=generator))  # crop side / image side
    # the crop's centre, in [-1, 1] normalised coordinates, keeps the crop inside the image
    cx = (torch.rand(n, generator=generator) * 2 - 1) * (1 - side)
    cy = (torch.rand(n, generator=generator) * 2 - 1) * (1 - side)
    angle = (torch.rand(n, generator=generator) * 2 - 1) * math.radians(max_degrees)
    mirror = torch.where(torch.rand(n, generator=generator) < 0.5, -1.0, 1.0) if flip else torch.ones(n)
    cos, sin = torch.cos(angle), torch.sin(angle)
    theta = torch.zeros(n, 2, 3)
    theta[:, 0, 0], theta[:, 0, 1], theta[:, 0, 2] = side * cos * mirror, -side * sin, cx
    theta[:, 1, 0], theta[:, 1, 1], theta[:, 1, 2] = side * sin * mirror, side * cos, cy
    grid = F.affine_grid(theta.to(x), list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def plg_augment(x: torch.Tensor, generator: torch.Generator, *, jitter_p: float, flip: bool) -> torch.Tensor:
    return geometric(color_jitter(x, jitter_p, generator), generator, flip=flip)
