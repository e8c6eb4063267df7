"""Back-of-envelope GPU time of the zoo, per track (docs/zoo.md): `python -m reconbench.zoo.estimate`.

    FLOPs of one training step  counted by torch.utils.flop_counter on the real architecture
                                (forward + backward, batch 64, the track's image size and classes)
    x steps                     every image pass of the recipe: pre-training, training (poisoned
                                copies included), pruning's retraining; DP-SGD steps cost DP_FACTOR x
    / SUSTAINED_TFLOPS          assumed sustained rate on one H100/H200 (below), but never less than
                                STEP_FLOOR_S per step (small batches are launch-bound, not FLOP-bound)
Memorization (optional, SoK Eq. 2) trains MEMORIZATION_MODELS more models on 70% of the target set.
"""

from __future__ import annotations

import sys

import torch
from torch.utils.flop_counter import FlopCounterMode

from reconbench.image.models import build_model
from reconbench.zoo.datasets import get_dataset
from reconbench.zoo.grid import TrackSpec, sok_grid
from reconbench.zoo.targets import plan

BATCH = 64
# H100/H200 dense TF32 peak is ~495 TFLOPS (cuDNN convolutions use TF32 by default in torch); VGG16
# and ResNet-18 on 32x32-64x64 images at batch 64 sustain a small share of it. 10% is our assumption.
SUSTAINED_TFLOPS = 50.0
STEP_FLOOR_S = 0.003  # ~150 kernels per VGG16 step at ~20 us each
DP_FACTOR = 3.0  # opacus per-sample gradients (hooks mode): about 2-4x a plain step; our assumption
CELEBA_AUX_IMAGES = 7_000  # aux_same left after test + 20k target + update (~30.5k images of 1,000 ids)
MEMORIZATION_MODELS = 100  # metrics/memorization.py's default


def step_flops(spec: TrackSpec) -> float:
    _, _, kwargs = plan(spec.id)
    model = build_model(spec.architecture, **kwargs).train()
    data = get_dataset(spec.dataset)
    x = torch.rand(BATCH, *data.input_shape)
    y = torch.randint(0, data.num_classes, (BATCH,))
    with FlopCounterMode(display=False) as counter:
        torch.nn.functional.cross_entropy(model(x), y).backward()
    return float(counter.get_total_flops())


def steps(spec: TrackSpec) -> float:
    _, recipe, _ = plan(spec.id)
    n = spec.size * (1 + (recipe.backdoor.poison_rate if recipe.backdoor else 0))
    passes = recipe.epochs * n
    if recipe.pretrain_epochs:
        aux = CELEBA_AUX_IMAGES if spec.dataset == "celeba" else get_dataset(spec.dataset).aux_max
        passes += recipe.pretrain_epochs * aux
    if recipe.prune:
        passes += recipe.prune.finetune_epochs * n
    return passes / BATCH * (DP_FACTOR if recipe.dp else 1.0)


def gpu_hours(spec: TrackSpec, flops_cache: dict) -> tuple[float, float]:
    """(training hours, memorization hours) on one GPU."""
    key = (spec.dataset, spec.architecture, spec.variant and spec.variant.startswith("bottleneck") and spec.variant)
    if key not in flops_cache:
        flops_cache[key] = step_flops(spec)
    flops = flops_cache[key]
    per_step = max(flops / (SUSTAINED_TFLOPS * 1e12), STEP_FLOOR_S)
    train = steps(spec) * per_step / 3600
    return train, train * MEMORIZATION_MODELS * 0.7


def main(argv: list[str]) -> int:
    cache: dict = {}
    rows, total, total_mem = [], 0.0, 0.0
    for spec in sok_grid():
        train, mem = gpu_hours(spec, cache)
        total, total_mem = total + train, total_mem + mem
        rows.append(f"| {spec.id} | {train * 60:.1f} min | {mem:.1f} h |")
    print("| track | training | + memorization (100 models) |\n|---|---|---|")
    print("\n".join(rows))
    print(f"| **all {len(rows)} tracks** | **{total:.1f} h** | **{total_mem:.0f} h** |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
