"""Deep-Leakage (DLG): Zhu, Liu, Han, "Deep Leakage from Gradients", NeurIPS'19 (Algorithm 1).

For every observed gradient (one per batch of the update, see reconbench/image/dynamic.py), optimise
dummy images x' and dummy label logits y' so that the gradient they produce on the model before
the update matches the observed one:

    min_{x', y'}  sum_k || dL(F(x'; W), softmax(y'))/dW_k - grad_W_k ||^2

with L the cross-entropy against the soft dummy label. The problems (one per observed batch) are
independent; they are solved together, vectorised with torch.func, by an L-BFGS that keeps one
history per problem (priors.BatchedLBFGS). Each reconstruction is the dummy batch with the lowest
matching loss seen; its label is the argmax of the dummy label.

Defaults follow the authors' code (github.com/mit-han-lab/dlg, main.py): x' ~ N(0, 1) and
y' ~ N(0, 1), torch's L-BFGS defaults (lr 1, max_iter 20, history 100, no line search), 300
steps. The budget scales with the track: 300 steps on full-size tracks, 40 on the 8x8 embedded
tracks (25 problems of 4 images, ~1-2 minutes on a 2-core CPU).

Two options for the papers' later practice, off by default (so the defaults stay DLG's main.py):
- label="idlg": the label of a one-image batch is read off the gradient, not optimised: iDLG (Zhao,
  Mopuri, Bilen, arXiv 2001.02610, github.com/PatrickZH/Improved-Deep-Leakage-from-Gradients iDLG.py):
  with non-negative inputs to the last linear layer (Sigmoid or ReLU features) and cross-entropy,
  the row of the true class is the only one whose weight gradient sums negative, so the label is
  argmin_c sum_j dL/dW_cj. Larger batches keep DLG's joint optimisation of soft labels: what Geiping
  et al.'s inverting-gradients code does when no labels are given (JonasGeiping/invertinggradients
  inversefed/reconstruction_algorithms.py:73-87: iDLG for num_images == 1, else the DLG soft-label loss).
- restarts=R: R independent random starts per observed batch, solved together; each batch keeps the
  start whose final matching loss is lowest (reconstruction_algorithms.py:92-115, scoring_choice
  'loss'; options.py:26 --restarts). DLG's code runs one start; Geiping et al. use restarts.

On a trained target the observed gradients are tiny (the model is confident on most update
images), and the plain L2 objective is then met by many dummies: on digits DLG does not recover
the update set, as the SoK finds for Deep-Leakage; on a freshly initialised network (the DLG
paper's setting) the same code recovers a single image almost exactly (tests).
"""

from __future__ import annotations

import torch
from typing import Literal

from pydantic import Field
from torch import nn
from torch.func import functional_call, grad, vmap

from reconbench.image.attacks.base import Attack, AttackOptions, Auto, PositiveInt, Progress, Reconstruction
from reconbench.image.attacks.priors import BatchedLBFGS, seeded_generator, track_budget
from reconbench.image.knowledge import Knowledge


def soft_cross_entropy(logits: torch.Tensor, label_logits: torch.Tensor) -> torch.Tensor:
    """Mean over the batch of -sum_c softmax(y')_c log softmax(F(x'))_c (DLG's criterion)."""
    return -(torch.softmax(label_logits, -1) * torch.log_softmax(logits, -1)).sum(-1).mean()


class DeepLeakage(Attack):
    name = "deep-leakage"
    paper = "Zhu, Liu, Han, Deep Leakage from Gradients, NeurIPS 2019"
    family = "optimization"
    scenarios = ("dynamic/white-box/none",)

    class Options(AttackOptions):
        iterations: PositiveInt | Auto = Field("auto", description="L-BFGS steps: 300 in DLG's main.py; auto = 40 on the 8x8 tracks")
        lr: float = Field(1.0, gt=0, description="torch.optim.LBFGS default, used as is by DLG's code")
        max_iter: int = Field(20, ge=1, description="L-BFGS inner iterations per step (torch default, DLG)")
        history_size: int = Field(100, ge=1, description="L-BFGS history (torch default, DLG)")
        init_std: float = Field(1.0, gt=0, description="dummy data ~ N(0, init_std^2): torch.randn in DLG's code")
        label: Literal["joint", "idlg"] = Field("joint", description=(
            "joint: optimise soft dummy labels with the images (DLG main.py:68); idlg: a one-image batch's label "
            "from the sign of the last layer's weight gradient (iDLG), larger batches joint (Geiping et al.'s "
            "reconstruction_algorithms.py:73-87)"))
        restarts: int = Field(1, ge=1, le=64, description=(
            "random starts per observed batch; the lowest final matching loss wins (DLG: 1; Geiping et al.'s "
            "inversefed/reconstruction_algorithms.py:92-115, options.py:26 --restarts)"))

    presets = {"quick": {"iterations": 10}, "paper": {"iterations": 300}}  # main.py: 300 iterations

    def run(self, knowledge: Knowledge, *, seed: int, progress: Progress) -> Reconstruction:
        cfg = self.config
        iterations = track_budget(cfg, "iterations", knowledge.input_shape, paper=300, small=40)
        model: nn.Module = knowledge.extra("model_before")
        observed = knowledge.extra("update_gradients")
        device = knowledge.device
        model = model.eval()
        params = {n: p.detach() for n, p in model.named_parameters()}
        buffers = {n: b.detach() for n, b in model.named_buffers()}
        names = list(observed.parameter_names)
        if set(names) != set(params):
            raise ValueError("the observed gradients do not belong to the model before the update")

        def batch_loss(p: dict, x: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
            # label: dummy label logits (joint) or fixed one-hot probabilities (iDLG); softmax of the one-hot
            # would not be one-hot, so the two enter the same soft cross-entropy as probabilities
            logits = functional_call(model, (p, buffers), (x,))
            probs = torch.softmax(label, -1) if joint else label
            return -(probs * torch.log_softmax(logits, -1)).sum(-1).mean()

        # one vectorised gradient per problem: vmap over the problem axis of x' and y'
        per_problem_grad = vmap(grad(batch_loss), in_dims=(None, 0, 0))
        gen = seeded_generator(seed)
        restarts = int(cfg["restarts"])
        images, labels = [], []
        groups: dict[int, list[int]] = {}
        for b, size in enumerate(observed.batch_sizes):  # problems of equal batch size run together
            groups.setdefault(size, []).append(b)
        steps = iterations * len(groups)
        with progress.task(f"{self.name}: matching gradients", steps) as advance:
            for size, members in sorted(groups.items()):
                joint = cfg["label"] == "joint" or size > 1
                target = {n: torch.stack([observed.gradients[b][k] for b in members]).to(device) for k, n in enumerate(names)}
                # problem index = restart * len(members) + member: restart 0 draws what one start always drew
                target = {n: t.repeat(restarts, *([1] * (t.dim() - 1))) for n, t in target.items()}
                problems = restarts * len(members)
                shape = (problems, size, *knowledge.input_shape)
                x = (torch.randn(shape, generator=gen) * float(cfg["init_std"])).to(device).requires_grad_(True)
                if joint:
                    y = torch.randn((problems, size, knowledge.num_classes), generator=gen).to(device).requires_grad_(True)
                else:  # iDLG: the one image's label from the observed last-layer weight gradient
                    found = idlg_labels([observed.gradients[b] for b in members], names, knowledge.num_classes)
                    y = nn.functional.one_hot(found.to(device), knowledge.num_classes).float()[:, None, :].repeat(restarts, 1, 1)
                best_loss = torch.full((problems,), float("inf"), device=device)
                best_x, best_y = x.detach().clone(), y.detach().clone()
                opt = BatchedLBFGS([x, y] if joint else [x], lr=float(cfg["lr"]), max_iter=int(cfg["max_iter"]),
                                   history_size=int(cfg["history_size"]))

                def closure() -> torch.Tensor:
                    nonlocal best_loss
                    x.grad, y.grad = None, None
                    g = per_problem_grad(params, x, y)
                    losses = sum(((g[n] - target[n]) ** 2).flatten(1).sum(1) for n in names)
                    losses.sum().backward()
                    with torch.no_grad():  # keep each problem's best point (L-BFGS without line search may overshoot)
                        better = torch.isfinite(losses) & (losses < best_loss)
                        best_loss = torch.where(better, losses.detach(), best_loss)
                        best_x[better] = x.detach()[better]
                        best_y[better] = y.detach()[better]
                    return losses.detach()

                for _ in range(iterations):
                    opt.step(closure)
                    advance(1)
                # per observed batch, the restart with the lowest matching loss (Geiping et al.'s scoring 'loss')
                winner = best_loss.reshape(restarts, len(members)).argmin(0) * len(members) + torch.arange(len(members), device=device)
                images.append(best_x[winner].reshape(-1, *knowledge.input_shape))
                labels.append(best_y[winner].reshape(-1, knowledge.num_classes).argmax(1))
        return Reconstruction(torch.cat(images).clamp(0, 1).cpu(), torch.cat(labels).cpu())


def idlg_labels(gradients: list[tuple[torch.Tensor, ...]], names: list[str], num_classes: int) -> torch.Tensor:
    """iDLG's label of each one-image batch: argmin over classes of the row sums of the last linear layer's
    weight gradient (the last 2-d parameter with num_classes rows; Geiping et al. read input_data[-2],
    reconstruction_algorithms.py:76). Exact when that layer's inputs are non-negative (Sigmoid, ReLU)."""
    last = [k for k, g in enumerate(gradients[0]) if g.dim() == 2 and g.shape[0] == num_classes]
    if not last:
        raise ValueError("label='idlg' needs a last linear layer with one row per class; this model has none")
    k = last[-1]
    return torch.stack([g[k].sum(-1).argmin() for g in gradients])
