"""Training loops for Vec2Text's inversion model and corrector: AdamW with linear warmup and decay,
shuffled mini-batches from a seeded generator (vec2text trains through transformers' Trainer, whose
defaults these are: AdamW, linear schedule with warmup, no weight decay)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from reconbench.core.progress import Progress


def _trim(t: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Drop all-pad columns at the right of a batch of token ids (cheaper steps, same loss)."""
    keep = int((t != pad_id).any(0).nonzero().max()) + 1 if (t != pad_id).any() else 1
    return t[:, :keep]


def fit(
    model: torch.nn.Module,
    loss_fn: Callable[..., torch.Tensor],
    tensors: list[torch.Tensor],
    *,
    token_columns: tuple[int, ...],
    pad_id: int,
    epochs: int,
    batch_size: int,
    lr: float,
    warmup_steps: int,
    generator: torch.Generator,
    progress: Progress,
    label: str,
) -> float:
    """Train `model` on aligned rows of `tensors`; the columns listed in token_columns are padded ids."""
    n = tensors[0].shape[0]
    steps_per_epoch = (n + batch_size - 1) // batch_size
    total = max(epochs * steps_per_epoch, 1)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    warm = min(warmup_steps, total)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warm if s < warm else max(0.0, (total - s) / max(total - warm, 1))
    )
    model.train()
    last = float("nan")
    with progress.task(label, total) as advance:
        for _ in range(epochs):
            order = torch.randperm(n, generator=generator)
            for start in range(0, n, batch_size):
                idx = order[start : start + batch_size]
                batch = [t[idx] for t in tensors]
                for c in token_columns:
                    batch[c] = _trim(batch[c], pad_id)
                loss = loss_fn(*batch)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # Trainer's default max_grad_norm
                opt.step()
                sched.step()
                last = float(loss.detach())
                advance(1)
    model.eval()
    return last
