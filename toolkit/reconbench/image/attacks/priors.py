"""Image priors and optimisation pieces shared by the optimisation-based attacks.

Kept in one place so that DeepDream, DeepInversion and the others use the same definitions.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn


def total_variation(x: torch.Tensor, p: int = 2) -> torch.Tensor:
    """R_tv: mean |x_{i+1,j} - x_{i,j}|^p + |x_{i,j+1} - x_{i,j}|^p per image, summed over the batch.

    The toolkit's own TV (MI-Face and DeepInversion use it). It is *not* NVlabs' `loss_var_l2`
    (that is `nvlabs_tv_l2` below: a norm over the whole batch of four difference maps, not
    squared, not averaged), although DeepInversion here weights it with NVlabs' --di_var_scale.
    """
    dh = (x[..., 1:, :] - x[..., :-1, :]).abs().pow(p)
    dw = (x[..., :, 1:] - x[..., :, :-1]).abs().pow(p)
    return dh.flatten(1).mean(1).sum() + dw.flatten(1).mean(1).sum()


def l2_prior(x: torch.Tensor) -> torch.Tensor:
    """R_l2: the squared l2 norm of each image, summed over the batch (the toolkit's; NVlabs'
    `loss_l2` is `nvlabs_l2` below)."""
    return x.flatten(1).pow(2).sum(1).sum()


def nvlabs_tv_l2(x: torch.Tensor) -> torch.Tensor:
    """NVlabs' `loss_var_l2` (DeepInversion, deepinversion.py `get_image_prior_losses`): the l2
    norm, over the whole batch, of each of the four neighbour differences (horizontal, vertical and
    both diagonals), summed. Not squared and not averaged per pixel, unlike `total_variation`."""
    diffs = (
        x[..., :, :-1] - x[..., :, 1:],
        x[..., :-1, :] - x[..., 1:, :],
        x[..., 1:, :-1] - x[..., :-1, 1:],
        x[..., :-1, :-1] - x[..., 1:, 1:],
    )
    return sum(torch.norm(d) for d in diffs)


def nvlabs_l2(x: torch.Tensor) -> torch.Tensor:
    """NVlabs' `loss_l2` (deepinversion.py): the l2 norm of each image, averaged over the batch."""
    return torch.norm(x.flatten(1), dim=1).mean()


def jitter(x: torch.Tensor, max_shift: int, generator: torch.Generator) -> torch.Tensor:
    """Random roll by up to max_shift pixels (DeepDream/DeepInversion's jitter augmentation)."""
    if max_shift <= 0:
        return x
    dx, dy = torch.randint(-max_shift, max_shift + 1, (2,), generator=generator).tolist()
    return torch.roll(x, shifts=(dx, dy), dims=(-2, -1))


class BatchNormStatistics:
    """Collects, for every BatchNorm2d, ||mu_batch - running_mean||_2 + ||var_batch - running_var||_2.

    This is DeepInversion's feature-distribution regulariser R_feature (Yin et al., CVPR'20, Eq. 4).
    """

    def __init__(self, model: nn.Module):
        self.layers = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
        self.losses: list[torch.Tensor] = []

    def _hook(self, module: nn.BatchNorm2d, inputs: tuple[torch.Tensor, ...], _output: torch.Tensor) -> None:
        x = inputs[0]
        mean = x.mean(dim=(0, 2, 3))
        var = x.permute(1, 0, 2, 3).flatten(1).var(1, unbiased=False)
        self.losses.append(torch.norm(module.running_mean - mean, 2) + torch.norm(module.running_var - var, 2))

    @contextmanager
    def attached(self) -> Iterator["BatchNormStatistics"]:
        handles = [layer.register_forward_hook(self._hook) for layer in self.layers]
        try:
            yield self
        finally:
            for h in handles:
                h.remove()

    def pop(self) -> torch.Tensor:
        total = torch.stack(self.losses).sum() if self.losses else torch.zeros(())
        self.losses = []
        return total


def seeded_generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def batches(n: int, size: int) -> Iterator[slice]:
    for start in range(0, n, size):
        yield slice(start, min(n, start + size))


def pixel_bounds_penalty(x: torch.Tensor, low: float = 0.0, high: float = 1.0) -> torch.Tensor:
    """sum relu(x - high)^2 + relu(low - x)^2: keeps free pixels inside the image range softly.

    Haim et al. (NeurIPS'22)'s "verify" loss on the reconstructed inputs (their range is [-1, 1]).
    """
    return (x - high).relu().pow(2).sum() + (low - x).relu().pow(2).sum()


# --- budgets -------------------------------------------------------------------------------------

EMBEDDED_TRACK_PIXELS = 8 * 8  # the embedded digits tracks: budgets there must fit a 2-core CPU


def track_budget(config: dict, key: str, input_shape: tuple[int, ...], *, paper: int, small: int) -> int:
    """Resolve an option whose value is "auto": the paper's budget on full-size tracks, `small` on
    the 8x8 embedded tracks (sized so that the attack's default run takes about 3 minutes or less
    on a 2-core CPU). The resolved number is written back into `config`, so the result file records
    what actually ran. Any number the user set is kept as it is."""
    value = config.get(key, "auto")
    if value == "auto":
        pixels = int(input_shape[-1]) * int(input_shape[-2])
        value = small if pixels <= EMBEDDED_TRACK_PIXELS else paper
    config[key] = int(value)
    return int(value)


# --- optimisers ----------------------------------------------------------------------------------


class BatchedLBFGS:
    """L-BFGS over P independent problems at once, each with its own curvature history.

    torch.optim.LBFGS treats all its parameters as one problem: run on a stack of independent
    reconstructions, the curvature pairs of one steer the steps of another, and one diverging
    problem stops them all. This keeps the update of torch's L-BFGS without line search (the
    setting Deep-Leakage's code uses: steps of lr, the very first scaled by min(1, 1/|g|_1); a
    pair (s, y) is kept only when y.s > 1e-10; H0 = y.s / y.y) but takes every dot product per
    problem and freezes a problem once it meets one of torch's stopping tests.

    params: tensors whose first dimension indexes the problem (P).
    closure(): zero the grads, compute the per-problem losses (P,), backward their sum, return
    the losses (detached).
    """

    def __init__(self, params: list[torch.Tensor], lr: float = 1.0, max_iter: int = 20, history_size: int = 100,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9):
        self.params = list(params)
        self.problems = int(self.params[0].shape[0])
        if any(int(p.shape[0]) != self.problems for p in self.params):
            raise ValueError("every parameter of BatchedLBFGS must have the problem count as its first dimension")
        self.lr, self.max_iter, self.history_size = float(lr), int(max_iter), int(history_size)
        self.tolerance_grad, self.tolerance_change = float(tolerance_grad), float(tolerance_change)
        self.history: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []  # (s, y, rho) per slot
        self.direction: torch.Tensor | None = None
        self.step_size: torch.Tensor | None = None
        self.prev_grad: torch.Tensor | None = None
        self.h_diag: torch.Tensor | None = None

    def _flat_grad(self) -> torch.Tensor:
        parts = [(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(self.problems, -1) for p in self.params]
        return torch.cat(parts, dim=1)

    def _add(self, step: torch.Tensor) -> None:
        offset = 0
        for p in self.params:
            n = p[0].numel()
            p.add_(step[:, offset : offset + n].view_as(p))
            offset += n

    def _direction(self, grad: torch.Tensor) -> torch.Tensor:
        if self.direction is None:  # the very first iteration: steepest descent
            self.h_diag = torch.ones(self.problems, dtype=grad.dtype, device=grad.device)
            return -grad
        y = grad - self.prev_grad
        s = self.direction * self.step_size[:, None]
        ys = (y * s).sum(1)
        keep = torch.isfinite(ys) & (ys > 1e-10)
        if keep.any():
            zero = torch.zeros_like(s)
            rho = torch.where(keep, 1.0 / torch.where(keep, ys, torch.ones_like(ys)), torch.zeros_like(ys))
            self.history.append((torch.where(keep[:, None], s, zero), torch.where(keep[:, None], y, zero), rho))
            if len(self.history) > self.history_size:
                self.history.pop(0)
            yy = (y * y).sum(1)
            self.h_diag = torch.where(keep, ys / torch.where(keep, yy, torch.ones_like(yy)), self.h_diag)
        q = -grad
        alphas = []
        for s_i, y_i, rho_i in reversed(self.history):  # two-loop recursion, per problem
            a = (s_i * q).sum(1) * rho_i
            q = q - a[:, None] * y_i
            alphas.append(a)
        r = q * self.h_diag[:, None]
        for (s_i, y_i, rho_i), a in zip(self.history, reversed(alphas)):
            b = (y_i * r).sum(1) * rho_i
            r = r + s_i * (a - b)[:, None]
        return r

    @torch.no_grad()
    def step(self, closure) -> torch.Tensor:
        with torch.enable_grad():
            loss = closure().detach()
        grad = self._flat_grad()
        active = torch.isfinite(loss) & (grad.abs().amax(1) > self.tolerance_grad)
        for iteration in range(self.max_iter):
            if not active.any():
                break
            first = self.direction is None
            d = self._direction(grad)
            self.prev_grad, prev_loss = grad.clone(), loss
            if first:
                t = self.lr * torch.clamp(1.0 / grad.abs().sum(1), max=1.0)
            else:
                t = torch.full((self.problems,), self.lr, dtype=grad.dtype, device=grad.device)
            active = active & ((grad * d).sum(1) <= -self.tolerance_change)  # still a descent direction
            d = torch.where(active[:, None], d, torch.zeros_like(d))
            t = torch.where(active, t, torch.zeros_like(t))  # a frozen (or non-finite) problem does not move
            self.direction, self.step_size = d, t
            self._add(d * t[:, None])
            if iteration == self.max_iter - 1:
                break
            with torch.enable_grad():
                loss = closure().detach()
            grad = self._flat_grad()
            active = (
                active
                & torch.isfinite(loss)
                & (grad.abs().amax(1) > self.tolerance_grad)
                & ((d * t[:, None]).abs().amax(1) > self.tolerance_change)
                & ((loss - prev_loss).abs() >= self.tolerance_change)
            )
        return loss
