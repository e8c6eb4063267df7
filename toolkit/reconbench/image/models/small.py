"""The small targets of the embedded `digits` track. Inputs are pixels in [0, 1], (N, C, H, W)."""

from __future__ import annotations

import torch
from torch import nn


class SmallCNN(nn.Module):
    """Two conv blocks with BatchNorm (so that DeepInversion has running statistics to match)."""

    def __init__(self, in_channels: int = 1, num_classes: int = 10, image_size: int = 8, width: int = 16):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, padding=1, bias=False),
            nn.BatchNorm2d(2 * width),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        flat = 2 * width * (image_size // 2) ** 2
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(flat, 64), nn.ReLU(), nn.Linear(64, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


class HomogeneousMLP(nn.Module):
    """Bias-free ReLU MLP: positively homogeneous, as Bias-Rec (Haim et al., NeurIPS'22) requires."""

    def __init__(self, in_features: int = 64, num_classes: int = 10, hidden: int = 128, depth: int = 2):
        super().__init__()
        layers: list[nn.Module] = [nn.Flatten()]
        width = in_features
        for _ in range(depth):
            layers += [nn.Linear(width, hidden, bias=False), nn.ReLU()]
            width = hidden
        layers.append(nn.Linear(width, num_classes, bias=False))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class LeNetSigmoid(nn.Module):
    """DLG's LeNet (Zhu et al., NeurIPS'19; github.com/mit-han-lab/dlg models/vision.py:15-36): three 5x5
    convolutions (12 channels; strides 2, 2, 1; padding 2), each followed by a Sigmoid, and one linear
    layer. Sigmoid, not ReLU: the network is twice differentiable, which gradient matching needs (its
    objective is differentiated through the gradient). No BatchNorm, no pooling. At 32x32 the flattened
    features are 12 x 8 x 8 = 768, the size of DLG's Linear(768, 100) (CIFAR-100; here num_classes)."""

    def __init__(self, in_channels: int = 1, num_classes: int = 10, image_size: int = 32):
        super().__init__()
        act = nn.Sigmoid
        self.body = nn.Sequential(
            nn.Conv2d(in_channels, 12, kernel_size=5, padding=5 // 2, stride=2),
            act(),
            nn.Conv2d(12, 12, kernel_size=5, padding=5 // 2, stride=2),
            act(),
            nn.Conv2d(12, 12, kernel_size=5, padding=5 // 2, stride=1),
            act(),
        )
        side = (image_size + 1) // 2
        side = (side + 1) // 2
        self.fc = nn.Sequential(nn.Linear(12 * side * side, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.body(x).flatten(1))


def dlg_init(model: nn.Module, seed: int = 1234, bound: float = 0.5) -> nn.Module:
    """DLG's initialisation of the attacked network (mit-han-lab/dlg main.py:54-56 with models/vision.py:9-13):
    torch.manual_seed(1234), then every module's weight and bias ~ U(-0.5, 0.5), in module order."""
    torch.manual_seed(seed)

    def init(m: nn.Module) -> None:
        if hasattr(m, "weight") and m.weight is not None:
            m.weight.data.uniform_(-bound, bound)
        if hasattr(m, "bias") and m.bias is not None:
            m.bias.data.uniform_(-bound, bound)

    return model.apply(init)
