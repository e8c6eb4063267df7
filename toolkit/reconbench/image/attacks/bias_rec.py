"""Bias-Rec: Haim, Vardi, Yehudai, Shamir, Irani, "Reconstructing Training Data from Trained Neural
Networks", NeurIPS'22, with the multi-class loss of Buzaglo, Haim, Yehudai, Vardi, Oz, Nikankin,
Irani, "Deconstructing Data Reconstruction: Multiclass, Weight Decay and General Losses", NeurIPS'23.

Premise (implicit bias): a homogeneous ReLU network trained by gradient descent on the logistic
(or cross-entropy) loss to convergence lands, in direction, on a KKT point of the max-margin
problem, so its parameters are a non-negative combination of the margin gradients at the
training points:  theta = sum_i lambda_i grad_theta m(theta; x_i),  lambda_i >= 0,
with m = y * Phi for a binary network (Haim et al.) and m = Phi_y - max_{j != y} Phi_j for a
multi-class one (Buzaglo et al.; for two logits the two coincide, since Phi = z_1 - z_0).

Reconstruction: free candidates x_j (2x the training set, half per class as in their runs) and
multipliers lambda_j minimise, by SGD with momentum 0.9,
    L = || theta - (1/m) sum_j lambda_j grad_theta m(theta; x_j) ||^2
        + sum relu(x - 1)^2 + relu(0 - x)^2          (pixels kept in [0, 1]; theirs in [-1, 1])
        + 5 sum relu(lambda_min - lambda_j)^2        (their lambda_min trick: no candidate may vanish)
with the ReLU's derivative replaced by sigmoid(alpha x) during the extraction (their
"modifiedrelu"), and x_j ~ N(0, init_scale^2), lambda_j ~ U(0, 1) at the start.

|D_rec| = |D_tar|: from the 2|D_tar| candidates we keep, per class, those with the largest
lambda_j (the attack's own output; candidates that did not become training points keep small
multipliers). No target information is used.

Defaults (PAPER_SETTINGS): for two classes, Haim et al.'s published binary MNIST run
(github.com/nivha/dataset_reconstruction, reconstruct_mnist_kcf9bhbi_args.txt: lr 0.0305, lambda
lr 1e-4 = their code's default, lambda_min 0.447, relu_alpha 150, init_scale 0.035, 50,000 epochs);
for more, Buzaglo et al.'s multi-class CIFAR-10 run (github.com/gonbuzaglo/decoreco,
reconstruct_multiclass_run2_args.txt: lr 0.00136, lambda lr 0.479, lambda_min 0.203, alpha 39.5,
init 6.2e-5, 50,001 epochs); both with 2 candidates per training point. Both papers pick these by
a sweep scored against the training set, which an attacker cannot do. We checked the binary ones
once offline on a shadow model trained by the digits-binary-mlp recipe on AUX digits (never the
target set). In a small grid (lr 0.03-0.3, lambda lr 1e-4-0.1, lambda_min 0.05-0.447) theirs had
the best S-Dis (MSE, SSIM) and no setting clearly recovered more shadow training images (at most
3 of 20 above 15 dB, against 0 for theirs), so we keep them.
Budget: 50,000 epochs on full-size tracks, 3,000 on the 8x8 embedded MLP tracks, 300 on the
BatchNorm CNN of `digits` (a 2-core CPU; a CNN step with 1,000 candidates costs ~14x an MLP one).

Where the premise holds: the `digits-binary-mlp` track (bias-free two-layer ReLU network, 2
classes x 10 images, full-batch GD to loss ~1e-5). On `digits-mlp` (10 classes, 500 images in 64
dimensions, Adam) and on the BatchNorm CNN of `digits` the attack runs as the SoK runs it on
VGG16 — the equations are applied although the network is not homogeneous or not at a KKT point,
and 500 points in 64 dimensions cannot be told apart by a KKT combination anyway.
"""

from __future__ import annotations

import copy
from typing import Annotated

import torch
from pydantic import Field
from torch import nn

from reconbench.image.attacks.base import Attack, AttackOptions, Auto, PositiveInt, Progress, Reconstruction, class_balanced_labels
from reconbench.image.attacks.priors import pixel_bounds_penalty, seeded_generator, track_budget
from reconbench.image.knowledge import Knowledge


class _ModifiedReLUFunction(torch.autograd.Function):
    """ReLU forward; backward multiplies by sigmoid(alpha x) instead of the step 1[x > 0]."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, alpha: float) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.alpha = alpha
        return x.relu()

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        (x,) = ctx.saved_tensors
        return grad_out * torch.sigmoid(ctx.alpha * x), None


class ModifiedReLU(nn.Module):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = float(alpha)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ModifiedReLUFunction.apply(x, self.alpha)


def with_modified_relu(model: nn.Module, alpha: float) -> nn.Module:
    """A copy of `model` with every nn.ReLU module replaced (used only for the extraction)."""
    model = copy.deepcopy(model).eval()
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            if isinstance(child, nn.ReLU):
                setattr(module, child_name, ModifiedReLU(alpha))
    return model


def is_homogeneous(model: nn.Module) -> bool:
    """No biases, no normalisation layers: a bias-free ReLU network, positively homogeneous in theta."""
    has_bias = any(getattr(m, "bias", None) is not None for m in model.modules())
    has_norm = any(isinstance(m, (nn.modules.batchnorm._BatchNorm, nn.LayerNorm, nn.GroupNorm)) for m in model.modules())
    return not has_bias and not has_norm


def margins(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Phi_y - max_{j != y} Phi_j (Buzaglo et al.); = y Phi for two logits (Haim et al.)."""
    own = logits.gather(1, labels[:, None]).squeeze(1)
    others = logits.scatter(1, labels[:, None], float("-inf")).max(dim=1).values
    return own - others


def kkt_residual(model: nn.Module, params: list[torch.Tensor], x: torch.Tensor, labels: torch.Tensor,
                 lam: torch.Tensor) -> torch.Tensor:
    """|| theta - (1/m) sum_j lambda_j grad_theta margin(x_j) ||^2, differentiable in x and lambda."""
    weighted = margins(model(x), labels) * lam
    grads = torch.autograd.grad(weighted, params, grad_outputs=torch.full_like(weighted, 1.0 / len(x)), create_graph=True)
    return sum(((p.detach() - g) ** 2).sum() for p, g in zip(params, grads))


PAPER_SETTINGS = {
    # github.com/nivha/dataset_reconstruction, command_line_args/reconstruct_mnist_kcf9bhbi_args.txt
    # (lambda lr: GetParams.py default, the run does not override it)
    "binary": {"lr": 0.0305, "lambda_lr": 1e-4, "lambda_min": 0.447, "relu_alpha": 150.0, "init_scale": 0.035},
    # github.com/gonbuzaglo/decoreco, command_line_args/reconstruct_multiclass_run2_args.txt
    "multiclass": {"lr": 0.00136, "lambda_lr": 0.479, "lambda_min": 0.203, "relu_alpha": 39.5, "init_scale": 6.2e-5},
}


class BiasRec(Attack):
    name = "bias-rec"
    paper = "Haim et al., Reconstructing Training Data from Trained Neural Networks, NeurIPS 2022 (multi-class: Buzaglo et al., NeurIPS 2023)"
    family = "analysis"
    scenarios = ("static/white-box/none",)

    class Options(AttackOptions):
        epochs: PositiveInt | Auto = Field("auto", description="50,000 (Haim et al.'s MNIST run; Buzaglo et al. 50,001); auto on 8x8 tracks: 3,000 (MLP), 300 (CNN)")
        candidates_per_target: int = Field(2, ge=1, description="extraction_data_amount_per_class = 2 x data_per_class in both papers' runs")
        # "auto": Haim et al.'s binary MNIST run for two classes, Buzaglo et al.'s multi-class run
        # otherwise (PAPER_SETTINGS above); SGD with momentum 0.9 on x and on lambda
        lr: Annotated[float, Field(gt=0)] | Auto = Field("auto", description="SGD lr on x (auto: PAPER_SETTINGS)")
        lambda_lr: Annotated[float, Field(gt=0)] | Auto = Field("auto", description="SGD lr on lambda (auto: PAPER_SETTINGS)")
        lambda_min: Annotated[float, Field(ge=0)] | Auto = Field("auto", description="lower bound penalty on lambda (auto: PAPER_SETTINGS)")
        relu_alpha: Annotated[float, Field(gt=0)] | Auto = Field("auto", description="sigmoid slope of the modified ReLU (auto: PAPER_SETTINGS)")
        init_scale: Annotated[float, Field(ge=0)] | Auto = Field("auto", description="x_j ~ N(0, init_scale^2) (auto: PAPER_SETTINGS)")
        double: bool = Field(False, description="float64 as in their runs; float32 is ~2x faster on a CPU")

    presets = {"quick": {"epochs": 100}, "paper": {"epochs": 50000, "double": True}}  # their runs: 50k epochs, float64

    def run(self, knowledge: Knowledge, *, seed: int, progress: Progress) -> Reconstruction:
        cfg = self.config
        small = 3000 if is_homogeneous(knowledge.model) else 300  # a CNN step costs ~14x an MLP step here
        epochs = track_budget(cfg, "epochs", knowledge.input_shape, paper=50000, small=small)
        paper = PAPER_SETTINGS["binary" if knowledge.num_classes == 2 else "multiclass"]
        for key, value in paper.items():
            if cfg[key] == "auto":
                cfg[key] = value
        dtype = torch.float64 if cfg["double"] else torch.float32
        device = knowledge.device
        model = with_modified_relu(knowledge.model, float(cfg["relu_alpha"])).to(device=device, dtype=dtype)
        params = [p.requires_grad_(True) for p in model.parameters()]
        n, k = knowledge.target_size, knowledge.num_classes
        m = max(k, int(cfg["candidates_per_target"]) * n)
        labels = class_balanced_labels(m, k).to(device)
        gen = seeded_generator(seed)
        x = (torch.randn((m, *knowledge.input_shape), generator=gen, dtype=dtype) * float(cfg["init_scale"])).to(device)
        lam = torch.rand(m, generator=gen, dtype=dtype).to(device)
        x.requires_grad_(True), lam.requires_grad_(True)
        opt_x = torch.optim.SGD([x], lr=float(cfg["lr"]), momentum=0.9)
        opt_l = torch.optim.SGD([lam], lr=float(cfg["lambda_lr"]), momentum=0.9)
        last_x, last_lam = x.detach().clone(), lam.detach().clone()
        with progress.task(f"{self.name}: minimising the KKT residual", epochs) as advance:
            for _ in range(epochs):
                loss = (
                    kkt_residual(model, params, x, labels, lam)
                    + pixel_bounds_penalty(x, 0.0, 1.0)
                    + 5.0 * (float(cfg["lambda_min"]) - lam).relu().pow(2).sum()
                )
                if not torch.isfinite(loss):
                    # Diverged (their code raises "Optimizer diverged"): keep the last finite point.
                    # Seen with the multi-class settings on the BatchNorm CNN of `digits`.
                    break
                last_x, last_lam = x.detach().clone(), lam.detach().clone()
                opt_x.zero_grad(set_to_none=True)
                opt_l.zero_grad(set_to_none=True)
                loss.backward()
                opt_x.step()
                opt_l.step()
                advance(1)
        keep = self.select(last_lam, labels, n, k)
        return Reconstruction(last_x[keep].float().clamp(0, 1).cpu(), labels[keep].cpu())

    @staticmethod
    def select(lam: torch.Tensor, labels: torch.Tensor, n: int, num_classes: int) -> torch.Tensor:
        """n candidates, class-balanced, largest multipliers first within each class."""
        wanted = torch.bincount(class_balanced_labels(n, num_classes), minlength=num_classes)
        keep = []
        for c in range(num_classes):
            idx = torch.nonzero(labels == c).flatten()
            keep.append(idx[torch.argsort(lam[idx], descending=True)[: int(wanted[c])]])
        return torch.cat(keep)
