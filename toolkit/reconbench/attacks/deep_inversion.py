"""DeepInversion: Yin et al., "Dreaming to Distill: Data-free Knowledge Transfer via
DeepInversion", CVPR'20.

min_x  CE(f(x), y) + a_tv R_tv(x) + a_l2 R_l2(x) + a_f sum_l ||mu_l(x) - mu_l^BN|| + ||s2_l(x) - s2_l^BN||

Defaults are the paper's CIFAR-10 parameters (README of NVlabs/DeepInversion: `--r_feature_weight=10
--di_lr=0.05`, script defaults `--di_var_scale=2.5e-5 --di_l2_scale=0.0`, 2,000 Adam iterations, a
random jitter), scaled to the track: the jitter of 2 px on 32x32 becomes 1 px on 8x8, and the
flip is dropped because digits are not mirror-symmetric.
"""

from __future__ import annotations

import torch
from torch import nn

from reconbench.attacks.base import Attack, Progress, Reconstruction, class_balanced_labels
from reconbench.attacks.priors import BatchNormStatistics, batches, jitter, l2_prior, seeded_generator, total_variation
from reconbench.knowledge import Knowledge


class DeepInversion(Attack):
    name = "deepinversion"
    paper = "Yin et al., Dreaming to Distill: Data-free Knowledge Transfer via DeepInversion, CVPR 2020"
    family = "optimization"
    scenarios = ("static/white-box/none",)
    defaults = {
        "iterations": 2000,
        "lr": 0.05,
        "bn_weight": 10.0,  # r_feature
        "tv_weight": 2.5e-5,  # di_var_scale (TV, l2 form)
        "l2_weight": 0.0,  # di_l2_scale
        "jitter": 1,
        "batch_size": 256,  # the paper's --bs
    }

    def run(self, knowledge: Knowledge, *, seed: int, progress: Progress) -> Reconstruction:
        cfg = self.config
        model, device = knowledge.model, knowledge.device
        if not any(isinstance(m, nn.BatchNorm2d) for m in model.modules()):
            raise ValueError("DeepInversion needs a target with BatchNorm layers (nothing to match otherwise)")
        n = knowledge.target_size
        labels = class_balanced_labels(n, knowledge.num_classes).to(device)
        gen = seeded_generator(seed)
        images = torch.empty((n, *knowledge.input_shape))
        stats = BatchNormStatistics(model)
        steps = int(cfg["iterations"]) * len(range(0, n, int(cfg["batch_size"])))
        with progress.task(f"{self.name}: inverting", steps) as advance, stats.attached():
            for part in batches(n, int(cfg["batch_size"])):
                x = torch.randn((part.stop - part.start, *knowledge.input_shape), generator=gen).to(device)
                x = (0.5 + 0.2 * x).requires_grad_(True)  # start near mid-grey: the toolkit's pixel space is [0, 1]
                opt = torch.optim.Adam([x], lr=float(cfg["lr"]), betas=(0.9, 0.999))
                y = labels[part]
                for _ in range(int(cfg["iterations"])):
                    opt.zero_grad(set_to_none=True)
                    logits = model(jitter(x, int(cfg["jitter"]), gen))
                    loss = (
                        nn.functional.cross_entropy(logits, y)
                        + float(cfg["bn_weight"]) * stats.pop()
                        + float(cfg["tv_weight"]) * total_variation(x, p=2)
                        + float(cfg["l2_weight"]) * l2_prior(x)
                    )
                    loss.backward()
                    opt.step()
                    with torch.no_grad():
                        x.clamp_(0, 1)
                    advance(1)
                images[part] = x.detach().cpu()
        return Reconstruction(images, labels.cpu())
