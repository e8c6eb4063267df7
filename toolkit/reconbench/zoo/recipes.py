"""Training recipes: the hyperparameters of each target, recorded in its config.json and model card.

The SoK does not give its training hyperparameters (camera-ready, §4.2), so the base recipe for
VGG16 and ResNet-18 is the GMI line's VGG16 recipe, KEDMI `config/classify.json` ("VGG16"):
SGD, lr 1e-2, momentum 0.9, weight decay 1e-4, batch 64, 50 epochs, lr x 0.2 at epochs 20 and 35;
random horizontal flips where the dataset allows them (KEDMI `dataloader.py`, train mode).
The digits stand-in's small CNN and MLP keep the recipe of the embedded digits targets
(models/embedded.py: Adam, lr 1e-3, batch 64, 60 epochs).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from reconbench.zoo.datasets import DatasetSpec


@dataclass(frozen=True)
class Backdoor:
    """BadNets-style poisoning (Gu et al., 2017) as in SoK §7 / Fig. 6: a square trigger in the
    bottom-right corner; poisoned copies of some training images are added with the target label."""

    trigger_size: int  # pixels: 16 at 64x64 (SoK), scaled with the image side (8 at 32x32, 2 at 8x8)
    trigger_value: int  # 0 = black (SoK); 255 where the background is black already (MNIST, digits)
    target_class: int = 0  # not given by the SoK; any class would do
    poison_rate: float = 0.1  # poisoned copies / clean images; not given by the SoK (BadNets-like)


@dataclass(frozen=True)
class DP:
    """DP-SGD (Abadi et al., CCS'16) with opacus; the SoK does not give its epsilon."""

    epsilon: float = 8.0  # Abadi et al.'s loosest CIFAR-10 setting (eps = 2, 4, 8 at delta = 1e-5)
    delta: float = 1e-5  # Abadi et al.
    max_grad_norm: float = 1.0  # per-sample clipping norm C; opacus' CIFAR-10 example value


@dataclass(frozen=True)
class Prune:
    """Global magnitude pruning then retraining (Han et al., NeurIPS'15), SoK §7 ("Prune")."""

    amount: float = 0.9  # Han et al. prune VGG-16 13x (92% of weights); we round to 90%
    finetune_epochs: int = 10  # retraining with the mask fixed (Han et al.); length is our choice


@dataclass(frozen=True)
class Recipe:
    optimizer: str = "sgd"  # "sgd" | "adam"
    lr: float = 1e-2
    momentum: float = 0.9
    weight_decay: float = 1e-4
    batch_size: int = 64
    epochs: int = 50
    milestones: tuple[int, ...] = (20, 35)
    gamma: float = 0.2
    flip: bool = False
    seed: int = 0
    # SoK §7 variants (variants.py): all off in the base recipe
    pretrain_epochs: int = 0  # "pretrained": first train on the disjoint aux_same split, then fine-tune
    freeze_bn: bool = False  # "bn-frozen": BatchNorm running statistics and affine parameters never change
    backdoor: Backdoor | None = None
    dp: DP | None = None
    prune: Prune | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["milestones"] = list(self.milestones)
        return d

    def with_overrides(self, **overrides) -> "Recipe":
        """CLI overrides (--epochs, --lr, ...); None means keep. Milestones past the new end are dropped."""
        changes = {k: v for k, v in overrides.items() if v is not None}
        recipe = replace(self, **changes)
        if "epochs" in changes:
            recipe = replace(recipe, milestones=tuple(m for m in recipe.milestones if m < recipe.epochs))
        return recipe


KEDMI_VGG16 = Recipe()  # the defaults above are KEDMI's VGG16 values
EMBEDDED_DIGITS = Recipe(optimizer="adam", lr=1e-3, momentum=0.0, weight_decay=0.0, batch_size=64, epochs=60,
                         milestones=())


def base_recipe(dataset: DatasetSpec, architecture: str) -> Recipe:
    base = EMBEDDED_DIGITS if architecture in ("small-cnn", "homogeneous-mlp") else KEDMI_VGG16
    return replace(base, flip=dataset.flip)


def default_arch_kwargs(dataset: DatasetSpec, architecture: str) -> dict[str, int]:
    c, h, w = dataset.input_shape
    if architecture == "homogeneous-mlp":
        return {"in_features": c * h * w, "num_classes": dataset.num_classes}
    return {"in_channels": c, "num_classes": dataset.num_classes, "image_size": h}
