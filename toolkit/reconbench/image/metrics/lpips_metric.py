"""LPIPS v0.1 (Zhang et al. 2018) with the AlexNet backbone, as a pairwise kernel.

The lpips package computes, for one pair,

    d(x, y) = sum_l mean_hw sum_c w_lc (f^_l(x) - f^_l(y))_hwc^2

where f_l are AlexNet's five ReLU outputs, f^ is f unit-normalised over channels at each
position (f / (||f||_c + 1e-10)), and w_l >= 0 are the learned linear layers shipped in the
lpips wheel. With u_l(x) = sqrt(w_l / (H_l W_l)) * f^_l(x), flattened and concatenated over
layers, this is exactly a squared Euclidean distance:

    d(x, y) = ||u(x) - u(y)||^2 = ||u(x)||^2 + ||u(y)||^2 - 2 u(x).u(y)

so each image goes through the network once and all pairs of a block are one matmul (never
N*M forwards).

Inputs: uint8 / 255 -> [-1, 1] (lpips' `normalize=True` convention) -> lpips' ScalingLayer;
grey images are repeated to 3 channels. AlexNet's five taps need a side of at least 31 px;
images with a side below 32 px (the 8x8 `digits` track) are first resized to 64x64
(bilinear, align_corners=False, no antialiasing).

Weights: the backbone comes from a local file (weights.py; download.py fetches it into the cache); tests
pass stand-in weights explicitly with `LPIPSExtractor(backbone_state_dict=...)`. The linear
layers are read from the installed lpips wheel (sha256 pinned below).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import lpips as _lpips_pkg
import torch
import torch.nn.functional as F
import torchvision

from .images import to_unit_float
from .weights import load_weights, pinned

TAPS = (1, 4, 7, 9, 11)  # indices in torchvision's alexnet().features after which lpips reads (relu1..relu5)
MIN_SIDE = 32  # below this, resize to RESIZE_TO first
RESIZE_TO = (64, 64)
SHIFT = (-0.030, -0.088, -0.188)  # lpips ScalingLayer
SCALE = (0.458, 0.448, 0.450)
LINEAR_FILE = Path(_lpips_pkg.__file__).parent / "weights" / "v0.1" / "alex.pth"
LINEAR_SHA256 = "df73285e35b22355a2df87cdb6b70b343713b667eddbda73e1977e0c860835c0"  # lpips 0.1.4


def load_linear_weights() -> list[torch.Tensor]:
    """The five non-negative channel weights w_l of LPIPS v0.1 (alex), from the lpips wheel."""
    digest = hashlib.sha256(LINEAR_FILE.read_bytes()).hexdigest()
    if digest != LINEAR_SHA256:
        raise RuntimeError(f"{LINEAR_FILE}: sha256 {digest} is not the pinned lpips 0.1.4 file")
    state = torch.load(LINEAR_FILE, map_location="cpu", weights_only=True)
    return [state[f"lin{k}.model.1.weight"].flatten().to(torch.float32) for k in range(5)]


class LPIPSExtractor:
    """Maps images to the embedding u(x) whose squared distances are LPIPS."""

    def __init__(
        self,
        backbone_state_dict: dict[str, torch.Tensor],
        *,
        linear_weights: list[torch.Tensor] | None = None,
        device: str | torch.device = "cpu",
        batch_size: int | None = None,
        weights_sha256: str | None = None,
    ):
        """backbone_state_dict: torchvision AlexNet keys ("features.0.weight", ...; classifier.* ignored)."""
        net = torchvision.models.alexnet(weights=None).features
        feats = {k.removeprefix("features."): v for k, v in backbone_state_dict.items() if k.startswith("features.")}
        net.load_state_dict(feats, strict=True)
        self.device = torch.device(device)
        self.net = net.eval().to(self.device)
        # CPU: small batches keep the conv workspaces to a few MB; CUDA: large ones fill the device
        self.batch_size = batch_size or (256 if self.device.type == "cuda" else 32)
        self.weights_sha256 = weights_sha256  # provenance: which backbone produced the numbers
        w = linear_weights if linear_weights is not None else load_linear_weights()
        if any(bool((x < 0).any()) for x in w):
            raise ValueError("LPIPS linear weights must be non-negative (the Euclidean form needs it)")
        self.w = [x.to(self.device) for x in w]
        # an upper bound of d: unit features after ReLU are >= 0, so ||f^(x) - f^(y)||^2 <= 2
        self.max_distance = float(sum(2.0 * x.max() for x in w))
        self.shift = torch.tensor(SHIFT, device=self.device)[None, :, None, None]
        self.scale = torch.tensor(SCALE, device=self.device)[None, :, None, None]

    @classmethod
    def from_weights(
        cls, weights_dir: str | os.PathLike | None = None, device: str | torch.device = "cpu"
    ) -> "LPIPSExtractor | None":
        """The real extractor if the AlexNet weights are on disk, else None."""
        loaded = load_weights(pinned("alexnet"), weights_dir)
        if loaded is None:
            return None
        return cls(loaded.state_dict, device=device, weights_sha256=loaded.sha256)

    def network_input(self, images: torch.Tensor) -> torch.Tensor:
        """uint8 (n, C, H, W) -> the tensor lpips' network sees (after its ScalingLayer)."""
        x = to_unit_float(images.to(self.device))
        if x.shape[1] == 1:
            x = x.expand(-1, 3, -1, -1)
        if min(x.shape[2:]) < MIN_SIDE:
            x = F.interpolate(x, size=RESIZE_TO, mode="bilinear", align_corners=False)
        return ((2.0 * x - 1.0) - self.shift) / self.scale

    def _layers(self, x: torch.Tensor) -> list[torch.Tensor]:
        out = []
        for i, layer in enumerate(self.net):
            x = layer(x)
            if i in TAPS:
                out.append(x)
            if i == TAPS[-1]:
                break
        return out

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        """uint8 (n, C, H, W) -> float32 (n, D) embedding u, computed in batches."""
        out = None
        with torch.inference_mode():
            for lo in range(0, images.shape[0], self.batch_size):
                feats = self._layers(self.network_input(images[lo : lo + self.batch_size]))
                parts = []
                for f, w in zip(feats, self.w):
                    f_hat = f / (f.pow(2).sum(dim=1, keepdim=True).sqrt() + 1e-10)  # lpips.normalize_tensor
                    hw = f.shape[2] * f.shape[3]
                    parts.append((f_hat * (w / hw).sqrt()[None, :, None, None]).flatten(1))
                u = torch.cat(parts, dim=1)
                if out is None:  # preallocated: no second copy of all embeddings
                    out = torch.empty((images.shape[0], u.shape[1]), dtype=u.dtype, device=u.device)
                out[lo : lo + u.shape[0]] = u
        return out

    def embed_dim(self, shape: tuple[int, int, int]) -> int:
        return self.embed(torch.zeros((1, *shape), dtype=torch.uint8)).shape[1]


def lpips_pairwise(extractor: LPIPSExtractor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Full (n, m) LPIPS matrix; for small sets (tests, checks). Large sets go through the engine."""
    kernel = LPIPSKernel(extractor, tuple(x.shape[1:]))
    return kernel.block(kernel.prepare(x), kernel.prepare(y))


class LPIPSKernel:
    """Pairwise kernel for pairwise.nearest_same_class: state = embedding u and ||u||^2."""

    larger_is_better = False

    def __init__(self, extractor: LPIPSExtractor, shape: tuple[int, int, int]):
        self.extractor = extractor
        self.dim = extractor.embed_dim(shape)
        self.worst = extractor.max_distance

    def state_bytes(self) -> int:
        return 4 * (self.dim + 1)

    def pair_bytes(self) -> int:
        return 4 * 4  # a few float32 entries per pair; the matmul streams the embeddings

    def prepare(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        u = self.extractor.embed(images)
        sq = torch.cat([b.pow(2).sum(dim=1) for b in u.split(256)])  # ||u||^2 without a full-size temporary
        return {"u": u, "sq": sq}

    def block(self, rec, tar) -> torch.Tensor:
        d = rec["sq"][:, None] + tar["sq"][None, :] - 2.0 * (rec["u"] @ tar["u"].T)
        return d.clamp_min_(0.0)  # rounding can make an exact copy slightly negative


def standin_alexnet_state_dict(seed: int = 0) -> dict[str, torch.Tensor]:
    """Seeded randomly initialised AlexNet weights, for tests and benchmarks of the code path only.

    Numbers computed with these are not LPIPS; `score()` never uses them unless passed explicitly.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return torchvision.models.alexnet(weights=None).state_dict()
