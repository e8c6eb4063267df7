"""Revealer / GMI: Zhang et al., "The Secret Revealer: Generative Model-Inversion Attacks Against
Deep Neural Networks", CVPR 2020.

Static, white-box, auxiliary data of the same or a similar distribution. A WGAN-GP generator and
critic are trained on the aux images alone (the prior, cached: gan/cache.py); then, per
reconstruction slot, a latent z is optimised on  -D(G(z)) + lambda * CE(T(G(z)), y)  with the
official hand-written Nesterov momentum and clamp, over random restarts; the restart whose image
gives the highest target logit for the slot's label is kept.

Defaults follow AI-secure/GMI-Attack@dac39bc (read to understand, not copied): GAN training from
Celeba/celeba.json and train_gan.py, the attack from Celeba/attack.py `inversion` (l.11-86).
Deliberate differences, all stated: the loss is summed over latents and divided by the official
batch of 100 identities (attack.py l.125-127 attacks arange(100)), so each latent takes the official
step however many are batched; the restart choice reads the logit of the slot's own label with a
-inf start (the official code reads score[i, i] and starts at 0: correct only for labels 0..99
with a positive logit); class slots follow the SoK's size rule (|D_tar| images, classes balanced).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from pydantic import Field

from reconbench.image.attacks.base import Attack, AttackOptions, Progress, Reconstruction, class_balanced_labels
from reconbench.image.attacks.gan.architectures import architecture_for
from reconbench.image.attacks.gan.cache import load_or_train
from reconbench.image.attacks.gan.common import aux_images, chunks, slot_generator
from reconbench.image.attacks.gan.training import train_wgan_gp
from reconbench.image.knowledge import Knowledge

OFFICIAL_BATCH = 100  # identities per optimisation batch in Celeba/attack.py (l.125-127: iden = 0..99)


class Revealer(Attack):
    name = "revealer"
    paper = "Zhang et al., The Secret Revealer: Generative Model-Inversion Attacks Against Deep Neural Networks, CVPR 2020"
    family = "optimization"
    scenarios = ("static/white-box/same", "static/white-box/similar")
    class Options(AttackOptions):
        # GAN prior: Celeba/celeba.json "GAN" block and train_gan.py
        gan_epochs: int = Field(280, ge=1, description="WGAN-GP epochs over the aux images (celeba.json epochs)")
        gan_width_div: int = Field(1, ge=1, description="divide every GAN channel count by this (1: the official widths; e.g. 4 for 32x32 on a CPU, 1/16 the cost)")
        gan_batch_size: int = Field(64, ge=1, description="GAN batch (celeba.json batch_size)")
        gan_lr: float = Field(2e-4, gt=0, description="Adam lr of G and D, betas (0.5, 0.999) (celeba.json, train_gan.py l.74-75)")
        n_critic: int = Field(5, ge=1, description="a G step every n_critic critic steps (celeba.json)")
        gp_weight: float = Field(10.0, ge=0, description="gradient-penalty weight (train_gan.py l.97)")
        # latent search: attack.py `inversion` (l.11) and its loop
        iterations: int = Field(300, ge=1, description="latent steps per restart; official iter_times 1500 (paper preset), fewer for 8x8 on a CPU")
        lr: float = Field(0.02, gt=0, description="step size of the Nesterov-style update (attack.py lr)")
        momentum: float = Field(0.9, ge=0, lt=1, description="momentum (attack.py)")
        identity_weight: float = Field(100.0, ge=0, description="lambda, weight of the target's cross-entropy (attack.py lamda)")
        restarts: int = Field(2, ge=1, description="random restarts, best kept per slot; official 5 (l.26, paper preset)")
        clip: float = Field(1.0, gt=0, description="z clamped to [-clip, clip] after each step (attack.py clip_range)")
        batch_size: int = Field(500, ge=1, description="latents per forward pass; the result does not depend on it")
    # "paper" = the official budget; the default keeps the official GAN length (280 epochs of 500
    # images are ~2,200 critic steps) and shortens the latent search; "quick" is for trying it out:
    # 150 epochs is about the shortest prior that serves (FID in the eval CNN's features 8.0 vs 75
    # at 40 epochs; tests/test_attacks_gan.py), ~40 s on an idle 2-core CPU.
    presets = {
        "quick": {"gan_epochs": 150, "iterations": 100, "restarts": 1},
        "paper": {"gan_epochs": 280, "iterations": 1500, "restarts": 5},
    }

    def run(self, knowledge: Knowledge, *, seed: int, progress: Progress) -> Reconstruction:
        cfg = self.config
        arch = architecture_for(knowledge.input_shape, int(cfg["gan_width_div"]))
        images = aux_images(knowledge, 1)
        training = {k: cfg[k] for k in ("gan_epochs", "gan_batch_size", "gan_lr", "n_critic", "gp_weight")}
        spec = {"prior": "gmi-wgan-gp", "architecture": arch.describe(), "training": training,
                "aux_sha256": knowledge.aux_data.sha256, "seed": seed}
        steps = cfg["gan_epochs"] * -(-len(images) // cfg["gan_batch_size"])

        def train(nets):
            with progress.task(f"{self.name}: training the GAN prior", steps) as advance:
                train_wgan_gp(nets["generator"], nets["discriminator"], images, epochs=cfg["gan_epochs"],
                              batch_size=cfg["gan_batch_size"], lr=cfg["gan_lr"], betas=(0.5, 0.999),
                              n_critic=cfg["n_critic"], gp_weight=cfg["gp_weight"],
                              generator=slot_generator(seed, 0), advance=advance)

        prior = load_or_train(spec, lambda: {"generator": arch.generator(), "discriminator": arch.critic()},
                              train, seed=seed, device=knowledge.device)
        G, D, T = prior.networks["generator"], prior.networks["discriminator"], knowledge.model
        for net in (G, D):
            net.requires_grad_(False)
        n = knowledge.target_size
        labels = class_balanced_labels(n, knowledge.num_classes).to(knowledge.device)
        best_score = torch.full((n,), float("-inf"), device=knowledge.device)
        best = torch.zeros((n, *knowledge.input_shape), device=knowledge.device)
        total = cfg["restarts"] * cfg["iterations"] * len(range(0, n, cfg["batch_size"]))
        with progress.task(f"{self.name}: optimising latents", total) as advance:
            for restart in range(cfg["restarts"]):
                z_all = torch.randn(n, arch.z_dim, generator=slot_generator(seed, 1 + restart)).to(knowledge.device)
                for part in chunks(n, cfg["batch_size"]):
                    z = self._invert(G, D, T, z_all[part], labels[part], advance)
                    with torch.no_grad():
                        fake = G(z)
                        score = T(fake).gather(1, labels[part, None]).squeeze(1)
                    better = score > best_score[part]
                    best_score[part] = torch.where(better, score, best_score[part])
                    best[part] = torch.where(better[:, None, None, None], fake, best[part])
        return Reconstruction(best.cpu(), labels.cpu(), prior.facts())

    def _invert(self, G, D, T, z: torch.Tensor, y: torch.Tensor, advance) -> torch.Tensor:
        """attack.py l.38-57: v <- mu v - lr grad; z <- z - mu v_prev + (1 + mu) v; clamp z."""
        cfg = self.config
        mu, lr, lam, clip = cfg["momentum"], cfg["lr"], cfg["identity_weight"], cfg["clip"]
        v = torch.zeros_like(z)
        for _ in range(cfg["iterations"]):
            z = z.detach().requires_grad_(True)
            fake = G(z)
            loss = (-D(fake).sum() + lam * F.cross_entropy(T(fake), y, reduction="sum")) / OFFICIAL_BATCH
            (grad,) = torch.autograd.grad(loss, z)
            v_prev, v = v, mu * v - lr * grad
            z = (z.detach() - mu * v_prev + (1 + mu) * v).clamp(-clip, clip)
            advance(1)
        return z.detach()
