"""The simpler stealing route: the attacker's aux images, labelled by querying the target.

Each aux image is queried once (|aux| queries); the surrogate (the track's public architecture)
is trained on them with the track's public training recipe (reconbench.image.models.training: Adam lr
1e-3, batch 64, 60 epochs), on the target's predicted labels. There is no paper budget to
follow: `paper` is the recipe the target itself was trained with.
"""

from __future__ import annotations

import numpy as np
import torch
from pydantic import Field
from torch import nn

from reconbench.image.attacks.base import AttackOptions, Progress
from reconbench.image.data.arrays import ArraySet
from reconbench.image.knowledge import QueryFunction
from reconbench.image.models.training import TrainConfig, train_classifier


class AuxOptions(AttackOptions):
    # trained in the evaluator's own process from a re-run entry's recorded values: bounded (dfme.py)
    epochs: int = Field(60, ge=1, le=1000, description="training epochs (the track's public recipe, TrainConfig)")
    batch_size: int = Field(64, ge=1, le=4096, description="idem")
    lr: float = Field(1e-3, gt=0, description="Adam lr (idem)")


class AuxSurrogate:
    name = "aux"
    paper = "aux images labelled by the target's answers (the SoK's 'same'-data stealing baseline)"
    Options = AuxOptions
    presets = {"quick": {"epochs": 20}, "paper": {"epochs": 60}}

    @staticmethod
    def steal(query: QueryFunction, student: nn.Module, cfg: dict, *, aux: ArraySet, seed: int, device: torch.device,
              progress: Progress) -> nn.Module:
        with progress.task("aux: labelling aux images by queries", 1) as advance:
            x = aux.as_float()
            probs = torch.cat([query(x[i : i + 1024]) for i in range(0, len(x), 1024)])
            advance(1)
        labelled = ArraySet(aux.images, probs.argmax(1).cpu().numpy().astype(np.int64))
        config = TrainConfig(epochs=int(cfg["epochs"]), batch_size=int(cfg["batch_size"]), lr=float(cfg["lr"]), seed=seed)
        with progress.task("aux: training the surrogate", 1) as advance:
            model = train_classifier(student, labelled, config, device=device)
            advance(1)
        return model
