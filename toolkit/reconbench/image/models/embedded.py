"""Recipe for the embedded `digits` targets shipped in the package (reconbench/data/digits/).

Run `python -m reconbench.image.models.embedded` to rebuild them; the registry pins their sha256, so a
rebuild on another CPU (which may round differently) shows up as a hash change, not silently.
"""

from __future__ import annotations

import copy
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from reconbench.image.data.arrays import ArraySet
from reconbench.image.data.digits import binary_digits_splits, digits_splits
from reconbench.image.models.registry import build_model, save_model
from reconbench.image.models.training import TrainConfig, accuracy, train_classifier
from reconbench.core.threads import one_torch_thread

# The name the pinned weights' metadata records (reconbench.core.moved resolves it).
RECIPE = "python -m reconbench.models.embedded"

# name -> (architecture, constructor kwargs, training config)
EMBEDDED_TARGETS = {
    "cnn": ("small-cnn", {}, TrainConfig(epochs=60, batch_size=64, lr=1e-3, seed=0)),
    "mlp": ("homogeneous-mlp", {}, TrainConfig(epochs=60, batch_size=64, lr=1e-3, seed=0)),
}


def build_embedded_targets(out_dir: Path) -> dict[str, dict]:
    splits, binary = digits_splits(), binary_digits_splits()
    report = {}
    for name, (arch, kwargs, config) in EMBEDDED_TARGETS.items():
        model = train_classifier(build_model(arch, **kwargs), splits.target, config)
        report[name] = _save_target(out_dir, name, arch, model, splits)
    for name, (arch, kwargs, config) in LOGISTIC_GD_TARGETS.items():
        model = train_logistic_gd(build_model(arch, **kwargs), binary.target, config)
        report[name] = _save_target(out_dir, name, arch, model, binary)
    return report


def _save_target(out_dir: Path, name: str, arch: str, model: nn.Module, splits) -> dict:
    """Write <name>.safetensors and return its line of the report (accuracies on its own splits)."""
    path = out_dir / f"{name}.safetensors"
    save_model(model, path, metadata={"architecture": arch, "recipe": RECIPE})
    return {
        "architecture": arch,
        "file": path.name,
        "train_accuracy": round(accuracy(model, splits.target), 4),
        "test_accuracy": round(accuracy(model, splits.test), 4),
    }


@dataclass(frozen=True)
class LogisticGDConfig:
    """Bias-Rec's training premise (Haim et al., NeurIPS'22, github.com/nivha/dataset_reconstruction):
    full-batch gradient descent on the logistic loss of a homogeneous network from a small
    initialisation of its first layer, run until the loss is tiny."""

    steps: int = 10_000  # theirs: up to 1e6 epochs; here the loss is ~1e-5 after 1e4 (and the KKT
    # residual with the true training set, ~16% of ||theta||, no longer improves by 4e4)
    lr: float = 0.5  # train_lr of Buzaglo et al.'s runs (Haim et al.'s MNIST run: 0.01, 50x slower)
    first_layer_init: float = 1e-4  # model_init_list with use_init_scale_only_first (both papers)
    seed: int = 0
    dtype: str = "float64"  # their --precision double; float32 halves a CPU's time on wide inputs


# name -> (architecture, constructor kwargs, config): targets trained by train_logistic_gd on the
# `digits-binary-mlp` split (data/digits.py: digits 0 and 1, 10 training images each)
LOGISTIC_GD_TARGETS = {
    "binary-mlp": ("homogeneous-mlp", {"num_classes": 2, "hidden": 1000, "depth": 1}, LogisticGDConfig()),
}


def train_logistic_gd(model: nn.Module, data: ArraySet, config: LogisticGDConfig) -> nn.Module:
    """Full-batch GD in config.dtype (float64 unless set); returns a float32 copy in eval mode.

    Two logits (z0, z1) trained with cross-entropy are the logistic loss of Phi = z1 - z0. The output
    rows start as exact negatives of each other, so z0 = -z1 throughout (GD moves them oppositely) and
    the network is the single-output homogeneous network of the papers, with no frozen leftover of
    the initialisation in the output layer.
    """
    torch.manual_seed(config.seed)
    dtype = getattr(torch, config.dtype)
    model = copy.deepcopy(model).to(dtype).train()
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    with torch.no_grad():
        for layer in linears:  # re-drawn here, after the seed: the caller's RNG state does not matter
            layer.reset_parameters()
        linears[0].weight.normal_().mul_(config.first_layer_init)
        if linears[-1].weight.shape[0] == 2:
            linears[-1].weight[0] = -linears[-1].weight[1]
    x = data.as_float().to(dtype)
    y = torch.from_numpy(data.labels)
    opt = torch.optim.SGD(model.parameters(), lr=config.lr)
    with one_torch_thread():  # the same sums in the same order, so the same bytes on rebuild
        for _ in range(config.steps):
            opt.zero_grad(set_to_none=True)
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    return model.float().eval()


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parents[2] / "data" / "digits"
    print(json.dumps(build_embedded_targets(target), indent=2))
