"""The evaluation classifier of the embedded digits tracks, and its recipe.

The model-inversion literature scores reconstructions with an *evaluation classifier* E of another
architecture than the target (GMI/KEDMI/PLG-MI: a FaceNet/IR-50 judge for VGG16/IR152 targets):
attack accuracy is the share of reconstructions E labels as their intended class, and KNN distance
is measured in E's penultimate feature space (metrics/classifier.py).

Architecture: `EvalCNN`, three 3x3 convolutions without any normalisation layer, global average
pooling to a 128-d feature, one linear layer: unlike the target SmallCNN (two convolutions with
BatchNorm, a 64-unit hidden FC), so an image tuned to the target's filters or BatchNorm statistics
gets no free pass from the judge.

Training data: the digits `aux_same` + `test` splits (1,197 images), never a target set: its
accuracy is then measured on the static target set (500) and the dynamic update set (100), the
very sets it judges reconstructions of. The MI papers train E on the private identities (their
public and private data have disjoint identities, so E must see private images to know the
classes); here every split covers all ten classes, so E can know the classes without ever seeing
D_tar, and cannot have memorised the images it is compared with.

Run `python -m reconbench.models.evaluator` to rebuild data/digits/eval-cnn.safetensors; the
registry pins its sha256 (CPU training is not bitwise reproducible, so the bytes are pinned).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

from reconbench.data.arrays import ArraySet
from reconbench.models.eval_cnn import EvalCNN  # noqa: F401 - re-exported

FILE = "digits/eval-cnn.safetensors"
RECIPE = "python -m reconbench.models.evaluator"


# The architecture lives in eval_cnn.py (the model registry imports it; this recipe imports the registry).


def training_set() -> ArraySet:
    from reconbench.data.digits import digits_splits, unseen_by_targets

    # Transitional (issue 21): the shipped classifier was trained on aux + every image no target saw,
    # the holdout included; it is retrained without the holdout when the examples are re-made.
    s, unseen = digits_splits(), unseen_by_targets()
    return ArraySet(np.concatenate([s.aux_same.images, unseen.images]), np.concatenate([s.aux_same.labels, unseen.labels]))


def build(out: Path) -> dict:
    from reconbench.data.digits import digits_splits
    from reconbench.models.registry import save_model
    from reconbench.models.training import TrainConfig, accuracy, train_classifier
    from reconbench.threads import one_torch_thread

    with one_torch_thread():
        model = train_classifier(EvalCNN(), training_set(), TrainConfig(epochs=80, batch_size=64, lr=1e-3, weight_decay=1e-4, seed=0))
    save_model(model, out, metadata={"architecture": "eval-cnn", "recipe": RECIPE, "trained_on": "digits aux_same + test"})
    s = digits_splits()
    return {"file": out.name, "train_accuracy": round(accuracy(model, training_set()), 4),
            "target_accuracy": round(accuracy(model, s.target), 4), "update_accuracy": round(accuracy(model, s.update), 4)}


if __name__ == "__main__":
    default = Path(__file__).parents[1] / "data" / FILE
    print(json.dumps(build(Path(sys.argv[1]) if len(sys.argv) > 1 else default), indent=2))
