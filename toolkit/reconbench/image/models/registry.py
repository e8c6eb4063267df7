"""Architecture names -> constructors, and safetensors save/load with a clear error on mismatch."""

from __future__ import annotations

from functools import partial

from collections.abc import Callable
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn

from reconbench.core.io import FileFormatError, atomic_path, sort_safetensors_metadata
from reconbench.image.models.eval_cnn import EvalCNN
from reconbench.image.models.gmi_mnist import MCNN, SCNN
from reconbench.image.models.small import HomogeneousMLP, LeNetSigmoid, SmallCNN
from reconbench.image.models.vgg import VGG16

def ResNet18(**kwargs) -> nn.Module:  # noqa: N802 - stands for the class
    # torchvision is imported only when a ResNet is built: it costs seconds at start-up, paid by
    # every attack's process (reconbench.pipeline.isolation) otherwise.
    from reconbench.image.models.resnet import ResNet18 as cls

    return cls(**kwargs)


ARCHITECTURES: dict[str, Callable[..., nn.Module]] = {
    "small-cnn": SmallCNN,
    "homogeneous-mlp": HomogeneousMLP,
    "vgg16": VGG16,  # the SoK's main target (target-model zoo)
    "resnet18": ResNet18,
    "eval-cnn": EvalCNN,  # evaluation classifier of the digits tracks (acc_top1/5, knn_dist)
    "mcnn": MCNN,  # GMI's MNIST target (the Fashion-MNIST tracks)
    "mcnn-gn": partial(MCNN, norm="group"),  # the same with GroupNorm: fashion-n100-dp (DP-SGD needs per-sample gradients)
    "scnn": SCNN,  # GMI's MNIST evaluation classifier (the Fashion-MNIST tracks' E)
    "lenet-sigmoid": LeNetSigmoid,  # DLG's LeNet with Sigmoid activations (the gradient-inversion control tracks)
}


def build_model(arch: str, **kwargs) -> nn.Module:
    if arch not in ARCHITECTURES:
        raise KeyError(f"unknown architecture '{arch}' (known: {', '.join(sorted(ARCHITECTURES))})")
    return ARCHITECTURES[arch](**kwargs)


def save_model(model: nn.Module, path: Path, metadata: dict[str, str] | None = None) -> None:
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    with atomic_path(Path(path)) as tmp:
        save_file(state, str(tmp), metadata=metadata)
        sort_safetensors_metadata(tmp)


def _fitted(arch: str, state: dict, where: str, device: str | torch.device, kwargs: dict) -> nn.Module:
    """`arch` built and given `state` (strictly), in eval mode on `device`; one message naming `where` otherwise."""
    model = build_model(arch, **kwargs)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        first = str(exc).splitlines()[0]
        raise FileFormatError(f"{where}: weights do not fit architecture '{arch}': {first}") from None
    return model.to(device).eval()


def load_model_bytes(arch: str, data: bytes, where: str, device: str | torch.device = "cpu", **kwargs) -> nn.Module:
    """load_model from safetensors bytes in memory (a sealed draw's decrypted weights: never written to a file)."""
    from safetensors.torch import load as load_bytes

    try:
        state = load_bytes(data)
    except (SafetensorError, OSError, ValueError) as exc:
        raise FileFormatError(f"{where}: not a valid safetensors file ({exc})") from None
    return _fitted(arch, state, where, device, kwargs)


def load_model(arch: str, path: Path, device: str | torch.device = "cpu", **kwargs) -> nn.Module:
    """Build `arch` and load its weights from a safetensors file; the model is returned in eval mode."""
    path = Path(path)
    if not path.is_file():
        raise FileFormatError(f"{path}: weight file not found")
    try:
        state = load_file(str(path))
    except (SafetensorError, OSError) as exc:
        raise FileFormatError(f"{path}: not a valid safetensors file ({exc})") from None
    return _fitted(arch, state, str(path), device, kwargs)
