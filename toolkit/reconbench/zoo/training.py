"""The training loop of the zoo: seeded SGD/Adam with a step schedule, flips, BN freezing, DP-SGD.

Batches, flips and DP sampling all draw from generators seeded by the recipe, so a run is
repeatable where torch's kernels are (on CUDA with cudnn.deterministic; CPU convolution training
was seen to differ in the last bits between runs). That is why the registry pins the published
bytes, and the recipe only records how they were made.
Images stay uint8 on the device and are converted batch by batch (20k CelebA images as float
would take 1 GB).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from reconbench.image.data.arrays import ArraySet
from reconbench.zoo import ZooError
from reconbench.zoo.recipes import Recipe
from reconbench.zoo.variants import batchnorm_eval

Log = Callable[[dict], None]
EVAL_BATCH = 512


def predict(model: nn.Module, images: np.ndarray, device: torch.device, batch_size: int = EVAL_BATCH) -> np.ndarray:
    """Predicted labels of uint8 images, in eval mode, batch by batch."""
    model.eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(images), batch_size):
            x = torch.from_numpy(images[start:start + batch_size]).to(device).float() / 255.0
            out.append(model(x).argmax(1).cpu().numpy())
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def accuracy(model: nn.Module, data: ArraySet, device: torch.device) -> float:
    return float((predict(model, data.images, device) == data.labels).mean())


def _optimizer(params, recipe: Recipe, lr: float) -> torch.optim.Optimizer:
    if recipe.optimizer == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=recipe.momentum, weight_decay=recipe.weight_decay)
    if recipe.optimizer == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=recipe.weight_decay)
    raise ZooError(f"unknown optimizer '{recipe.optimizer}' (sgd, adam)")


def _flip(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    mask = (torch.rand(x.shape[0], generator=generator) < 0.5).to(x.device)
    return torch.where(mask[:, None, None, None], x.flip(3), x)


def fit(model: nn.Module, data: ArraySet, recipe: Recipe, *, device: torch.device, epochs: int, seed: int,
        phase: str, log: Log, lr: float | None = None, milestones: tuple[int, ...] | None = None) -> None:
    """Cross-entropy training; logs one line per epoch (mean loss, running train accuracy, lr)."""
    model.to(device)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = _optimizer(params, recipe, recipe.lr if lr is None else lr)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, list(recipe.milestones if milestones is None else milestones),
                                                 gamma=recipe.gamma)
    generator = torch.Generator().manual_seed(seed)
    x_all, y_all = torch.from_numpy(data.images).to(device), torch.from_numpy(data.labels).to(device)
    n = len(data)
    for epoch in range(epochs):
        model.train()
        if recipe.freeze_bn:
            batchnorm_eval(model)
        order = torch.randperm(n, generator=generator).to(device)
        loss_sum, correct, seen = 0.0, 0, 0
        for start in range(0, n, recipe.batch_size):
            idx = order[start:start + recipe.batch_size]
            if len(idx) < 2 and n > 1:  # BatchNorm cannot train on one image; drop such a last batch
                continue
            x = x_all[idx].float() / 255.0
            if recipe.flip:
                x = _flip(x, generator)
            out = model(x)
            loss = nn.functional.cross_entropy(out, y_all[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.item() * len(idx)
            correct += int((out.argmax(1) == y_all[idx]).sum())
            seen += len(idx)
        lr_now = opt.param_groups[0]["lr"]
        sched.step()
        log({"phase": phase, "epoch": epoch + 1, "loss": round(loss_sum / max(seen, 1), 5),
             "train_acc_running": round(correct / max(seen, 1), 4), "lr": lr_now})
    model.eval()


def fit_dp(model: nn.Module, data: ArraySet, recipe: Recipe, *, device: torch.device, seed: int, log: Log
           ) -> tuple[nn.Module, dict]:
    """DP-SGD with opacus: Poisson sampling, per-sample clipping, Gaussian noise calibrated so that
    `recipe.epochs` epochs reach (epsilon, delta); returns the plain module and what was spent."""
    from opacus import PrivacyEngine
    from opacus.validators import ModuleValidator
    from torch.utils.data import DataLoader, TensorDataset

    dp = recipe.dp
    assert dp is not None
    problems = ModuleValidator.validate(model, strict=False)
    if problems:
        raise ZooError(f"DP-SGD cannot train this model: {problems[0]}")
    model.to(device).train()
    loader = DataLoader(TensorDataset(torch.from_numpy(data.images), torch.from_numpy(data.labels)),
                        batch_size=recipe.batch_size, generator=torch.Generator().manual_seed(seed))
    opt = _optimizer([p for p in model.parameters() if p.requires_grad], recipe, recipe.lr)
    with warnings.catch_warnings():
        # Seeded (not cryptographic) noise is deliberate: the target must be reproducible. A DP
        # guarantee for deployment would need opacus' secure_mode; a benchmark target does not.
        warnings.filterwarnings("ignore", message="Secure RNG turned off")
        engine = PrivacyEngine(accountant="rdp")
        private, opt, loader = engine.make_private_with_epsilon(
            module=model, optimizer=opt, data_loader=loader, target_epsilon=dp.epsilon, target_delta=dp.delta,
            epochs=recipe.epochs, max_grad_norm=dp.max_grad_norm,
            noise_generator=torch.Generator(device=device).manual_seed(seed + 1))
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, list(recipe.milestones), gamma=recipe.gamma)
    flips = torch.Generator().manual_seed(seed + 2)
    for epoch in range(recipe.epochs):
        private.train()
        loss_sum, seen = 0.0, 0
        for xb, yb in loader:
            if len(xb) == 0:  # Poisson sampling can draw an empty batch
                continue
            x = xb.to(device).float() / 255.0
            if recipe.flip:
                x = _flip(x, flips)
            loss = nn.functional.cross_entropy(private(x), yb.to(device))
            opt.zero_grad(set_to_none=True)
            with warnings.catch_warnings():  # opacus' hooks on the first layer, whose input needs no gradient
                warnings.filterwarnings("ignore", message="Full backward hook is firing")
                loss.backward()
            opt.step()
            loss_sum += loss.item() * len(xb)
            seen += len(xb)
        lr_now = opt.param_groups[0]["lr"]
        sched.step()
        log({"phase": "dp-sgd", "epoch": epoch + 1, "loss": round(loss_sum / max(seen, 1), 5), "lr": lr_now,
             "epsilon": round(engine.get_epsilon(dp.delta), 4)})
    spent = {"epsilon": float(engine.get_epsilon(dp.delta)), "delta": dp.delta,
             "noise_multiplier": float(opt.noise_multiplier), "max_grad_norm": dp.max_grad_norm,
             "sample_rate": 1.0 / len(loader), "accountant": "rdp"}
    private.remove_hooks()  # the plain module, without opacus' per-sample gradient hooks
    plain = private._module
    plain.eval()
    return plain, spent
