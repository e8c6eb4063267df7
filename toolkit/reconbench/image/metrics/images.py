"""Input checking shared by every metric: uint8 (N, C, H, W) images, C in {1, 3}, int64 labels.

Everything downstream assumes pixels are integers 0..255 (x / 255 in [0, 1]); we never rescale
floats silently, so a float array is an error, not a guess.
"""

from __future__ import annotations

import numpy as np
import torch


def as_uint8_images(images, name: str) -> torch.Tensor:
    """Return a CPU uint8 tensor (N, C, H, W) sharing memory with the input where possible."""
    t = torch.from_numpy(np.ascontiguousarray(images)) if isinstance(images, np.ndarray) else images
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a numpy array or torch tensor, got {type(images).__name__}")
    if t.dtype != torch.uint8:
        raise TypeError(f"{name}: expected uint8 pixels (0..255), got {t.dtype}")
    if t.ndim != 4 or t.shape[1] not in (1, 3):
        raise ValueError(f"{name}: expected shape (N, C, H, W) with C in {{1, 3}}, got {tuple(t.shape)}")
    if t.shape[0] == 0:
        raise ValueError(f"{name}: empty image set")
    return t.detach().cpu().contiguous()


def as_labels(labels, n: int, name: str) -> torch.Tensor:
    t = torch.from_numpy(np.asarray(labels)) if not isinstance(labels, torch.Tensor) else labels
    if t.ndim != 1 or t.shape[0] != n:
        raise ValueError(f"{name}: expected {n} labels, got shape {tuple(t.shape)}")
    if t.dtype.is_floating_point or t.dtype == torch.bool or t.dtype.is_complex:
        raise TypeError(f"{name}: labels must be integers, got {t.dtype}")
    return t.detach().cpu().to(torch.int64)


def check_pair(rec_images, rec_labels, tar_images, tar_labels):
    """Validate both sets and return (rec, rec_labels, tar, tar_labels) as CPU tensors."""
    rec = as_uint8_images(rec_images, "rec_images")
    tar = as_uint8_images(tar_images, "tar_images")
    if rec.shape[1:] != tar.shape[1:]:
        raise ValueError(f"reconstructions {tuple(rec.shape[1:])} and targets {tuple(tar.shape[1:])} differ in C, H, W")
    return rec, as_labels(rec_labels, rec.shape[0], "rec_labels"), tar, as_labels(tar_labels, tar.shape[0], "tar_labels")


def to_unit_float(images: torch.Tensor, dtype=torch.float32) -> torch.Tensor:
    """uint8 -> [0, 1] float, the pixel scale every metric here is defined on."""
    return images.to(dtype) / 255.0
