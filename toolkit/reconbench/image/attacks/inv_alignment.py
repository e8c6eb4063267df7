"""Inv-Alignment: Yang, Zhang, Chang, Liang, "Neural Network Inversion in Adversarial Setting via
Background Knowledge Alignment", CCS'19 (arXiv 1902.08552).

Black-box, training-based. The adversary queries the target classifier F on its auxiliary data
("background knowledge") and trains an inversion model G that maps F's (truncated) posterior
vector back to the image, minimising ||G(trunc(F(x))) - x||^2 over the aux data: the encoder of
this autoencoder is the target itself, and only its output probabilities are used.

Which posteriors are decoded into the |D_tar| reconstructions: the attacker has no posterior of a
target image (that would need the target set), so, as the SoK runs it, it decodes the
classifier's outputs for its own aux queries: the posteriors the target returned for the aux
images, chosen class-balanced by the predicted class (option source="aux"; the default). These
queries are the ones made for training; nothing about the target set is used. source="one-hot"
decodes the one-hot vector of each class instead (one image per class, replicated by the
harness): the "what does the model think class c looks like" variant of the paper's Sec. 5.

Defaults from the authors' public code (github.com/yziqi/adversarial-model-inversion,
train_inversion.py / model.py): Adam lr 2e-4, betas (0.5, 0.999), amsgrad, batch 128, MSE loss;
truncation = the whole vector (their default truncation equals the class count); the
truncated vector is log(p) clamped at -1000, plus c = 50, shifted to be non-negative, zeros
elsewhere; the decoder is a stack of transposed convolutions with BatchNorm and tanh and a
sigmoid output, starting from 4x4 and doubling to the image size (ngf = 128 at their 64x64,
halving the width per doubling). Budget: their 100 epochs are over a large aux set (~150k steps
on CelebA); with 500 aux images on the embedded digits tracks we run 300 epochs (1,200 steps).
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from pydantic import Field
from torch import nn

from reconbench.image.attacks.base import Attack, AttackOptions, Auto, PositiveInt, Progress, Reconstruction, class_balanced_labels
from reconbench.image.attacks.priors import seeded_generator, track_budget
from reconbench.image.knowledge import Knowledge, QueryFunction


def truncate_posteriors(probs: torch.Tensor, k: int, c: float = 50.0) -> torch.Tensor:
    """Keep the top-k log-probabilities (+ c, shifted to be >= 0) in place; zeros elsewhere."""
    top, index = torch.topk(probs, k, dim=1)
    top = torch.log(top).clamp(min=-1000.0) + c
    top = top + torch.relu(-top.min(dim=1, keepdim=True).values)
    return torch.zeros_like(probs).scatter(1, index, top)


class InversionDecoder(nn.Module):
    """Posterior vector -> image: ConvTranspose from 1x1 to 4x4, then stride-2 doublings."""

    def __init__(self, num_classes: int, input_shape: tuple[int, int, int], ngf: int = 128, truncation: int | None = None, c: float = 50.0):
        super().__init__()
        channels, height, width = input_shape
        doublings = int(round(math.log2(height / 4))) if height >= 8 else 0
        if height != width or doublings < 1 or 4 * 2**doublings != height:
            raise ValueError(f"Inv-Alignment's decoder needs square images of side 4 * 2^k >= 8, got {height}x{width}")
        self.num_classes, self.truncation, self.c = num_classes, truncation or num_classes, c
        # hidden widths at 4x4, 8x8, ...: ..., 4 ngf, 2 ngf, ngf (their 64x64 decoder: 8, 4, 2, 1 x ngf)
        widths = [ngf * 2 ** (doublings - 1 - i) for i in range(doublings)]
        layers: list[nn.Module] = [nn.ConvTranspose2d(num_classes, widths[0], 4, 1, 0), nn.BatchNorm2d(widths[0]), nn.Tanh()]
        for i in range(1, doublings):
            layers += [nn.ConvTranspose2d(widths[i - 1], widths[i], 4, 2, 1), nn.BatchNorm2d(widths[i]), nn.Tanh()]
        layers += [nn.ConvTranspose2d(widths[-1], channels, 4, 2, 1), nn.Sigmoid()]
        self.net = nn.Sequential(*layers)

    def forward(self, probs: torch.Tensor) -> torch.Tensor:
        z = truncate_posteriors(probs, self.truncation, self.c)
        return self.net(z[:, :, None, None])


def train_inversion(query: QueryFunction, aux: torch.Tensor, *, num_classes: int, input_shape: tuple[int, int, int],
                    epochs: int, batch_size: int, lr: float, ngf: int, truncation: int | None, c: float,
                    generator: torch.Generator, device: torch.device, advance=lambda steps=1: None):
    """Query the target once per aux image, then fit the decoder on (posterior, image) pairs.

    Returns (decoder in eval mode, the posteriors of the aux images)."""
    probs = torch.cat([query(aux[i : i + 1024]) for i in range(0, len(aux), 1024)]).to(device)
    decoder = InversionDecoder(num_classes, input_shape, ngf, truncation, c).to(device)
    opt = torch.optim.Adam(decoder.parameters(), lr=lr, betas=(0.5, 0.999), amsgrad=True)
    aux = aux.to(device)
    decoder.train()
    for _ in range(epochs):
        order = torch.randperm(len(aux), generator=generator).to(device)
        for start in range(0, len(aux), batch_size):
            idx = order[start : start + batch_size]
            if idx.numel() < 2:  # BatchNorm needs two samples in train mode
                continue
            opt.zero_grad(set_to_none=True)
            nn.functional.mse_loss(decoder(probs[idx]), aux[idx]).backward()
            opt.step()
        advance(1)
    return decoder.eval(), probs


class InvAlignment(Attack):
    name = "inv-alignment"
    paper = "Yang, Zhang, Chang, Liang, Neural Network Inversion in Adversarial Setting via Background Knowledge Alignment, CCS 2019"
    family = "training"
    scenarios = ("static/black-box/similar", "static/black-box/same")

    class Options(AttackOptions):
        epochs: PositiveInt | Auto = Field("auto", description="training epochs: 100 in train_inversion.py; auto = 300 on the 8x8 tracks (500 aux images)")
        batch_size: int = Field(128, ge=2, description="train_inversion.py --batch-size")
        lr: float = Field(2e-4, gt=0, description="Adam(lr=0.0002, betas=(0.5, 0.999), amsgrad=True), train_inversion.py")
        ngf: int = Field(128, ge=1, description="width of the last hidden decoder layer (train_inversion.py --ngf)")
        truncation: int = Field(0, ge=0, description="top-k posteriors kept; 0 = all (their default --truncation = the class count)")
        c: float = Field(50.0, description="offset added to the log-probabilities (train_inversion.py --c)")
        source: Literal["aux", "one-hot"] = Field("aux", description="posteriors decoded: the aux queries' (the SoK's run) or one-hot per class")

    # paper: train_inversion.py's 100 epochs (over their large aux set; on 500 digits that is fewer steps than auto)
    presets = {"quick": {"epochs": 30}, "paper": {"epochs": 100, "batch_size": 128}}

    def run(self, knowledge: Knowledge, *, seed: int, progress: Progress) -> Reconstruction:
        cfg = self.config
        epochs = track_budget(cfg, "epochs", knowledge.input_shape, paper=100, small=300)
        device = knowledge.device
        gen = seeded_generator(seed)
        torch.manual_seed(seed)  # the decoder's initial weights
        aux = knowledge.aux_data.as_float()
        with progress.task(f"{self.name}: training the inversion model", epochs) as advance:
            decoder, probs = train_inversion(
                knowledge.query, aux, num_classes=knowledge.num_classes, input_shape=knowledge.input_shape,
                epochs=epochs, batch_size=int(cfg["batch_size"]), lr=float(cfg["lr"]), ngf=int(cfg["ngf"]),
                truncation=int(cfg["truncation"]) or None, c=float(cfg["c"]), generator=gen, device=device, advance=advance,
            )
        if cfg["source"] == "one-hot":
            labels = torch.arange(knowledge.num_classes, device=device)
            vectors = nn.functional.one_hot(labels, knowledge.num_classes).float()
            # log(0) is clamped at -1000: the non-top classes get the lowest value, as in truncation
        else:
            vectors, labels = self._class_balanced(probs, knowledge.target_size, knowledge.num_classes, gen)
        with torch.no_grad():
            images = torch.cat([decoder(vectors[i : i + 1024]) for i in range(0, len(vectors), 1024)])
        return Reconstruction(images.cpu(), labels.cpu())

    @staticmethod
    def _class_balanced(probs: torch.Tensor, n: int, num_classes: int, gen: torch.Generator):
        """Up to n aux posteriors, taken round-robin over the predicted classes in a seeded order."""
        predicted = probs.argmax(1).cpu()
        queues: dict[int, list[int]] = {c: [] for c in range(num_classes)}
        for i in torch.randperm(len(probs), generator=gen).tolist():
            queues[int(predicted[i])].append(i)
        chosen: list[int] = []
        wanted = class_balanced_labels(n, num_classes).tolist()
        for c in wanted:  # ask for class c; fall back to any class with posteriors left
            source = queues[c] if queues[c] else next((q for q in queues.values() if q), None)
            if source is None:
                break
            chosen.append(source.pop(0))
        index = torch.tensor(chosen, dtype=torch.long)
        return probs[index.to(probs.device)], predicted[index].to(probs.device)
