"""Checks made before an attack runs: the output folder, the device, the weights folder.

Each failure is a UserError naming the option and the problem, raised in seconds rather than
after a run of minutes (which would then be lost).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from reconbench.core.errors import UserError

DEVICE_HELP = "use cpu, cuda, cuda:N or mps"


def check_device(device: str):
    """The torch.device for `--device`, if this machine can run on it."""
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError):
        raise UserError(f"--device {device}: not a device torch knows ({DEVICE_HELP})") from None
    if parsed.type == "cuda":
        if not torch.cuda.is_available():
            build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
            raise UserError(f"--device {device}: no usable CUDA device on this machine (torch {torch.__version__}, {build}); use --device cpu")
        if parsed.index is not None and parsed.index >= torch.cuda.device_count():
            raise UserError(f"--device {device}: this machine has {torch.cuda.device_count()} CUDA device(s), numbered from 0")
    elif parsed.type == "mps":
        if not torch.backends.mps.is_available():
            raise UserError(f"--device {device}: Apple MPS is not available on this machine; use --device cpu")
    elif parsed.type != "cpu":
        raise UserError(f"--device {device}: not supported ({DEVICE_HELP})")
    return parsed


def device_name(device) -> str:
    """The provenance's device: the GPU's name, or the CPU's."""
    import platform

    import torch

    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu ({platform.processor() or platform.machine()})"


def check_out(out: Path | None) -> None:
    """`--out` must not exist (not even empty) and must be creatable."""
    if out is None:
        return
    out = Path(out)
    if out.exists() or out.is_symlink():
        raise UserError(f"--out {out}: already exists; choose another folder or remove it")
    parent = out.parent
    while not parent.exists():
        parent = parent.parent
    try:  # a real probe: permission bits say nothing on /proc, read-only mounts or for root
        os.rmdir(tempfile.mkdtemp(prefix=".reconbench-probe-", dir=parent))
    except OSError as exc:
        raise UserError(f"--out {out}: cannot be created in {parent} ({exc.strerror or exc})") from None


def check_weights_dir(weights_dir: Path | None) -> None:
    """`--weights-dir` must be a folder; a backbone file in it must be readable safetensors."""
    if weights_dir is None:
        return
    weights_dir = Path(weights_dir)
    if not weights_dir.is_dir():
        raise UserError(f"--weights-dir {weights_dir}: no such folder")
    from safetensors import SafetensorError, safe_open

    from reconbench.image.metrics.weights import ALEXNET, FID_INCEPTION

    for spec in (ALEXNET, FID_INCEPTION):
        path = weights_dir / spec.safetensors_name
        if path.exists():
            try:
                with safe_open(str(path), "np") as f:
                    f.keys()
            except (SafetensorError, OSError, ValueError) as exc:
                raise UserError(f"{path}: not a readable safetensors file ({str(exc).splitlines()[0]})") from None


def preflight(*, device: str, out: Path | None, weights_dir: Path | None):
    """All the checks; returns the torch.device."""
    check_out(out)
    check_weights_dir(weights_dir)
    return check_device(device)
