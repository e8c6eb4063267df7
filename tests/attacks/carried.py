"""Black-box attacks that carry data into the run instead of reconstructing (tests/test_sealed.py).

The test writes the carried images beside this file as modules `carried_part<i>.py`, imported by name
from `carried_data.py` (DATA: base64 of
lzma-compressed uint8 images and int64 labels; a bring-your-own attack may ship 32 source files of
128 KiB). Two hostile contributors:

- CarriedTargets returns the open twin's target set (its membership is public: the seed is in the
  source) as its "reconstructions" on the sealed twin;
- LossPick carries public Fashion-MNIST images (the sealed pool among them: the pool's recipe is
  public) and returns the |D_tar| the model fits best: membership inference over a smuggled
  candidate set, which the sealed track's carried-data rule must refuse.
"""

import base64
import lzma

import numpy as np
import torch

from reconbench.image.attacks.base import Attack, Reconstruction


def carried() -> tuple[np.ndarray, np.ndarray]:
    # carried_data (written by the test) imports each carried_part<i> by name: an attack's source is the
    # file and what it imports (core/attack_source.py), so a part loaded by importlib would not ship
    import carried_data

    images, labels = [], []
    for part in carried_data.PARTS:
        raw = lzma.decompress(base64.b64decode(part.DATA))
        n = int(part.COUNT)
        images.append(np.frombuffer(raw[: n * 1024], dtype=np.uint8).reshape(n, 1, 32, 32))
        labels.append(np.frombuffer(raw[n * 1024:], dtype=np.int64))
    return np.concatenate(images), np.concatenate(labels)


class CarriedTargets(Attack):
    name, paper, family, scenarios = "carried-targets", "none", "training", ("static/black-box/same",)

    def run(self, knowledge, *, seed, progress):
        images, labels = carried()
        n = knowledge.target_size
        return Reconstruction(torch.from_numpy(images[:n].astype(np.float32) / 255.0), torch.from_numpy(labels[:n].copy()))


class LossPick(Attack):
    name, paper, family, scenarios = "loss-pick", "none", "training", ("static/black-box/same",)

    def run(self, knowledge, *, seed, progress):
        images, labels = carried()
        x = torch.from_numpy(images.astype(np.float32) / 255.0)
        probs = knowledge.query(x)
        loss = -torch.log(probs[torch.arange(len(labels)), torch.from_numpy(labels.copy())].clamp_min(1e-12))
        best = torch.argsort(loss)[: knowledge.target_size]
        return Reconstruction(x[best], torch.from_numpy(labels.copy())[best])


class AuxMean(Attack):
    """A knowledge-only reference: each reconstruction the mean of 8 aux images of one class (no copy of any image)."""

    name, paper, family, scenarios = "aux-mean", "none", "training", ("static/black-box/same",)

    def run(self, knowledge, *, seed, progress):
        aux = knowledge.aux_data
        x, y = aux.as_float(), torch.from_numpy(aux.labels.copy())
        images, labels = [], []
        for i in range(knowledge.target_size):
            c, k = i % knowledge.num_classes, i // knowledge.num_classes
            images.append(x[y == c][8 * k:8 * k + 8].mean(0))
            labels.append(c)
        return Reconstruction(torch.stack(images), torch.tensor(labels))
