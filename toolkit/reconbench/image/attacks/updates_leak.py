"""Updates-Leak: Salem, Bhattacharya, Backes, Fritz, Zhang, "Updates-Leak: Data Set Inference and
Reconstruction Attacks in Online Learning", USENIX Security 2020 (arXiv 1904.01067).

Black-box, dynamic, same-distribution data. The adversary queries a fixed probing set on the
model before and after the update; the posterior difference delta = F_before(X_probe) -
F_after(X_probe) (flattened, |probe| x classes) is the attack input. To learn to decode it, the
adversary mimics the setting on its own data: it trains a shadow model on part of its aux data,
updates copies of it with many shadow update sets drawn from another part (the update recipe is
public: the view's `knowledge.public.update_recipe`) and records each shadow delta with its update set.

What is implemented: the paper's multi-sample reconstruction attack (A_MSR, |update set| = 100),
with its encoder (delta -> 50-d latent code) and its generator G(noise, code), trained as their
CBM-GAN (MSR_attack.py): per step, the discriminator D learns real (the shadow update set's
images) against fake (G's samples) with BCE, then G minimises the best-match loss (for every
image of a shadow update set, the MSE to the closest generated sample) plus the adversarial BCE
of D(fake) against "real". D is their _DiscriminatorMNIST (three hidden layers 1024-512-256 with
BatchNorm and LeakyReLU 0.2, tanh then sigmoid), halved twice in width on the 8x8 tracks as the
generator is. Option discriminator=false gives the best-match-only variant (version 1 of this
attack, which dropped D). At attack time, as in their MSR_evaluation.py: generate
20,000 samples for the target delta, cluster them with K-means into |D_tar| clusters, and take
the generated sample closest to each centre. Labels: the after-update model's prediction for
each reconstruction (black-box queries, counted).

Defaults from the authors' code (github.com/AhmedSalem2/Updates-Leak): probing set 100
(--numOfPoints), latent code 50 (--attackZ), noise 50 (--nz), encoder 256-128-50 with tanh,
generator three hidden layers of 2048 with BatchNorm, Adam lr 2e-4 betas (0.5, 0.999), 10,000
shadow updates (dataGeneration.py), the generator evaluated after 20 epochs, 20,000 generated
samples, K-means random_state 170 (MSR_evaluation.py). Sampling mode: MSR_evaluation.py never
calls eval() (l.147-179), so their 20,000 samples come from a generator in train mode (BatchNorm
over the 20,000, the encoder's dropout 0.5 active per sample); the `paper` preset does the same
(sample_in_train_mode), the default samples in eval mode (running statistics, one code for all
samples), as every earlier entry of this attack did. Budget on the 8x8 tracks (2-core CPU):
1,000 shadow updates, generator width 256 (their 2048 is for 784 pixels; we have 64), 4 epochs
of 4 updates per step (1,000 steps), one K-means run (today's sklearn default; theirs had 10). Aux split (seeded): probing set, then the rest halved into the shadow
model's training set and the pool the shadow update sets are drawn from.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from pydantic import Field
from torch import nn
from torch.func import functional_call, grad, vmap

from reconbench.image.attacks.base import Attack, AttackOptions, Auto, PositiveInt, Progress, Reconstruction
from reconbench.image.attacks.priors import seeded_generator, track_budget
from reconbench.image.knowledge import Knowledge
from reconbench.image.models.training import train_classifier


class Encoder(nn.Module):
    """delta -> latent code (their encoder: 256, 128 with dropout 0.5, tanh code)."""

    def __init__(self, in_features: int, latent: int):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_features, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Dropout(0.5), nn.Linear(128, latent), nn.Tanh()
        )

    def forward(self, delta: torch.Tensor) -> torch.Tensor:
        return self.net(delta)


class Discriminator(nn.Module):
    """Image -> P(real): their _DiscriminatorMNIST (network.py) with width `hidden` for the first layer."""

    def __init__(self, pixels: int, hidden: int):
        super().__init__()
        widths = [pixels, hidden, hidden // 2, hidden // 4]
        layers: list[nn.Module] = []
        for a, b in zip(widths, widths[1:]):
            layers += [nn.Linear(a, b), nn.BatchNorm1d(b), nn.LeakyReLU(0.2)]
        layers += [nn.Linear(widths[-1], 1), nn.Tanh(), nn.Sigmoid()]  # tanh then sigmoid, as theirs
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x.flatten(1)).view(-1)


class Generator(nn.Module):
    """(noise, code) -> image: three hidden layers with BatchNorm, sigmoid output (pixels in [0, 1])."""

    def __init__(self, noise: int, latent: int, hidden: int, input_shape: tuple[int, int, int]):
        super().__init__()
        self.input_shape = tuple(input_shape)
        pixels = int(np.prod(input_shape))
        layers: list[nn.Module] = []
        width = noise + latent
        for _ in range(3):
            layers += [nn.Linear(width, hidden), nn.BatchNorm1d(hidden), nn.ReLU()]
            width = hidden
        layers += [nn.Linear(width, pixels), nn.Sigmoid()]
        self.net = nn.Sequential(*layers)

    def forward(self, z: torch.Tensor, code: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([z, code], dim=1)).view(-1, *self.input_shape)


def best_match_loss(real: torch.Tensor, fake: torch.Tensor) -> torch.Tensor:
    """CBM loss: each real image against its closest generated one, MSE averaged.

    real (U, n, D), fake (U, m, D): U update sets at once."""
    d = torch.cdist(real, fake).pow(2)  # (U, n, m)
    closest = d.argmin(dim=2)
    matched = torch.gather(fake, 1, closest[..., None].expand(-1, -1, fake.shape[-1]))
    return nn.functional.mse_loss(matched, real)


def shadow_deltas(model: nn.Module, probe: torch.Tensor, pool, update_sets: np.ndarray,
                  recipe, chunk: int, generator: torch.Generator, advance=lambda steps=1: None,
                  device: str | torch.device = "cpu") -> torch.Tensor:
    """Posterior differences of the shadow model for every shadow update set, updates vectorised.

    `pool` is an image set of the view (knowledge.aux_data.subset(...)); each update follows
    `recipe` (the view's public update recipe: SGD with momentum, batches in a seeded order, BatchNorm frozen),
    as the target's update does (reconbench.image.dynamic.fine_tune)."""
    model = model.to(device).eval()
    probe = probe.to(device)
    names = [n for n, _ in model.named_parameters()]
    base = {n: p.detach() for n, p in model.named_parameters()}
    buffers = {n: b.detach() for n, b in model.named_buffers()}
    x_pool, y_pool = pool.as_float(device), torch.from_numpy(pool.labels).to(device)

    def forward(p, x):
        return functional_call(model, (p, buffers), (x,))

    def batch_loss(p, x, y):
        return nn.functional.cross_entropy(forward(p, x), y)

    batched_grad = vmap(grad(batch_loss), in_dims=(0, 0, 0))
    batched_probs = vmap(lambda p, x: torch.softmax(forward(p, x), dim=1), in_dims=(0, None))
    with torch.no_grad():
        before = torch.softmax(forward(base, probe), dim=1)
    out = []
    size = update_sets.shape[1]
    for start in range(0, len(update_sets), chunk):
        sets = torch.from_numpy(update_sets[start : start + chunk]).to(device)
        k = len(sets)
        params = {n: base[n].expand(k, *base[n].shape).clone() for n in names}
        momentum = {n: None for n in names}
        for _epoch in range(recipe.epochs):
            order = torch.stack([torch.randperm(size, generator=generator) for _ in range(k)]).to(device)
            for b in range(0, size, recipe.batch_size):
                idx = torch.gather(sets, 1, order[:, b : b + recipe.batch_size])
                g = batched_grad(params, x_pool[idx], y_pool[idx])
                for n in names:  # torch.optim.SGD with momentum (dampening 0, no Nesterov)
                    momentum[n] = g[n] if momentum[n] is None else recipe.momentum * momentum[n] + g[n]
                    params[n] = params[n] - recipe.lr * momentum[n]
        with torch.no_grad():
            out.append((before[None] - batched_probs(params, probe)).flatten(1).cpu())
        advance(k)
    return torch.cat(out)


class UpdatesLeak(Attack):
    name = "updates-leak"
    paper = "Salem et al., Updates-Leak: Data Set Inference and Reconstruction Attacks in Online Learning, USENIX Security 2020"
    family = "training"
    scenarios = ("dynamic/black-box/same",)
    version = "2"  # 2: the CBM-GAN's discriminator, as in the paper (1: best-match loss only)

    class Options(AttackOptions):
        probe_size: int = Field(100, ge=1, description="probing set size (MSR_attack.py --numOfPoints)")
        shadow_updates: PositiveInt | Auto = Field("auto", description="10,000 in dataGeneration.py; auto = 1,000 on the 8x8 tracks")
        latent: int = Field(50, ge=1, description="latent code size (--attackZ)")
        noise: int = Field(50, ge=1, description="generator noise size (--nz)")
        hidden: PositiveInt | Auto = Field("auto", description="generator width: 2048 in network.py (784 pixels); auto = 256 on the 8x8 tracks")
        epochs: PositiveInt | Auto = Field("auto", description="20 (MSR_evaluation.py evaluates the epoch-20 generator); auto = 4 on the 8x8 tracks")
        updates_per_step: PositiveInt | Auto = Field("auto", description="1 in MSR_attack.py (batch_size=1); auto = 4 on the 8x8 tracks")
        lr: float = Field(2e-4, gt=0, description="Adam lr, betas (0.5, 0.999) (--lr, --beta1)")
        generated: int = Field(20000, ge=1, description="samples generated for clustering (MSR_evaluation.py generateImgs)")
        kmeans_seed: int = Field(170, ge=0, description="K-means random_state (MSR_evaluation.py)")
        kmeans_restarts: PositiveInt | Auto = Field("auto", description="10, sklearn's n_init default in their day; auto = 1 on the 8x8 tracks")
        discriminator: bool = Field(True, description="train the CBM-GAN's discriminator (MSR_attack.py); false = best-match loss only")
        disc_hidden: PositiveInt | Auto = Field("auto", description="discriminator's first width: 1024 in network.py; auto = 128 on the 8x8 tracks")
        sample_in_train_mode: bool = Field(False, description="MSR_evaluation.py never calls eval() (l.147-179): BatchNorm on "
                                           "the batch of all samples, the encoder's dropout per sample; false = eval mode")

    presets = {
        "quick": {"shadow_updates": 200, "epochs": 2, "generated": 2000},
        # the authors' code: dataGeneration.py, network.py, MSR_attack.py, MSR_evaluation.py
        "paper": {"shadow_updates": 10000, "hidden": 2048, "epochs": 20, "updates_per_step": 1, "generated": 20000,
                  "kmeans_restarts": 10, "discriminator": True, "disc_hidden": 1024, "sample_in_train_mode": True},
    }

    def run(self, knowledge: Knowledge, *, seed: int, progress: Progress) -> Reconstruction:
        cfg = self.config
        shape = knowledge.input_shape
        n_shadow = track_budget(cfg, "shadow_updates", shape, paper=10000, small=1000)
        hidden = track_budget(cfg, "hidden", shape, paper=2048, small=256)
        epochs = track_budget(cfg, "epochs", shape, paper=20, small=4)
        per_step = track_budget(cfg, "updates_per_step", shape, paper=1, small=4)
        query_before, query_after = knowledge.extra("query_before"), knowledge.extra("query_after")
        aux, n, device = knowledge.aux_data, knowledge.target_size, knowledge.device
        gen = seeded_generator(seed)
        rng = np.random.default_rng(seed)
        torch.manual_seed(seed)

        # Aux split: probing set | shadow model's training set | pool of shadow update images.
        probe_size = int(cfg["probe_size"])
        order = rng.permutation(len(aux))
        probe_idx, rest = order[:probe_size], order[probe_size:]
        train_part, pool = aux.subset(np.sort(rest[: len(rest) // 2])), aux.subset(np.sort(rest[len(rest) // 2 :]))
        if len(pool) < n:
            raise ValueError(f"updates-leak needs at least {n} aux images for shadow update sets, has {len(pool)}")
        probe = aux.subset(probe_idx).as_float()

        # Shadow model: the track's public architecture and training recipe (from the view's public
        # facts, never the registry), on the attacker's data, seeded by the run.
        public = knowledge.public
        recipe = dataclasses.replace(public.train_recipe, seed=seed)
        shadow = train_classifier(public.new_model(), train_part, recipe, device=device)
        for p in shadow.parameters():
            p.requires_grad_(False)
        update_sets = np.stack([rng.choice(len(pool), size=n, replace=False) for _ in range(n_shadow)])
        with progress.task(f"{self.name}: shadow updates", n_shadow) as advance:
            deltas = shadow_deltas(shadow, probe, pool, update_sets, public.update_recipe, chunk=50, generator=gen, advance=advance,
                                   device=device)
        deltas = deltas.to(device)
        scale = deltas.std().clamp(min=1e-12)  # one scalar: the deltas are tiny posterior changes

        # Encoder + generator, best-match loss over the shadow update sets.
        encoder = Encoder(deltas.shape[1], int(cfg["latent"])).to(device)
        generator = Generator(int(cfg["noise"]), int(cfg["latent"]), hidden, shape).to(device)
        params = list(encoder.parameters()) + list(generator.parameters())
        opt = torch.optim.Adam(params, lr=float(cfg["lr"]), betas=(0.5, 0.999))
        pool_images = pool.as_float(device).flatten(1)
        disc = opt_d = None
        if cfg["discriminator"]:
            disc_hidden = track_budget(cfg, "disc_hidden", shape, paper=1024, small=128)
            disc = Discriminator(pool_images.shape[1], disc_hidden).to(device).train()
            opt_d = torch.optim.Adam(disc.parameters(), lr=float(cfg["lr"]), betas=(0.5, 0.999))  # optimizerD
        else:
            cfg["disc_hidden"] = None if cfg["disc_hidden"] == "auto" else cfg["disc_hidden"]  # unused: record so
        encoder.train(), generator.train()
        steps = epochs * len(range(0, n_shadow, per_step))
        with progress.task(f"{self.name}: training the decoder", steps) as advance:
            for _ in range(epochs):
                perm = torch.randperm(n_shadow, generator=gen)
                for start in range(0, n_shadow, per_step):
                    batch = perm[start : start + per_step]
                    u = len(batch)
                    code = encoder(deltas[batch.to(device)] / scale)  # (u, latent)
                    z = torch.randn(u * n, int(cfg["noise"]), generator=gen).to(device)
                    fake = generator(z, code.repeat_interleave(n, dim=0)).view(u, n, -1)
                    real = pool_images[torch.from_numpy(update_sets[batch.numpy()]).to(device)]  # (u, n, D)
                    loss = best_match_loss(real, fake)
                    if disc is not None:
                        # (1) D: real -> 1, fake -> 0 (two BatchNorm batches, as their two backward passes)
                        opt_d.zero_grad(set_to_none=True)
                        bce = nn.functional.binary_cross_entropy
                        real_p, fake_p = disc(real.flatten(0, 1)), disc(fake.detach().flatten(0, 1))
                        (bce(real_p, torch.ones_like(real_p)) + bce(fake_p, torch.zeros_like(fake_p))).backward()
                        opt_d.step()
                        # (2) G: best match + the adversarial term, fakes labelled real
                        judged = disc(fake.flatten(0, 1))
                        loss = loss + bce(judged, torch.ones_like(judged))
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                    advance(1)
        # The target's update: 2 x probe_size queries, then decode, cluster, label.
        delta = (query_before(probe) - query_after(probe)).flatten()[None].to(device)
        m = int(cfg["generated"])
        z = torch.randn(m, int(cfg["noise"]), generator=gen).to(device)
        with torch.no_grad():
            if cfg["sample_in_train_mode"]:
                # As MSR_evaluation.py: the modules stay in train mode, so the delta is repeated per
                # sample (l.172), dropout draws per row, and BatchNorm normalises over all m samples
                # at once (one batch, l.179); dropout draws from torch's seeded global stream.
                encoder.train(), generator.train()
                samples = generator(z, encoder(delta.expand(m, -1) / scale))
            else:
                encoder.eval(), generator.eval()
                code = encoder(delta / scale)
                samples = torch.cat([generator(z[i : i + 4096], code.expand(len(z[i : i + 4096]), -1)) for i in range(0, m, 4096)])
        encoder.eval(), generator.eval()
        restarts = track_budget(cfg, "kmeans_restarts", shape, paper=10, small=1)
        images = self._cluster_representatives(samples.cpu(), n, int(cfg["kmeans_seed"]), restarts)
        labels = query_after(images).argmax(1).cpu()
        return Reconstruction(images.cpu(), labels)

    @staticmethod
    def _cluster_representatives(samples: torch.Tensor, k: int, seed: int, restarts: int) -> torch.Tensor:
        """K-means into k clusters; each cluster's representative is its member closest to the centre."""
        from sklearn.cluster import KMeans

        flat = samples.flatten(1).numpy().astype(np.float64)
        k = min(k, len(flat))
        km = KMeans(n_clusters=k, random_state=seed, n_init=restarts).fit(flat)
        reps = []
        for c in range(k):
            members = np.flatnonzero(km.labels_ == c)
            if len(members) == 0:
                continue
            d = ((flat[members] - km.cluster_centers_[c]) ** 2).sum(1)
            reps.append(members[int(d.argmin())])
        return samples[torch.as_tensor(reps, dtype=torch.long)]
