"""The pretrained backbones (InceptionV3 for FID and PRDC, AlexNet for LPIPS): pins, where they live,
and loading them without unpickling anything unchecked.

Pins: official file name, official address, byte size and sha256 of each file. The sizes and
digests agree with several independent public projects pinning the same release files, and the
8 hex digits in each file name are torch hub's prefix of the same sha256.

Where a backbone is looked for, in order:
  1. the toolkit's cache, `$RECONBENCH_CACHE/weights` (default `~/.cache/reconbench/weights`,
     `$XDG_CACHE_HOME/reconbench/weights` when that is set): the safetensors conversion written by
     `recon-submit weights fetch` (download.py). Its metadata names the sha256 of the official file
     it came from; a conversion of any other file (other pins, stand-ins) is ignored;
  2. `weights_dir/<name>.safetensors` (a conversion the user made and points at explicitly);
  3. `weights_dir/<official file name>` and `<torch hub dir>/checkpoints/<official file name>`
     (where torch hub / lpips / pytorch-fid put it), accepted only when size and sha256 equal the
     pins; only then is it opened, with `torch.load(weights_only=True)`.
If none is found (and nothing may be downloaded) the metric is reported as not computed, with
the command that fetches the file; numbers from other or random weights are never reported.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file

from reconbench.core.cache import cache_root
from reconbench.core.io import sha256_file

FETCH_COMMAND = "recon-submit weights fetch"
MIRROR_ENV = "RECONBENCH_WEIGHTS_MIRROR"  # base URL serving the files under their official names


@dataclass(frozen=True)
class WeightSpec:
    key: str  # short name: "inception", "alexnet"
    filename: str  # official checkpoint name
    url: str  # official address
    size: int  # bytes
    sha256: str  # pinned digest of the official file
    used_by: str  # which metrics need it
    metrics: tuple[str, ...] = ()  # their names (the only metrics an honest result may leave not computed)

    @property
    def safetensors_name(self) -> str:
        return self.filename.removesuffix(".pth") + ".safetensors"


FID_INCEPTION = WeightSpec(
    key="inception",
    filename="pt_inception-2015-12-05-6726825d.pth",
    # pytorch-fid's FID_WEIGHTS_URL (pytorch_fid/inception.py): the `fid_weights` release
    url="https://github.com/mseitzer/pytorch-fid/releases/download/fid_weights/pt_inception-2015-12-05-6726825d.pth",
    size=95_628_359,
    sha256="6726825d0af5f729cebd5821db510b11b1cfad8faad88a03f1befd49fb9129b2",
    used_by="FID, PRDC",
    metrics=("fid", "prdc_precision", "prdc_recall", "prdc_density", "prdc_coverage"),
)
ALEXNET = WeightSpec(
    key="alexnet",
    filename="alexnet-owt-7be5be79.pth",
    # torchvision's AlexNet_Weights.IMAGENET1K_V1 (torchvision/models/alexnet.py)
    url="https://download.pytorch.org/models/alexnet-owt-7be5be79.pth",
    size=244_408_911,
    sha256="7be5be791159472b1fbf3c69796f7cb30dca7ad8466c2df70058c37116cdee02",
    used_by="LPIPS",
    metrics=("lpips",),
)

# The pins in force, by key. Only tests replace them (monkeypatching this private dict, to serve
# stand-in files); nothing a user sets (environment, options, files) reaches it.
_PINNED: dict[str, WeightSpec] = {s.key: s for s in (FID_INCEPTION, ALEXNET)}
# A metric that needs a downloaded backbone is "not computed" where its weights are missing; every
# other one evaluate computes for every result (validation refuses a result that hides one).
NEEDS_WEIGHTS = frozenset(m for s in (FID_INCEPTION, ALEXNET) for m in s.metrics)


def pinned(key: str) -> WeightSpec:
    return _PINNED[key]


def all_pinned() -> list[WeightSpec]:
    return list(_PINNED.values())


def cache_key() -> str:
    """A key naming exactly the pinned files (the CI cache of the converted weights uses it)."""
    return "reconbench-weights-" + "-".join(f"{s.key}-{s.sha256[:16]}" for s in all_pinned())


def weights_cache_dir() -> Path:
    return cache_root() / "weights"


def downloads_allowed() -> bool:
    """False under HF_HUB_OFFLINE=1 (set by `--offline` too): then nothing is downloaded."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() not in {"1", "ON", "YES", "TRUE"}


@dataclass(frozen=True)
class LoadedWeights:
    state_dict: dict[str, torch.Tensor]
    path: Path
    sha256: str  # of the official file (a cached conversion records it), else of the file read


def hub_checkpoint_dir() -> Path:
    # torch.hub.get_dir() honours TORCH_HOME; it does not touch the network
    return Path(torch.hub.get_dir()) / "checkpoints"


def cached_conversion(spec: WeightSpec) -> Path:
    return weights_cache_dir() / spec.safetensors_name


def conversion_source(path: Path) -> str | None:
    """The sha256 of the official file a cached conversion was made from (its metadata), or None."""
    try:
        with safe_open(str(path), framework="pt") as f:
            return (f.metadata() or {}).get("source_sha256")
    except (SafetensorError, OSError):
        return None


def candidate_paths(spec: WeightSpec, weights_dir: str | os.PathLike | None) -> list[Path]:
    paths = [cached_conversion(spec)]
    if weights_dir is not None:
        paths += [Path(weights_dir) / spec.safetensors_name, Path(weights_dir) / spec.filename]
    paths.append(hub_checkpoint_dir() / spec.filename)
    return paths


def load_weights(spec: WeightSpec, weights_dir: str | os.PathLike | None = None) -> LoadedWeights | None:
    """The backbone's state dict from the first acceptable local file, or None if there is none."""
    cached = cached_conversion(spec)
    for path in candidate_paths(spec, weights_dir):
        if not path.is_file():
            continue
        if path == cached:
            if conversion_source(path) != spec.sha256:  # another file's conversion: not these weights
                warnings.warn(f"ignoring {path}: not converted from the pinned {spec.filename}", stacklevel=2)
                continue
            return LoadedWeights(load_file(str(path)), path, spec.sha256)
        if path.suffix == ".safetensors":
            return LoadedWeights(load_file(str(path)), path, sha256_file(path))
        digest = sha256_file(path) if path.stat().st_size == spec.size else "size mismatch"
        if digest != spec.sha256:
            # a different or corrupted file: never unpickle it
            warnings.warn(f"ignoring {path}: sha256 {digest} is not the pinned {spec.sha256}", stacklevel=2)
            continue
        # safe to open: the bytes are the official file's (pinned sha256), and weights_only=True
        # unpickles tensors and containers only
        state = torch.load(path, map_location="cpu", weights_only=True)
        return LoadedWeights(state, path, digest)
    return None


STATUS_COMMAND = "recon-submit weights status"


def missing_note(metric: str, spec: WeightSpec, reason: str | None = None) -> str:
    """The not-computed note: what is missing, where it was looked for, the one command that fetches it.
    The note is signed into results and published: it names no folder of this machine (core/redact.py)."""
    from reconbench.core.redact import no_machine_paths

    why = no_machine_paths(reason) if reason else f"{spec.filename} is not in the weights cache ({STATUS_COMMAND} shows where)"
    return f"{metric}: not computed ({spec.key} weights unavailable: {why}; fetch them with `{FETCH_COMMAND}`)"
