"""DeepDream: Mordvintsev, Olah, Tyka, "Inceptionism: Going Deeper into Neural Networks", Google
AI blog, 2015, in the form the SoK benchmarks (Sec. 2.2 / Table 1) and Yin et al. (CVPR'20, Sec.
3.2) write it: optimise the input for the wanted class under an image prior,

    min_x  CE(f(x), y) + a_tv R_tv(x) + a_l2 R_l2(x),

i.e. DeepInversion without the BatchNorm-statistics term. The loop, priors and jitter are the very
ones DeepInversion uses (attacks/dreaming.py).

The blog gives no numbers. The prior weights are those of the image prior R_prior in Yin et al.'s
public code (NVlabs/DeepInversion, imagenet_inversion.py: --tv_l2 1e-4, --l2 1e-5), the optimiser,
learning rate, batch and iteration count those of its CIFAR-10 script (Adam, --di_lr 0.05 as in
its README, --bs 256, --iters_mi 2000), the jitter scaled from 2 px at 32x32 to 1 px at 8x8 as in
our DeepInversion. Labels are spread evenly over the classes. Budget: 2,000 iterations on
full-size tracks, 500 on the 8x8 embedded tracks (a 2-core CPU; the class loss has converged
long before).
"""

from __future__ import annotations

from reconbench.attacks.base import Attack, Progress, Reconstruction
from reconbench.attacks.dreaming import dream
from reconbench.attacks.priors import track_budget
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
        return dream(
            knowledge, iterations=track_budget(cfg, "iterations", knowledge.input_shape, paper=2000, small=500),
            lr=float(cfg["lr"]), tv_weight=float(cfg["tv_weight"]), l2_weight=float(cfg["l2_weight"]),
            max_shift=int(cfg["jitter"]), batch_size=int(cfg["batch_size"]), seed=seed, progress=progress,
            description=f"{self.name}: dreaming",
        )
