"""The three GAN trainings, each as in its official code (file/line cited per step).

All three take images in [0, 1] (N, C, H, W) on the training device and a seeded torch.Generator
for data order and latent draws; module initialisation uses torch's global RNG, which the caller
seeds (gan/cache.py forks and seeds it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
import torch.nn.functional as F
from torch import nn

Advance = Callable[[int], None]


def _epoch(n: int, batch: int, drop_last: bool, generator: torch.Generator) -> Iterator[torch.Tensor]:
    order = torch.randperm(n, generator=generator)
    stop = n - n % batch if drop_last else n
    for start in range(0, stop, batch):
        yield order[start:start + batch]


def _forever(n: int, batch: int, generator: torch.Generator) -> Iterator[torch.Tensor]:
    """PLG-MI's InfiniteSamplerWrapper (dataset.py l.101-109): endless reshuffled passes."""
    buffer = torch.empty(0, dtype=torch.int64)
    while True:
        while len(buffer) < batch:
            buffer = torch.cat([buffer, torch.randperm(n, generator=generator)])
        yield buffer[:batch]
        buffer = buffer[batch:]


def _z(n: int, dim: int, generator: torch.Generator, device: torch.device) -> torch.Tensor:
    return torch.randn(n, dim, generator=generator).to(device)


def train_wgan_gp(G: nn.Module, D: nn.Module, images: torch.Tensor, *, epochs: int, batch_size: int, lr: float,
                  betas: tuple[float, float], n_critic: int, gp_weight: float, generator: torch.Generator,
                  advance: Advance) -> None:
    """GMI Celeba/train_gan.py: Adam(2e-4, (0.5, 0.999)) for both (l.74-75); per batch one critic
    step on -(mean D(real) - mean D(G(z))) + 10 GP (l.89-101), GP two-sided on per-sample
    interpolates (l.24-36); a G step on -mean D(G(z')) whenever the global step divides by
    n_critic (l.105-116). The loader shuffles and keeps the last partial batch."""
    device = images.device
    opt_d = torch.optim.Adam(D.parameters(), lr=lr, betas=betas)
    opt_g = torch.optim.Adam(G.parameters(), lr=lr, betas=betas)
    G.train(), D.train()
    step = 0
    for _ in range(epochs):
        for index in _epoch(len(images), batch_size, False, generator):
            step += 1
            real = images[index]
            with torch.no_grad():
                fake = G(_z(len(real), G.z_dim, generator, device))
            alpha = torch.rand(len(real), 1, 1, 1, generator=generator).to(device)
            mix = (real + alpha * (fake - real)).requires_grad_(True)
            grad = torch.autograd.grad(D(mix).sum(), mix, create_graph=True)[0]
            gp = ((grad.flatten(1).norm(dim=1) - 1) ** 2).mean()
            loss_d = -(D(real).mean() - D(fake).mean()) + gp_weight * gp
            opt_d.zero_grad()
            loss_d.backward()
            opt_d.step()
            if step % n_critic == 0:
                D.requires_grad_(False)
                loss_g = -D(G(_z(len(real), G.z_dim, generator, device))).mean()
                opt_g.zero_grad()
                loss_g.backward()
                opt_g.step()
                D.requires_grad_(True)
            advance(1)


def _lse(logits: torch.Tensor) -> torch.Tensor:
    return torch.logsumexp(logits, dim=1)


def train_kplus1(G: nn.Module, D: nn.Module, images: torch.Tensor, target_logits: torch.Tensor, *, epochs: int,
                 batch_size: int, lr: float, betas: tuple[float, float], n_critic: int, entropy_weight: float,
                 generator: torch.Generator, advance: Advance) -> None:
    """KEDMI k+1_gan.py: three independently shuffled drop-last loaders over the public data
    (l.97, l.115-116, l.124-125); D loss = soft cross-entropy against softmax(T(x_l)) (l.141,
    utils.softXEnt l.383-386) + 1/2 [softplus(LSE(x_u)) - LSE(x_u) + softplus(LSE(G(z)))]
    (l.142); every n_critic steps a G step on mean |mean feat(G(z')) - mean feat(x_u2)| +
    1e-4 x entropy of D's softmax on the fakes, summed over the batch (l.159-176, HLoss l.388-395).
    Adam(2e-4, (0.5, 0.999)) for both (l.105-106). `target_logits` are T's logits on `images`,
    computed once with T in eval mode (the official code leaves T in train mode; see the digest)."""
    device = images.device
    opt_d = torch.optim.Adam(D.parameters(), lr=lr, betas=betas)
    opt_g = torch.optim.Adam(G.parameters(), lr=lr, betas=betas)
    G.train(), D.train()
    soft = torch.softmax(target_logits, dim=1)
    step = 0
    for _ in range(epochs):
        unlabelled = _epoch(len(images), batch_size, True, generator)
        unlabelled2 = _epoch(len(images), batch_size, True, generator)
        for index in _epoch(len(images), batch_size, True, generator):
            step += 1
            x_l, x_u, x_u2 = images[index], images[next(unlabelled)], images[next(unlabelled2)]
            with torch.no_grad():
                fake = G(_z(len(x_l), G.z_dim, generator, device))
            _, out_l = D(x_l)
            _, out_u = D(x_u)
            _, out_f = D(fake)
            loss_lab = -(soft[index] * F.log_softmax(out_l, dim=1)).sum() / len(x_l)
            loss_unlab = 0.5 * (F.softplus(_lse(out_u)).mean() - _lse(out_u).mean() + F.softplus(_lse(out_f)).mean())
            opt_d.zero_grad()
            (loss_lab + loss_unlab).backward()
            opt_d.step()
            if step % n_critic == 0:
                D.requires_grad_(False)
                feat_f, out_f = D(G(_z(len(x_l), G.z_dim, generator, device)))
                feat_u, _ = D(x_u2)
                entropy = -(F.softmax(out_f, dim=1) * F.log_softmax(out_f, dim=1)).sum()
                loss_g = (feat_f.mean(0) - feat_u.mean(0)).abs().mean() + entropy_weight * entropy
                opt_g.zero_grad()
                loss_g.backward()
                opt_g.step()
                D.requires_grad_(True)
            advance(1)


def max_margin(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """PLG-MI losses.py l.7-13: mean over the batch of (-l_y + max_{j != y} l_j), raw logits."""
    real = logits.gather(1, labels[:, None]).squeeze(1)
    other = logits.masked_fill(F.one_hot(labels, logits.shape[1]).bool(), float("-inf")).amax(1)
    return (-real).mean() + other.mean()


def train_cgan(G: nn.Module, D: nn.Module, T: nn.Module, images: torch.Tensor, labels: torch.Tensor, *,
               num_classes: int, iterations: int, batch_size: int, lr: float, betas: tuple[float, float], n_dis: int,
               alpha: float, augment: Callable[[torch.Tensor], torch.Tensor], generator: torch.Generator,
               advance: Advance) -> None:
    """PLG-MI train_cgan.py: Adam(2e-4, (0.0, 0.9)) for both (l.237-238); per iteration one G
    step on -mean D(G(z, y)) + 0.2 MM(T(aug(G(z, y))), y) with y uniform (l.268-292), then n_dis = 5
    D steps on the hinge loss with fresh fakes and reals (l.300-310, losses.py l.38-41); reals are
    the top-n pseudo-labelled images plus U(0, 1/256) noise (l.167-168, 199). T stays in eval mode."""
    device = images.device
    opt_d = torch.optim.Adam(D.parameters(), lr=lr, betas=betas)
    opt_g = torch.optim.Adam(G.parameters(), lr=lr, betas=betas)
    G.train(), D.train()
    reals = _forever(len(images), batch_size, generator)

    def fakes() -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.randint(num_classes, (batch_size,), generator=generator).to(device)
        return G(_z(batch_size, G.z_dim, generator, device), y), y

    for _ in range(iterations):
        D.requires_grad_(False)
        fake, y = fakes()
        loss_g = -D(fake, y).mean() + alpha * max_margin(T(augment(fake)), y)
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()
        D.requires_grad_(True)
        for _ in range(n_dis):
            with torch.no_grad():
                fake, y = fakes()
            index = next(reals)
            real = images[index] + torch.rand(images[index].shape, generator=generator).to(device) / 256.0
            loss_d = F.relu(1 - D(real, labels[index])).mean() + F.relu(1 + D(fake, y)).mean()
            opt_d.zero_grad()
            loss_d.backward()
            opt_d.step()
        advance(1)
