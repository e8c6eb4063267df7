"""Scoring an attack's reconstructions against the uniform-noise baseline the attack tests share."""

from __future__ import annotations

import torch

from reconbench.image.metrics import score


def score_against_noise(rec, target):
    """(report of `rec`, report of uniform noise with the same labels and shape), both scored
    against `target` with the SoK pixel metrics (no LPIPS/FID); the noise is seeded, so fixed."""
    labels = rec.labels.numpy()
    noise = (torch.rand(rec.images.shape, generator=torch.Generator().manual_seed(0)) * 255).to(torch.uint8).numpy()
    ours = score(rec.to_uint8().numpy(), labels, target.images, target.labels, lpips=False, fid=False)
    return ours, score(noise, labels, target.images, target.labels, lpips=False, fid=False)
