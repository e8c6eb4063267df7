"""KEDMI: Chen et al., "Knowledge-Enriched Distributional Model Inversion Attacks", ICCV 2021.

Static, white-box, auxiliary data of the same or a similar distribution. The prior is an
inversion-specific GAN: the discriminator has one logit per class of the target (the fake class's
logit is an implicit 0) and learns the target's soft labels on the aux images, besides telling real
from fake; the generator matches D's features of real images and is pushed towards confident
classes (gan/training.py train_kplus1). The attack then learns, per class, a latent Gaussian
(mean mu, log-variance) through the reparameterisation trick on
softplus(LSE(D(G(z)))) - LSE(D(G(z))) + lambda * CE(T(G(z)), y), and samples the class's
reconstructions from it.

Defaults follow SCccc21/Knowledge-Enriched-DMI@1ec92f4 (read to understand, not copied): GAN from
config/celeba.json ("train_gan - first stage") and k+1_gan.py; the attack from attack.py
`dist_inversion` (l.35-96) as driven by recovery.py l.107 (--improved_flag --dist_flag:
lr 0.02, lambda 100, 2,400 iterations, 60 identities per batch). Stated differences: T is in eval
mode when labelling the aux data (the official script leaves it in train mode; digest 3.4); the loss
is summed over classes and divided by the official 60 (same step per class for any batch); each
class gets the number of samples the SoK's size rule gives it instead of 5.

How few GAN steps a small aux set gives: the GAN's length is set in epochs, as the official
config's, and an epoch is len(aux) // gan_batch_size steps of D (three drop-last loaders), a fifth
of them of G. On 30,000 CelebA images the official 120 epochs are ~56,000 D and ~11,000 G steps;
on the 500 aux images of the digits tracks the default's 120 epochs are 7 x 120 = 840 D and 168 G
steps (quick: 280 and 56), and on the 5,000 of the Fashion-MNIST tracks 78 x 120 = 9,360 D and
1,872 G steps: fewer than a sixth of the official G steps, which is why a prior trained on a small
aux set stays blurry.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from pydantic import Field

from reconbench.image.attacks.base import Attack, AttackOptions, Progress, Reconstruction, class_balanced_labels
from reconbench.image.attacks.gan.architectures import architecture_for
from reconbench.image.attacks.gan.cache import load_or_train, model_digest
from reconbench.image.attacks.gan.common import aux_images, chunks, slot_generator
from reconbench.image.attacks.gan.training import train_kplus1
from reconbench.image.knowledge import Knowledge

OFFICIAL_BATCH = 60  # recovery.py: iden = arange(60), five batches


class KEDMI(Attack):
    name = "kedmi"
    paper = "Chen et al., Knowledge-Enriched Distributional Model Inversion Attacks, ICCV 2021"
    family = "optimization"
    scenarios = ("static/white-box/same", "static/white-box/similar")
    class Options(AttackOptions):
        gan_epochs: int = Field(120, ge=1, description="epochs of the K+1 GAN (config/celeba.json epochs)")
        gan_width_div: int = Field(1, ge=1, description="divide every GAN channel count by this (1: the official widths; e.g. 4 for 32x32 on a CPU, 1/16 the cost)")
        gan_batch_size: int = Field(64, ge=1, description="GAN batch (config/celeba.json batch_size)")
        gan_lr: float = Field(2e-4, gt=0, description="Adam lr of G and D, betas (0.5, 0.999) (k+1_gan.py l.105-106)")
        n_critic: int = Field(5, ge=1, description="a G step every n_critic D steps (config/celeba.json)")
        entropy_weight: float = Field(1e-4, ge=0, description="weight of the fakes' class entropy in G's loss (k+1_gan.py l.171)")
        iterations: int = Field(2400, ge=1, description="Adam steps on (mu, log_var) (recovery.py l.107 iter_times)")
        lr: float = Field(0.02, gt=0, description="Adam lr (recovery.py l.107)")
        identity_weight: float = Field(100.0, ge=0, description="lambda, weight of the target's cross-entropy (recovery.py lamda)")
        batch_size: int = Field(60, ge=1, description="classes per optimisation batch (recovery.py: 60 identities); MBD couples a batch")
    presets = {
        "quick": {"gan_epochs": 40, "iterations": 300},
        "paper": {"gan_epochs": 120, "iterations": 2400},
    }

    def run(self, knowledge: Knowledge, *, seed: int, progress: Progress) -> Reconstruction:
        cfg = self.config
        arch = architecture_for(knowledge.input_shape, int(cfg["gan_width_div"]))
        images = aux_images(knowledge, cfg["gan_batch_size"])  # three drop-last loaders need a full batch
        T, K = knowledge.model, knowledge.num_classes
        training = {k: cfg[k] for k in ("gan_epochs", "gan_batch_size", "gan_lr", "n_critic", "entropy_weight")}
        spec = {"prior": "kedmi-k+1", "architecture": arch.describe(), "training": training, "classes": K,
                "aux_sha256": knowledge.aux_data.sha256, "target_sha256": model_digest(T), "seed": seed}
        steps = cfg["gan_epochs"] * (len(images) // cfg["gan_batch_size"])

        def train(nets):
            with torch.no_grad():
                logits = torch.cat([T(images[part]) for part in chunks(len(images), 256)])
            with progress.task(f"{self.name}: training the GAN prior", steps) as advance:
                train_kplus1(nets["generator"], nets["discriminator"], images, logits, epochs=cfg["gan_epochs"],
                             batch_size=cfg["gan_batch_size"], lr=cfg["gan_lr"], betas=(0.5, 0.999),
                             n_critic=cfg["n_critic"], entropy_weight=cfg["entropy_weight"],
                             generator=slot_generator(seed, 0), advance=advance)

        prior = load_or_train(spec, lambda: {"generator": arch.generator(), "discriminator": arch.kplus1(K)},
                              train, seed=seed, device=knowledge.device)
        G, D = prior.networks["generator"], prior.networks["discriminator"]
        for net in (G, D):
            net.requires_grad_(False)
        mu = torch.zeros(K, arch.z_dim, device=knowledge.device)
        log_var = torch.ones(K, arch.z_dim, device=knowledge.device)  # attack.py l.50-51
        noise = slot_generator(seed, 1)
        with progress.task(f"{self.name}: learning latent distributions", cfg["iterations"] * -(-K // cfg["batch_size"])) as advance:
            for part in chunks(K, cfg["batch_size"]):
                mu[part], log_var[part] = self._fit(G, D, T, torch.arange(K, device=knowledge.device)[part], noise, advance)
        n = knowledge.target_size
        labels = class_balanced_labels(n, K).to(knowledge.device)
        eps = torch.randn(n, arch.z_dim, generator=slot_generator(seed, 2)).to(knowledge.device)
        with torch.no_grad():
            z = mu[labels] + torch.exp(0.5 * log_var[labels]) * eps  # reparameterize, attack.py l.21-32
            images_out = torch.cat([G(z[part]) for part in chunks(n, 256)])
        return Reconstruction(images_out.cpu(), labels.cpu(), prior.facts())

    def _fit(self, G, D, T, y: torch.Tensor, noise: torch.Generator, advance):
        """attack.py l.50-81: Adam on (mu, log_var); z = mu + exp(log_var / 2) eps, one draw per class
        per iteration; prior softplus(LSE) - LSE on D's class logits; the official clamp of z is
        dead code (its result is never used), so z is unconstrained here too."""
        cfg = self.config
        mu = torch.zeros(len(y), G.z_dim, device=y.device, requires_grad=True)
        log_var = torch.ones(len(y), G.z_dim, device=y.device, requires_grad=True)
        opt = torch.optim.Adam([mu, log_var], lr=cfg["lr"])
        for _ in range(cfg["iterations"]):
            z = mu + torch.exp(0.5 * log_var) * torch.randn(mu.shape, generator=noise).to(y.device)
            fake = G(z)
            _, logits = D(fake)
            lse = torch.logsumexp(logits, dim=1)
            prior = (F.softplus(lse) - lse).sum()
            loss = (prior + cfg["identity_weight"] * F.cross_entropy(T(fake), y, reduction="sum")) / OFFICIAL_BATCH
            opt.zero_grad()
            loss.backward()
            opt.step()
            advance(1)
        return mu.detach(), log_var.detach()
