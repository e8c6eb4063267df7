"""DeepDream: Mordvintsev, Olah, Tyka, "Inceptionism: Going Deeper into Neural Networks", Google
AI blog, 2015, in the form the SoK benchmarks (Sec. 2.2 / Table 1) and Yin et al. (CVPR'20, Sec.
3.2) write it: optimise the input for the wanted class under an image prior,

    min_x  CE(f(x), y) + a_tv R_tv(x) + a_l2 R_l2(x),

i.e. DeepInversion without the BatchNorm-statistics term. The priors and the jitter are the very
functions DeepInversion uses (attacks/priors.py).

The blog gives no numbers. The prior weights are those of the image prior R_prior in Yin et al.'s
public code (NVlabs/DeepInversion, imagenet_inversion.py: --tv_l2 1e-4, --l2 1e-5), the optimiser,
learning rate, batch and iteration count those of its CIFAR-10 script (Adam, --di_lr 0.05 as in
its README, --bs 256, --iters_mi 2000), the jitter scaled from 2 px at 32x32 to 1 px at 8x8 as in
our DeepInversion. Labels are spread evenly over the classes. Budget: 2,000 iterations on
full-size tracks, 500 on the 8x8 embedded tracks (a 2-core CPU; the class loss has converged
long before).
"""

from __future__ import annotations

import torch
from torch import nn

from reconbench.attacks.base import Attack, Progress, Reconstruction, class_balanced_labels
from reconbench.attacks.priors import batches, jitter, l2_prior, seeded_generator, total_variation, track_budget
from reconbench.knowledge import Knowledge


class DeepDream(Attack):
    name = "deepdream"
    paper = "Mordvintsev, Olah, Tyka, Inceptionism: Going Deeper into Neural Networks, Google AI blog 2015"
    family = "optimization"
    scenarios = ("static/white-box/none",)
    defaults = {
        "iterations": "auto",  # 2000 (DeepInversion's CIFAR-10 --iters_mi); 500 on the 8x8 tracks
        "lr": 0.05,  # DeepInversion CIFAR-10 README --di_lr
        "tv_weight": 1e-4,  # DeepInversion imagenet_inversion.py --tv_l2 (R_prior of Yin et al. Sec. 3.2)
        "l2_weight": 1e-5,  # idem --l2
        "jitter": 1,  # 2 px at 32x32 in DeepInversion's code, scaled to 8x8
        "batch_size": 256,  # DeepInversion CIFAR-10 --bs
    }

    def run(self, knowledge: Knowledge, *, seed: int, progress: Progress) -> Reconstruction:
        cfg = self.config
        iterations = track_budget(cfg, "iterations", knowledge.input_shape, paper=2000, small=500)
        model, device = knowledge.model, knowledge.device
        n = knowledge.target_size
        labels = class_balanced_labels(n, knowledge.num_classes).to(device)
        gen = seeded_generator(seed)
        images = torch.empty((n, *knowledge.input_shape))
        parts = list(batches(n, int(cfg["batch_size"])))
        with progress.task(f"{self.name}: dreaming", iterations * len(parts)) as advance:
            for part in parts:
                x = torch.randn((part.stop - part.start, *knowledge.input_shape), generator=gen).to(device)
                x = (0.5 + 0.2 * x).requires_grad_(True)  # noise around mid-grey, as our DeepInversion
                opt = torch.optim.Adam([x], lr=float(cfg["lr"]))
                y = labels[part]
                for _ in range(iterations):
                    opt.zero_grad(set_to_none=True)
                    loss = (
                        nn.functional.cross_entropy(model(jitter(x, int(cfg["jitter"]), gen)), y)
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
