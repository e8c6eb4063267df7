"""The evaluation classifier E of a zoo track (acc_top1, acc_top5, knn_dist; metrics/classifier.py).

Choice, following the model-inversion papers (GMI, KEDMI, PLG-MI): E has another architecture than
the target and is trained on the private and public data of the same distribution, i.e. the track's
target split plus its disjoint `aux_same` split (their CelebA E is trained on the 1,000 private
identities, which the public data does not contain). The papers' E is FaceNet64 (an IR-50 face
network); the zoo has no IR-50, so E is the other zoo architecture: ResNet-18 judges VGG16 targets
and VGG16 judges ResNet-18 targets (digits' small CNN and MLP: the embedded EvalCNN architecture).
Recipe: the dataset's base recipe for that architecture (recipes.py). Its accuracy is measured on
the held-out `test` split.

The file goes into the track's model repository beside the target; `train_evaluation_model`
returns the registry's `evaluation_model` entry (file, sha256, accuracy), which a maintainer pins
with the track, as the target's own sha256. reconbench.image.metrics.classifier.track_evaluator then
downloads it pinned to the model repository's revision and sha256.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from reconbench.image.data.arrays import ArraySet
from reconbench.core.io import sha256_file
from reconbench.image.models.registry import save_model
from reconbench.zoo.prepare import load_split, read_manifest, target_split
from reconbench.zoo.recipes import base_recipe, default_arch_kwargs
from reconbench.zoo.targets import plan, train_model
from reconbench.zoo.training import accuracy

FILE = "evaluation.safetensors"
EVALUATION_ARCH = {"vgg16": "resnet18", "resnet18": "vgg16", "small-cnn": "eval-cnn", "homogeneous-mlp": "eval-cnn"}


def evaluation_architecture(target_arch: str) -> str:
    return EVALUATION_ARCH[target_arch]


def train_evaluation_model(track_id: str, data_dir: Path, out_dir: Path, *, device: str = "cpu",
                           epochs: int | None = None) -> dict:
    """Train E for `track_id` on target + aux_same from `data_dir`; write out_dir/evaluation.safetensors."""
    spec, _, _ = plan(track_id)
    arch = evaluation_architecture(spec.architecture)
    c, n = spec.data.input_shape[0], spec.data.num_classes
    kwargs = {"in_channels": c, "num_classes": n} if arch == "eval-cnn" else default_arch_kwargs(spec.data, arch)
    recipe = base_recipe(spec.data, "small-cnn" if arch == "eval-cnn" else arch).with_overrides(epochs=epochs)
    manifest = read_manifest(Path(data_dir))
    private = load_split(data_dir, target_split(spec.size), manifest)
    public = load_split(data_dir, "aux_same", manifest)
    both = ArraySet(np.concatenate([private.images, public.images]), np.concatenate([private.labels, public.labels]))
    dev = torch.device(device)
    model, _ = train_model(arch, kwargs, recipe, target=both, aux=None, device=dev, log=lambda entry: None)
    path = Path(out_dir) / FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    save_model(model, path, metadata={"reconbench": json.dumps({"track": spec.id, "evaluation_model": arch}, sort_keys=True)})
    return {
        "architecture": arch,
        "arch_kwargs": kwargs,
        "file": FILE,
        "sha256": sha256_file(path),
        "trained_on": f"{target_split(spec.size)} + aux_same ({len(both)} images: private and public, as the MI papers)",
        "accuracy": {"train": round(accuracy(model, both, dev), 4), "test": round(accuracy(model, load_split(data_dir, "test", manifest), dev), 4)},
        "recipe": f"reconbench.zoo.evaluator.train_evaluation_model({track_id!r}, DATA_DIR, OUT_DIR, epochs={epochs!r})",
    }
