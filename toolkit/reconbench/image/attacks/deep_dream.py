"""DeepDream: Mordvintsev, Olah, Tyka, "Inceptionism: Going Deeper into Neural Networks", Google
AI blog, 2015, in the form the SoK benchmarks (Sec. 2.2 / Table 1) and Yin et al. (CVPR'20, Sec.
3.2) write it: optimise the input for the wanted class under an image prior,

    min_x  CE(f(x), y) + a_tv R_tv(x) + a_l2 R_l2(x),

i.e. DeepInversion without the BatchNorm-statistics term, in DeepInversion's loop (attacks/dreaming.py).

The blog gives no numbers. The prior functions and weights are those of the image prior R_prior
in Yin et al.'s public code (NVlabs/DeepInversion): deepinversion.py's `get_image_prior_losses`
`loss_var_l2` (the batch-wide l2 norm of the horizontal, vertical and both diagonal neighbour
differences, summed; priors.nvlabs_tv_l2) and its `loss_l2` (each image's l2 norm, averaged over
the batch; priors.nvlabs_l2), both on the jittered input as there, with imagenet_inversion.py's
weights --tv_l2 1e-4 and --l2 1e-5. (Version 1 used the toolkit's squared forms with these
weights, which made the l2 prior's gradient ~117x NVlabs'; version 2 uses NVlabs' functions, so
on 8x8 digits in [0, 1] the priors are nearly negligible, as the weights make them there.) The
optimiser, learning rate, batch and iteration count are those of its CIFAR-10 script (Adam, --di_lr
0.05 as in its README, --bs 256, --iters_mi 2000), the jitter scaled from 2 px at 32x32 to 1 px
at 8x8 as in our DeepInversion. Labels are spread evenly over the classes. Budget: 2,000
iterations on full-size tracks, 500 on the 8x8 embedded tracks (a 2-core CPU; the class loss has
converged long before).
"""

from __future__ import annotations

from pydantic import Field

from reconbench.image.attacks.base import Attack, AttackOptions, Auto, PositiveInt, Progress, Reconstruction
from reconbench.image.attacks.dreaming import dream
from reconbench.image.attacks.priors import track_budget
from reconbench.image.knowledge import Knowledge


class DeepDream(Attack):
    name = "deepdream"
    paper = "Mordvintsev, Olah, Tyka, Inceptionism: Going Deeper into Neural Networks, Google AI blog 2015"
    family = "optimization"
    scenarios = ("static/white-box/none",)
    version = "2"  # 2: NVlabs' prior functions (1: the toolkit's squared TV and l2 with NVlabs' weights)

    class Options(AttackOptions):
        iterations: PositiveInt | Auto = Field("auto", description="Adam steps per batch: 2000 (DeepInversion's CIFAR-10 --iters_mi); auto = 500 on the 8x8 tracks")
        lr: float = Field(0.05, gt=0, description="Adam learning rate (DeepInversion CIFAR-10 README --di_lr)")
        tv_weight: float = Field(1e-4, ge=0, description="weight of NVlabs' loss_var_l2 (imagenet_inversion.py --tv_l2)")
        l2_weight: float = Field(1e-5, ge=0, description="weight of NVlabs' loss_l2 (imagenet_inversion.py --l2)")
        jitter: int = Field(1, ge=0, description="random roll in pixels: 2 at 32x32 in DeepInversion's code, scaled to 8x8")
        batch_size: int = Field(256, ge=1, description="images optimised together (DeepInversion CIFAR-10 --bs)")

    presets = {"quick": {"iterations": 100}, "paper": {"iterations": 2000, "batch_size": 256}}

    def run(self, knowledge: Knowledge, *, seed: int, progress: Progress) -> Reconstruction:
        cfg = self.config
        return dream(
            knowledge, iterations=track_budget(cfg, "iterations", knowledge.input_shape, paper=2000, small=500),
            lr=float(cfg["lr"]), tv_weight=float(cfg["tv_weight"]), l2_weight=float(cfg["l2_weight"]),
            max_shift=int(cfg["jitter"]), batch_size=int(cfg["batch_size"]), seed=seed, progress=progress,
            description=f"{self.name}: dreaming", prior="nvlabs",
        )
