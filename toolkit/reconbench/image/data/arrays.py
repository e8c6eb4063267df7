"""The one in-memory form of every image set: uint8 pixels (N, C, H, W) and int64 labels."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch


@dataclass(frozen=True)
class ArraySet:
    images: np.ndarray  # uint8 (N, C, H, W)
    labels: np.ndarray  # int64 (N,)

    def __post_init__(self) -> None:
        if self.images.dtype != np.uint8 or self.images.ndim != 4:
            raise ValueError(f"images must be uint8 (N, C, H, W), got {self.images.dtype} {self.images.shape}")
        if self.labels.dtype != np.int64 or self.labels.shape != (self.images.shape[0],):
            raise ValueError(f"labels must be int64 ({self.images.shape[0]},), got {self.labels.dtype} {self.labels.shape}")

    def __len__(self) -> int:
        return int(self.images.shape[0])

    @property
    def sha256(self) -> str:
        """Content hash: shapes, then the raw bytes of images and labels (little-endian, C order)."""
        h = hashlib.sha256()
        h.update(repr((tuple(self.images.shape), tuple(self.labels.shape))).encode())
        h.update(np.ascontiguousarray(self.images).tobytes())
        h.update(np.ascontiguousarray(self.labels.astype("<i8")).tobytes())
        return h.hexdigest()

    def as_float(self, device: str | torch.device = "cpu") -> torch.Tensor:
        """Pixels in [0, 1], the space every model and attack of the toolkit works in."""
        return torch.from_numpy(self.images).to(device=device, dtype=torch.float32) / 255.0

    def subset(self, index: np.ndarray) -> "ArraySet":
        return ArraySet(self.images[index], self.labels[index])

    def save(self, path: Path) -> None:
        from reconbench.core.io import save_arrays

        save_arrays(path, {"images": self.images, "labels": self.labels})

    @classmethod
    def load(cls, path: Path) -> "ArraySet":
        from reconbench.core.io import load_arrays

        arrays = load_arrays(path, required={"images": np.uint8, "labels": np.int64})
        return cls(arrays["images"], arrays["labels"])


@dataclass(frozen=True)
class TrackSplits:
    """Disjoint splits of one dataset. The attacker never receives `target` or `update`."""

    target: ArraySet  # D_tar of the static setting: the target model's training set
    update: ArraySet | None  # D_tar of the dynamic setting: the update set (SoK Def. 3.2)
    aux_same: ArraySet  # same-distribution auxiliary data, disjoint from both
    test: ArraySet  # held out: accuracy only
    aux_similar: ArraySet | None = None  # similar-distribution auxiliary data, where a track has it
    # The membership gap's non-members (reconbench.core.membership), evaluator's side only: as many
    # images of each class as `target` (holdout) or `update` (update_holdout) holds, never trained on
    # by any shipped model and never in an attack's view.
    holdout: ArraySet | None = None
    update_holdout: ArraySet | None = None

    def members(self, dynamic: bool) -> ArraySet | None:
        """D_tar of the setting: the update set (dynamic) or the target set (static)."""
        return self.update if dynamic else self.target

    def non_members(self, dynamic: bool) -> ArraySet | None:
        """The holdout matched to D_tar of the setting."""
        return self.update_holdout if dynamic else self.holdout
