"""Finding and loading the pretrained backbones (AlexNet for LPIPS, InceptionV3 for FID) offline.

Nothing here downloads. A backbone is looked for, in order:
  1. `weights_dir/<name>.safetensors` (a conversion of the official file: safe to load, checked
     key by key and shape by shape by `load_state_dict(strict=True)`; its sha256 is recorded);
  2. `weights_dir/<official file name>` and `<torch hub dir>/checkpoints/<official file name>`
     (where torch hub / lpips / pytorch-fid would have put it), accepted only if its sha256
     equals the pinned digest; only then is it opened, with `torch.load(weights_only=True)`.
If none is found the metric is reported as not computed; numbers from random weights are never
reported.

Pinned digests: the 8 hex digits in each file name are torch hub's hash prefix; the full sha256
values are those recorded independently by several public projects pinning the same release
files (they agree with the prefixes). They have not been re-derived here (no network).
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file

from reconbench.io import sha256_file


@dataclass(frozen=True)
class WeightSpec:
    filename: str  # official torch hub checkpoint name
    sha256: str  # pinned digest of that file
    size: int  # bytes, a cheap first check
    safetensors_name: str  # accepted conversion in weights_dir


ALEXNET = WeightSpec(
    filename="alexnet-owt-7be5be79.pth",
    sha256="7be5be791159472b1fbf3c69796f7cb30dca7ad8466c2df70058c37116cdee02",
    size=244_408_911,
    safetensors_name="alexnet-owt-7be5be79.safetensors",
)
FID_INCEPTION = WeightSpec(
    filename="pt_inception-2015-12-05-6726825d.pth",
    sha256="6726825d0af5f729cebd5821db510b11b1cfad8faad88a03f1befd49fb9129b2",
    size=95_628_359,
    safetensors_name="pt_inception-2015-12-05-6726825d.safetensors",
)


@dataclass(frozen=True)
class LoadedWeights:
    state_dict: dict[str, torch.Tensor]
    path: Path
    sha256: str


def hub_checkpoint_dir() -> Path:
    # torch.hub.get_dir() honours TORCH_HOME; it does not touch the network
    return Path(torch.hub.get_dir()) / "checkpoints"


def candidate_paths(spec: WeightSpec, weights_dir: str | os.PathLike | None) -> list[Path]:
    paths = []
    if weights_dir is not None:
        paths += [Path(weights_dir) / spec.safetensors_name, Path(weights_dir) / spec.filename]
    paths.append(hub_checkpoint_dir() / spec.filename)
    return paths


def load_weights(spec: WeightSpec, weights_dir: str | os.PathLike | None = None) -> LoadedWeights | None:
    """The backbone's state dict from the first acceptable local file, or None if there is none."""
    for path in candidate_paths(spec, weights_dir):
        if not path.is_file():
            continue
        if path.suffix == ".safetensors":
            return LoadedWeights(load_file(str(path)), path, sha256_file(path))
        digest = sha256_file(path) if path.stat().st_size == spec.size else "size mismatch"
        if digest != spec.sha256:
            # a different or corrupted file: never unpickle it
            warnings.warn(f"ignoring {path}: sha256 {digest} is not the pinned {spec.sha256}", stacklevel=2)
            continue
        state = torch.load(path, map_location="cpu", weights_only=True)
        return LoadedWeights(state, path, digest)
    return None
