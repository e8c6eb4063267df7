"""PLG-MI: Yuan et al., "Pseudo Label-Guided Model Inversion Attack via Conditional Generative
Adversarial Network", AAAI 2023.

Static, white-box, auxiliary data of the same or a similar distribution. The target labels the
aux images: for every class, the n images with the highest softmax probability for it (top-n,
an image may serve several classes). A conditional GAN (ResNet generator with class-conditional
BatchNorm, spectral-norm projection discriminator, hinge loss) is trained on them, its generator
also pushed by the max-margin loss of the target on augmented fakes. The attack optimises, per
reconstruction slot, a latent z of G(., y) with Adam on the max-margin loss of two independent
augmentations; no discriminator term, no clipping.

Defaults follow LetheSec/PLG-MI-Attack@3cf8735 (read to understand, not copied): top_n_selection.py
(n = 30 from the README), train_cgan.py (argparse defaults l.63-126), reconstruct.py (README:
--lr 0.1 --iter_times 600; loop l.73-105). Stated differences: each reconstruction slot is one
restart (the official code keeps 5 seeds per identity, no selection); the loss is summed over
latents and divided by the official 60 identities per batch; augmentations in torch, pinned to
kornia 0.6.6 behaviour, without the flip on digits (gan/augment.py); images are clamped to [0, 1]
when stored (G ends in tanh; the official code feeds its output unclamped, as here during the attack).
"""

from __future__ import annotations

import torch
from pydantic import Field

from reconbench.image.attacks.base import Attack, AttackError, AttackOptions, Progress, Reconstruction, class_balanced_labels
from reconbench.image.attacks.gan.architectures import architecture_for
from reconbench.image.attacks.gan.augment import plg_augment
from reconbench.image.attacks.gan.cache import load_or_train, model_digest
from reconbench.image.attacks.gan.common import aux_images, chunks, slot_generator
from reconbench.image.attacks.gan.training import max_margin, train_cgan
from reconbench.image.knowledge import Knowledge

OFFICIAL_BATCH = 60  # reconstruct.py l.228: 60 identities per batch


def top_n_selection(probs: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(image indices, pseudo-labels): for each class c the n images with the largest p_c
    (top_n_selection.py: a size-n heap per class over the softmax outputs)."""
    n = min(n, probs.shape[0])
    top = probs.topk(n, dim=0).indices  # (n, classes)
    labels = torch.arange(probs.shape[1]).repeat(n)
    return top.reshape(-1), labels


class PLGMI(Attack):
    name = "plg-mi"
    paper = "Yuan et al., Pseudo Label-Guided Model Inversion Attack via Conditional Generative Adversarial Network, AAAI 2023"
    family = "optimization"
    scenarios = ("static/white-box/same", "static/white-box/similar")
    class Options(AttackOptions):
        top_n: int = Field(30, ge=1, description="aux images kept per class by the target's confidence (README --top_n 30)")
        gan_width_div: int = Field(1, ge=1, description="divide every GAN channel count by this (1: the official widths; e.g. 4 for 32x32 on a CPU, 1/16 the cost)")
        gan_iterations: int = Field(600, ge=1, description="cGAN iterations (1 G + n_dis D steps); official 30,000 (--max_iteration, paper preset), scaled for 8x8 on a CPU")
        gan_batch_size: int = Field(64, ge=1, description="cGAN batch (--batch_size)")
        gan_lr: float = Field(2e-4, gt=0, description="Adam lr of G and D (--lr)")
        beta1: float = Field(0.0, ge=0, lt=1, description="Adam beta1 (--beta1)")
        beta2: float = Field(0.9, ge=0, lt=1, description="Adam beta2 (--beta2)")
        n_dis: int = Field(5, ge=1, description="D steps per G step (--n_dis)")
        alpha: float = Field(0.2, ge=0, description="weight of the max-margin loss in G's step (--alpha)")
        iterations: int = Field(300, ge=1, description="Adam steps on z; official 600 (README --iter_times, paper preset), halved for a CPU")
        lr: float = Field(0.1, gt=0, description="Adam lr on z (README --lr 0.1)")
        batch_size: int = Field(500, ge=1, description="latents per forward pass; the result does not depend on it")
    presets = {
        "quick": {"gan_iterations": 100, "iterations": 60},
        "paper": {"gan_iterations": 30000, "iterations": 600},
    }

    def run(self, knowledge: Knowledge, *, seed: int, progress: Progress) -> Reconstruction:
        cfg = self.config
        arch = architecture_for(knowledge.input_shape, int(cfg["gan_width_div"]))
        images = aux_images(knowledge, 1)
        T, K = knowledge.model, knowledge.num_classes
        with torch.no_grad():
            probs = torch.cat([torch.softmax(T(images[part]), 1) for part in chunks(len(images), 256)])
        index, pseudo = top_n_selection(probs.cpu(), cfg["top_n"])
        if len(index) == 0:
            raise AttackError("top-n selection chose no auxiliary image")
        training = {k: cfg[k] for k in ("top_n", "gan_iterations", "gan_batch_size", "gan_lr", "beta1", "beta2", "n_dis", "alpha")}
        spec = {"prior": "plg-mi-cgan", "architecture": arch.describe(), "training": training, "classes": K,
                "aux_sha256": knowledge.aux_data.sha256, "target_sha256": model_digest(T), "seed": seed}
        train_aug = slot_generator(seed, 3)

        def train(nets):
            with progress.task(f"{self.name}: training the conditional GAN", cfg["gan_iterations"]) as advance:
                train_cgan(nets["generator"], nets["discriminator"], T, images[index.to(images.device)],
                           pseudo.to(images.device), num_classes=K, iterations=cfg["gan_iterations"],
                           batch_size=cfg["gan_batch_size"], lr=cfg["gan_lr"], betas=(cfg["beta1"], cfg["beta2"]),
                           n_dis=cfg["n_dis"], alpha=cfg["alpha"],
                           augment=lambda x: plg_augment(x, train_aug, jitter_p=0.5, flip=arch.flip),
                           generator=slot_generator(seed, 0), advance=advance)

        prior = load_or_train(spec, lambda: {"generator": arch.cond_generator(K), "discriminator": arch.projection_discriminator(K)},
                              train, seed=seed, device=knowledge.device)
        G = prior.networks["generator"]
        G.requires_grad_(False)
        n = knowledge.target_size
        labels = class_balanced_labels(n, K).to(knowledge.device)
        z_all = torch.randn(n, arch.z_dim_cond, generator=slot_generator(seed, 1)).to(knowledge.device)
        attack_aug = slot_generator(seed, 2)
        out = torch.zeros((n, *knowledge.input_shape), device=knowledge.device)
        with progress.task(f"{self.name}: optimising latents", cfg["iterations"] * len(range(0, n, cfg["batch_size"]))) as advance:
            for part in chunks(n, cfg["batch_size"]):
                z = z_all[part].clone().requires_grad_(True)
                y = labels[part]
                opt = torch.optim.Adam([z], lr=cfg["lr"])
                for _ in range(cfg["iterations"]):
                    fake = G(z, y)
                    views = [plg_augment(fake, attack_aug, jitter_p=1.0, flip=arch.flip) for _ in range(2)]
                    loss = sum(max_margin(T(v), y) for v in views) * len(y) / OFFICIAL_BATCH
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    advance(1)
                with torch.no_grad():
                    out[part] = G(z, y).clamp(0, 1)
        return Reconstruction(out.cpu(), labels.cpu(), prior.facts())
