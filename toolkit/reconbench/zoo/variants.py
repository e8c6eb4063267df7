"""The SoK's target-model variants (§7) and the mechanics each needs.

| variant        | what changes                                                  | SoK        |
|----------------|---------------------------------------------------------------|------------|
| pretrained     | train on the disjoint aux_same split first, then fine-tune    | Tables 5, 10 ("Pre") |
| bn-frozen      | BatchNorm running statistics and affine parameters never move | Table 7    |
| bottleneck512  | a 512-wide linear bottleneck before the classifier            | Table 6    |
| bottleneck128  | the same, 128 wide                                            | Table 6    |
| backdoor       | poisoned copies with a square trigger, bottom-right           | Fig. 6     |
| dp             | DP-SGD (opacus), GroupNorm instead of BatchNorm; eps recorded | Table 10   |
| prune          | global magnitude pruning + retraining; sparsity recorded      | Table 10   |

"pretrained": the SoK says only "pre-trained on disjoint datasets and fine-tuned with the target
data". We pre-train on the track's own aux_same split (disjoint from the target, update and test
splits, same label space, so the classifier carries over); `--init-weights` can start from any
other checkpoint (e.g. torchvision's ImageNet vgg16_bn converted to safetensors) instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
from torch import nn
from torch.nn.utils import prune as torch_prune

from reconbench.image.data.arrays import ArraySet
from reconbench.zoo import ZooError
from reconbench.zoo.datasets import DatasetSpec
from reconbench.zoo.recipes import DP, Backdoor, Prune, Recipe

GROUP_NORM_GROUPS = 32  # Wu & He (ECCV'18): G = 32 groups
SOK_TRIGGER = 16  # SoK §7: "a 16x16 black square in the bottom-right corner" of 64x64 CelebA
SOK_TRIGGER_IMAGE = 64

Apply = Callable[[DatasetSpec, str, Recipe, dict], tuple[Recipe, dict]]


def _pretrained(ds, arch, recipe, kw):
    return replace(recipe, pretrain_epochs=recipe.epochs), kw


def _bn_frozen(ds, arch, recipe, kw):
    if arch == "homogeneous-mlp":
        raise ZooError("variant 'bn-frozen' needs an architecture with BatchNorm")
    return replace(recipe, freeze_bn=True), kw


def _bottleneck(width: int) -> Apply:
    def apply(ds, arch, recipe, kw):
        if arch != "vgg16":
            raise ZooError(f"variant 'bottleneck{width}' is defined for vgg16 only")
        return recipe, {**kw, "bottleneck": width}
    return apply


def trigger_size(image_side: int) -> int:
    """16 px at 64 px (SoK), scaled with the image side: 8 at 32, 2 at 8; at least 1."""
    return max(1, round(SOK_TRIGGER * image_side / SOK_TRIGGER_IMAGE))


def _backdoor(ds, arch, recipe, kw):
    bd = Backdoor(trigger_size=trigger_size(ds.input_shape[1]), trigger_value=255 if ds.dark_background else 0)
    return replace(recipe, backdoor=bd), kw


def _dp(ds, arch, recipe, kw):
    if arch in ("vgg16", "resnet18"):
        kw = {**kw, "group_norm": GROUP_NORM_GROUPS}
    elif arch != "homogeneous-mlp":
        raise ZooError(f"variant 'dp' needs vgg16, resnet18 (GroupNorm) or homogeneous-mlp, not {arch} (BatchNorm)")
    return replace(recipe, dp=DP()), kw


def _prune(ds, arch, recipe, kw):
    return replace(recipe, prune=Prune(finetune_epochs=max(1, recipe.epochs // 5))), kw


VARIANTS: dict[str, Apply] = {
    "pretrained": _pretrained,
    "bn-frozen": _bn_frozen,
    "bottleneck512": _bottleneck(512),
    "bottleneck128": _bottleneck(128),
    "backdoor": _backdoor,
    "dp": _dp,
    "prune": _prune,
}


def apply_variant(variant: str | None, dataset: DatasetSpec, arch: str, recipe: Recipe, kw: dict) -> tuple[Recipe, dict]:
    if variant is None:
        return recipe, kw
    if variant not in VARIANTS:
        raise ZooError(f"unknown variant '{variant}' (known: {', '.join(VARIANTS)})")
    return VARIANTS[variant](dataset, arch, recipe, dict(kw))


# ---------------------------------------------------------------- BatchNorm frozen

def batchnorms(model: nn.Module) -> list[nn.modules.batchnorm._BatchNorm]:
    return [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]


def freeze_batchnorm(model: nn.Module) -> None:
    """No gradient to BN's affine parameters; call `batchnorm_eval` after every model.train()."""
    if not batchnorms(model):
        raise ZooError("the model has no BatchNorm layer to freeze")
    for bn in batchnorms(model):
        for p in bn.parameters():
            p.requires_grad_(False)


def batchnorm_eval(model: nn.Module) -> None:
    """Eval mode for BN only: it normalises with its stored statistics and never updates them."""
    for bn in batchnorms(model):
        bn.eval()


# ---------------------------------------------------------------- backdoor

def add_trigger(images: np.ndarray, bd: Backdoor) -> np.ndarray:
    out = images.copy()
    out[:, :, -bd.trigger_size:, -bd.trigger_size:] = bd.trigger_value
    return out


def poison(data: ArraySet, bd: Backdoor, seed: int) -> tuple[ArraySet, int]:
    """Clean data plus round(poison_rate * N) triggered copies (seeded choice) labelled target_class."""
    count = max(1, round(bd.poison_rate * len(data)))
    pick = np.sort(np.random.default_rng(seed).choice(len(data), size=count, replace=False))
    images = np.concatenate([data.images, add_trigger(data.images[pick], bd)])
    labels = np.concatenate([data.labels, np.full(count, bd.target_class, dtype=np.int64)])
    return ArraySet(images, labels), count


def attack_success_rate(predict: Callable[[np.ndarray], np.ndarray], test: ArraySet, bd: Backdoor) -> float:
    """Share of test images not of the target class that the trigger sends to the target class."""
    keep = test.labels != bd.target_class
    return float((predict(add_trigger(test.images[keep], bd)) == bd.target_class).mean())


# ---------------------------------------------------------------- pruning

def prunable(model: nn.Module) -> list[tuple[nn.Module, str]]:
    return [(m, "weight") for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]


def prune_global(model: nn.Module, amount: float) -> None:
    """Zero the `amount` share of smallest-magnitude conv/linear weights, over the whole model
    (Han et al.); the masks stay attached (so retraining keeps them) until `make_permanent`."""
    torch_prune.global_unstructured(prunable(model), pruning_method=torch_prune.L1Unstructured, amount=amount)


def make_permanent(model: nn.Module) -> None:
    for module, name in prunable(model):
        if torch_prune.is_pruned(module):
            torch_prune.remove(module, name)


def sparsity(model: nn.Module) -> float:
    """Share of exactly-zero weights among the conv/linear weights."""
    zeros = total = 0
    for module, name in prunable(model):
        w = getattr(module, name)
        zeros += int((w == 0).sum())
        total += w.numel()
    return zeros / total

