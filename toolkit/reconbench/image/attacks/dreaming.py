"""The input-optimisation loop DeepDream and DeepInversion share (Yin et al., CVPR'20, Sec. 3.2):
Adam on the pixels, per batch, from noise around mid-grey,

    min_x  CE(f(jitter(x)), y) + a_tv R_tv(x) + a_l2 R_l2(x) + extra(),

clamped to the toolkit's [0, 1] pixel space after every step. `extra` is read after the forward
pass, so DeepInversion's BatchNorm hooks have seen the batch when it is called.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch
from torch import nn

from reconbench.image.attacks.base import Progress, Reconstruction, class_balanced_labels
from reconbench.image.attacks.priors import batches, jitter, l2_prior, nvlabs_l2, nvlabs_tv_l2, seeded_generator, total_variation
from reconbench.image.knowledge import Knowledge


def dream(knowledge: Knowledge, *, iterations: int, lr: float, tv_weight: float, l2_weight: float,
          max_shift: int, batch_size: int, seed: int, progress: Progress, description: str,
          extra: Callable[[], torch.Tensor] | None = None,
          prior: Literal["toolkit", "nvlabs"] = "toolkit") -> Reconstruction:
    """Class-balanced labels, then `iterations` Adam steps per batch of `batch_size` images.

    prior="nvlabs": NVlabs' imagenet prior functions (`nvlabs_tv_l2`, `nvlabs_l2`) on the jittered
    input, as deepinversion.py computes them; "toolkit": the per-image mean squared TV and the
    squared l2 norm on the un-jittered input (what DeepInversion here has always used).
    """
    model, device = knowledge.model, knowledge.device
    n = knowledge.target_size
    labels = class_balanced_labels(n, knowledge.num_classes).to(device)
    gen = seeded_generator(seed)
    images = torch.empty((n, *knowledge.input_shape))
    parts = list(batches(n, batch_size))
    with progress.task(description, iterations * len(parts)) as advance:
        for part in parts:
            x = torch.randn((part.stop - part.start, *knowledge.input_shape), generator=gen).to(device)
            x = (0.5 + 0.2 * x).requires_grad_(True)  # start near mid-grey: the toolkit's pixel space is [0, 1]
            opt = torch.optim.Adam([x], lr=lr)  # betas (0.9, 0.999), DeepInversion's
            y = labels[part]
            for _ in range(iterations):
                opt.zero_grad(set_to_none=True)
                xj = jitter(x, max_shift, gen)
                loss = nn.functional.cross_entropy(model(xj), y)
                if prior == "nvlabs":
                    loss = loss + tv_weight * nvlabs_tv_l2(xj) + l2_weight * nvlabs_l2(xj)
                else:  # summed in this order so that DeepInversion's images stay bit-identical
                    loss = loss + tv_weight * total_variation(x, p=2) + l2_weight * l2_prior(x)
                if extra is not None:
                    loss = loss + extra()
                loss.backward()
                opt.step()
                with torch.no_grad():
                    x.clamp_(0, 1)
                advance(1)
            images[part] = x.detach().cpu()
    return Reconstruction(images, labels.cpu())
