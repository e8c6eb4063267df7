"""MI-Face: Fredrikson, Jha, Ristenpart, "Model Inversion Attacks that Exploit Confidence
Information and Basic Countermeasures", CCS'15 (Algorithm 1).

Gradient descent on the input to minimise c(x) = 1 - f_y(x), from x_0 = 0, stopping when c has not
improved for beta steps or falls to gamma. One reconstruction per class: from the same start, the
algorithm is deterministic, so the harness replicates them to |D_tar| (the SoK's size rule).
"""

from __future__ import annotations

from typing import Literal

import torch
from pydantic import Field

from reconbench.image.attacks.base import Attack, AttackOptions, Progress, Reconstruction
from reconbench.image.knowledge import Knowledge


class MIFace(Attack):
    name = "mi-face"
    paper = "Fredrikson et al., Model Inversion Attacks that Exploit Confidence Information, CCS 2015"
    family = "optimization"
    scenarios = ("static/white-box/none",)

    class Options(AttackOptions):
        # Algorithm 1 of the paper, values from its Section 5.2 (faces experiment)
        iterations: int = Field(5000, ge=1, description="alpha: maximum gradient steps (paper Sec. 5.2)")
        patience: int = Field(100, ge=1, description="beta: stop after this many steps without improvement (paper)")
        cost_threshold: float = Field(0.99, ge=0, le=1, description="gamma: stop once the class confidence reaches it (paper)")
        step_size: float = Field(0.1, gt=0, description="lambda: gradient step size (paper)")
        init: Literal["zeros", "uniform"] = Field("zeros", description="x_0: zeros as in the paper, or a seeded uniform start")
        per_class: int = Field(1, ge=1, description="reconstructions per class (>1 only makes sense with init=uniform)")

    presets = {
        "quick": {"iterations": 500},
        "paper": {"iterations": 5000, "patience": 100, "cost_threshold": 0.99, "step_size": 0.1},  # Sec. 5.2
    }

    def seed_ignored(self) -> str | None:
        if self.config["init"] != "zeros":
            return None
        return "it starts from zeros (init=zeros, as in the paper), so every seed gives the same bytes; --set init=uniform starts from seeded noise"

    def run(self, knowledge: Knowledge, *, seed: int, progress: Progress) -> Reconstruction:
        cfg = self.config
        model, device = knowledge.model, knowledge.device
        n = knowledge.num_classes * int(cfg["per_class"])
        labels = torch.arange(n, device=device) % knowledge.num_classes
        shape = (n, *knowledge.input_shape)
        if cfg["init"] == "zeros":
            x = torch.zeros(shape, device=device)
        else:
            x = torch.rand(shape, generator=torch.Generator().manual_seed(seed)).to(device)
        x.requires_grad_(True)
        best_cost = torch.full((n,), float("inf"), device=device)
        best_x = x.detach().clone()
        stale = torch.zeros(n, dtype=torch.long, device=device)
        # The paper stops when c(x) <= gamma; with gamma = 0.99 for c = 1 - f_y that would stop at
        # once, so we read gamma as the confidence to reach: stop when f_y(x) >= gamma.
        done_cost = 1.0 - float(cfg["cost_threshold"])
        with progress.task(f"{self.name}: gradient descent", int(cfg["iterations"])) as advance:
            for step in range(int(cfg["iterations"])):
                probs = torch.softmax(model(x), dim=1)
                cost = 1.0 - probs.gather(1, labels[:, None]).squeeze(1)
                grad, = torch.autograd.grad(cost.sum(), x)
                with torch.no_grad():
                    improved = cost < best_cost
                    best_x[improved] = x[improved]
                    best_cost = torch.where(improved, cost, best_cost)
                    stale = torch.where(improved, torch.zeros_like(stale), stale + 1)
                    active = (stale < int(cfg["patience"])) & (best_cost > done_cost)
                    if not active.any():
                        advance(int(cfg["iterations"]) - step)  # stopped early: close the bar
                        break
                    x[active] -= float(cfg["step_size"]) * grad[active]
                    x.clamp_(0, 1)
                advance(1)
        return Reconstruction(best_x.detach(), labels.detach())
