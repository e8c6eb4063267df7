"""The evaluation classifier of the embedded digits tracks, and its recipe.

The model-inversion literature scores reconstructions with an *evaluation classifier* E of another
architecture than the target (GMI/KEDMI/PLG-MI: a FaceNet/IR-50 judge for VGG16/IR152 targets):
attack accuracy is the share of reconstructions E labels as their intended class, and KNN distance
is measured in E's penultimate feature space (metrics/classifier.py).

Architecture: `EvalCNN`, three 3x3 convolutions without any normalisation layer, global average
pooling to a 128-d feature, one linear layer: unlike the target SmallCNN (two convolutions with
BatchNorm, a 64-unit hidden FC), so an image tuned to the target's filters or BatchNorm statistics
gets no free pass from the judge.

Training data: the digits `aux_same` + `test` splits (697 images), never a target set and never the
holdout: KNN distance is also measured to the holdout (the membership gap, metrics/leakage.py), and a
judge that had trained on the holdout would pull it closer in its feature space than the targets it
never saw, faking a negative gap. Its accuracy is measured on the static target set (500), the
dynamic update set (100) and the holdout (500), the sets it judges reconstructions against. The MI papers train E on the private identities (their
public and private data have disjoint identities, so E must see private images to know the
classes); here every split covers all ten classes, so E can know the classes without ever seeing
D_tar, and cannot have memorised the images it is compared with.

Run `python -m reconbench.image.models.evaluator` to rebuild data/digits/eval-cnn.safetensors; the
registry pins its sha256. The seed is set before the network is built (its initial weights were
drawn from whatever the global RNG held before, so two rebuilds differed) and training runs on one
thread, and the file carries no safetensors metadata (its key order is not stable): a rebuild on the
same torch build writes the same bytes (two rebuilds under load compared: identical).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

from reconbench.image.data.arrays import ArraySet
from reconbench.image.models.eval_cnn import EvalCNN  # noqa: F401 - re-exported

FILE = "digits/eval-cnn.safetensors"
RECIPE = "python -m reconbench.models.evaluator"  # the name the pinned weights' metadata records (reconbench.core.moved resolves it)


# The architecture lives in eval_cnn.py (the model registry imports it; this recipe imports the registry).


def training_set() -> ArraySet:
    from reconbench.image.data.digits import digits_splits

    s = digits_splits()
    return ArraySet(np.concatenate([s.aux_same.images, s.test.images]), np.concatenate([s.aux_same.labels, s.test.labels]))


def build(out: Path) -> dict:
    from reconbench.image.data.digits import digits_splits
    from reconbench.image.models.registry import save_model
    from reconbench.image.models.training import TrainConfig, accuracy, train_classifier
    from reconbench.core.io import sha256_file
    from reconbench.core.threads import one_torch_thread

    config = TrainConfig(epochs=80, batch_size=64, lr=1e-3, weight_decay=1e-4, seed=0)
    with one_torch_thread():
        torch.manual_seed(config.seed)  # the initial weights too
        model = train_classifier(EvalCNN(), training_set(), config)
    save_model(model, out)  # no metadata: safetensors writes its keys in an unstable order (the same weights
    # gave two files); the registry row says what the file is
    s = digits_splits()
    return {"file": out.name, "sha256": sha256_file(out), "train_accuracy": round(accuracy(model, training_set()), 4),
            "target_accuracy": round(accuracy(model, s.target), 4), "update_accuracy": round(accuracy(model, s.update), 4),
            "holdout_accuracy": round(accuracy(model, s.holdout), 4)}


if __name__ == "__main__":
    default = Path(__file__).parents[2] / "data" / FILE
    print(json.dumps(build(Path(sys.argv[1]) if len(sys.argv) > 1 else default), indent=2))
