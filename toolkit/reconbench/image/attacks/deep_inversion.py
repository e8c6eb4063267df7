"""DeepInversion: Yin et al., "Dreaming to Distill: Data-free Knowledge Transfer via
DeepInversion", CVPR'20.

min_x  CE(f(x), y) + a_tv R_tv(x) + a_l2 R_l2(x) + a_f sum_l ||mu_l(x) - mu_l^BN|| + ||s2_l(x) - s2_l^BN||

Defaults are the paper's CIFAR-10 parameters (README of NVlabs/DeepInversion: `--r_feature_weight=10
--di_lr=0.05`, script defaults `--di_var_scale=2.5e-5 --di_l2_scale=0.0`, 2,000 Adam iterations, a
random jitter), scaled to the track: the jitter of 2 px on 32x32 becomes 1 px on 8x8, and the
flip is dropped because digits are not mirror-symmetric.

Which prior: R_tv and R_l2 here are the toolkit's functions (priors.total_variation with p=2, the
per-image mean of squared neighbour differences, and priors.l2_prior, on the un-jittered image),
weighted by NVlabs' values. NVlabs' own functions (`loss_var_l2`, `loss_l2` of deepinversion.py's
`get_image_prior_losses`, on the jittered image) are priors.nvlabs_tv_l2 and priors.nvlabs_l2,
which DeepDream (version 2) uses; DeepInversion keeps the toolkit's so that its published entries
stay bit-identical. A stated difference, not NVlabs' prior.
"""

from __future__ import annotations

from pydantic import Field
from torch import nn

from reconbench.image.attacks.base import Attack, AttackOptions, Progress, Reconstruction
from reconbench.image.attacks.dreaming import dream
from reconbench.image.attacks.priors import BatchNormStatistics
from reconbench.image.knowledge import Knowledge


class DeepInversion(Attack):
    name = "deepinversion"
    paper = "Yin et al., Dreaming to Distill: Data-free Knowledge Transfer via DeepInversion, CVPR 2020"
    family = "optimization"
    scenarios = ("static/white-box/none",)

    class Options(AttackOptions):
        iterations: int = Field(2000, ge=1, description="Adam steps per batch (the paper's CIFAR-10 setting, 2k iterations)")
        lr: float = Field(0.05, gt=0, description="Adam learning rate (NVlabs README --di_lr)")
        bn_weight: float = Field(10.0, ge=0, description="R_feature weight (NVlabs README --r_feature_weight)")
        tv_weight: float = Field(2.5e-5, ge=0, description="weight of the toolkit's squared TV (NVlabs' --di_var_scale value, which weights their loss_var_l2)")
        l2_weight: float = Field(0.0, ge=0, description="weight of the toolkit's squared l2 (NVlabs' --di_l2_scale value)")
        jitter: int = Field(1, ge=0, description="random roll in pixels: 2 at 32x32 in NVlabs' code, scaled to 8x8")
        batch_size: int = Field(256, ge=1, description="images optimised together (the paper's --bs)")

    presets = {"quick": {"iterations": 100}, "paper": {"iterations": 2000, "batch_size": 256}}

    def run(self, knowledge: Knowledge, *, seed: int, progress: Progress) -> Reconstruction:
        cfg = self.config
        if not any(isinstance(m, nn.BatchNorm2d) for m in knowledge.model.modules()):
            raise ValueError("DeepInversion needs a target with BatchNorm layers (nothing to match otherwise)")
        stats = BatchNormStatistics(knowledge.model)
        bn_weight = float(cfg["bn_weight"])
        with stats.attached():
            return dream(
                knowledge, iterations=int(cfg["iterations"]), lr=float(cfg["lr"]), tv_weight=float(cfg["tv_weight"]),
                l2_weight=float(cfg["l2_weight"]), max_shift=int(cfg["jitter"]), batch_size=int(cfg["batch_size"]),
                seed=seed, progress=progress, description=f"{self.name}: inverting",
                extra=lambda: bn_weight * stats.pop(),  # R_feature of the forward pass just made
            )
