"""pytorch-fid's InceptionV3 (the TF 2015-12-05 FID network), built without any download.

`pytorch_fid.inception.InceptionV3(use_fid_inception=True)` fetches its weights from GitHub on
construction. We assemble the same network from pytorch-fid's own pieces instead: torchvision's
inception_v3 skeleton (1008 classes, no aux head), with the Mixed blocks swapped for pytorch-fid's
FIDInceptionA/C/E_1/E_2 (TF's average pooling without padded zeros, max pooling in the last
block), the state dict loaded from a local file (weights.py), and pytorch-fid's own `forward`
(bilinear resize to 299x299, align_corners=False; [0, 1] -> [-1, 1]).

Images: uint8 / 255 as pytorch-fid's ToTensor does; grey is repeated to 3 channels. Features
are the 2048-d pool3 activations (output block 3). Other blocks (dims 64/192/768, spatially
averaged as pytorch-fid does) exist only to make code-path tests cheap.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from pytorch_fid import inception as pfi

from .images import to_unit_float
from .weights import load_weights, pinned

BLOCK_BY_DIMS = pfi.InceptionV3.BLOCK_INDEX_BY_DIM  # {64: 0, 192: 1, 768: 2, 2048: 3}


def fid_inception_skeleton() -> nn.Module:
    """The FID Inception graph with uninitialised weights (no download)."""
    net = torchvision.models.inception_v3(num_classes=1008, aux_logits=False, weights=None, init_weights=False)
    net.Mixed_5b = pfi.FIDInceptionA(192, pool_features=32)
    net.Mixed_5c = pfi.FIDInceptionA(256, pool_features=64)
    net.Mixed_5d = pfi.FIDInceptionA(288, pool_features=64)
    net.Mixed_6b = pfi.FIDInceptionC(768, channels_7x7=128)
    net.Mixed_6c = pfi.FIDInceptionC(768, channels_7x7=160)
    net.Mixed_6d = pfi.FIDInceptionC(768, channels_7x7=160)
    net.Mixed_6e = pfi.FIDInceptionC(768, channels_7x7=192)
    net.Mixed_7b = pfi.FIDInceptionE_1(1280)
    net.Mixed_7c = pfi.FIDInceptionE_2(2048)
    return net


class FIDInceptionV3(pfi.InceptionV3):
    """pytorch_fid.inception.InceptionV3 with its weights given, not downloaded."""

    def __init__(self, state_dict: dict[str, torch.Tensor], output_block: int = 3):
        nn.Module.__init__(self)  # skip InceptionV3.__init__: it would download
        self.resize_input = True
        self.normalize_input = True
        self.output_blocks = [output_block]
        self.last_needed_block = output_block
        net = fid_inception_skeleton()
        net.load_state_dict(state_dict, strict=True)
        # the four stages of pytorch-fid's InceptionV3, cut at the same places
        stages = [
            [net.Conv2d_1a_3x3, net.Conv2d_2a_3x3, net.Conv2d_2b_3x3, nn.MaxPool2d(kernel_size=3, stride=2)],
            [net.Conv2d_3b_1x1, net.Conv2d_4a_3x3, nn.MaxPool2d(kernel_size=3, stride=2)],
            [net.Mixed_5b, net.Mixed_5c, net.Mixed_5d, net.Mixed_6a, net.Mixed_6b, net.Mixed_6c, net.Mixed_6d, net.Mixed_6e],
            [net.Mixed_7a, net.Mixed_7b, net.Mixed_7c, nn.AdaptiveAvgPool2d(output_size=(1, 1))],
        ]
        self.blocks = nn.ModuleList(nn.Sequential(*s) for s in stages[: output_block + 1])
        for p in self.parameters():
            p.requires_grad = False
        self.eval()


def state_dict_digest(state_dict: dict[str, torch.Tensor]) -> str:
    h = hashlib.sha256()
    for k in sorted(state_dict):
        h.update(k.encode())
        h.update(state_dict[k].detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


class InceptionExtractor:
    """uint8 images -> InceptionV3 features (n, dims) as float32 numpy."""

    def __init__(
        self,
        state_dict: dict[str, torch.Tensor],
        *,
        dims: int = 2048,
        device: str | torch.device = "cpu",
        batch_size: int = 50,
        weights_sha256: str | None = None,
    ):
        self.dims = dims
        self.device = torch.device(device)
        self.batch_size = batch_size
        self.model = FIDInceptionV3(state_dict, output_block=BLOCK_BY_DIMS[dims]).to(self.device)
        # provenance: sha256 of the weights file, None when the caller passed a state dict
        self.weights_sha256 = weights_sha256
        # what the cache key must include: the exact weights and the feature layer
        self.tag = f"inception-{(weights_sha256 or state_dict_digest(state_dict))[:16]}-d{dims}"

    @classmethod
    def from_weights(
        cls, weights_dir: str | os.PathLike | None = None, device: str | torch.device = "cpu"
    ) -> "InceptionExtractor | None":
        """The real FID extractor if the pytorch-fid weights are on disk, else None."""
        loaded = load_weights(pinned("inception"), weights_dir)
        if loaded is None:
            return None
        return cls(loaded.state_dict, device=device, weights_sha256=loaded.sha256)

    def features(self, images: torch.Tensor) -> np.ndarray:
        out = []
        with torch.inference_mode():
            for lo in range(0, images.shape[0], self.batch_size):
                x = to_unit_float(images[lo : lo + self.batch_size].to(self.device))
                if x.shape[1] == 1:
                    x = x.expand(-1, 3, -1, -1)
                f = self.model(x)[0]
                if f.shape[2:] != (1, 1):  # blocks 0-2: pytorch-fid averages space away
                    f = F.adaptive_avg_pool2d(f, output_size=(1, 1))
                out.append(f.flatten(1).float().cpu())
        return torch.cat(out).numpy()


def standin_inception_state_dict(seed: int = 0) -> dict[str, torch.Tensor]:
    """Seeded random weights for the FID Inception graph: tests of the code path only, never FID.

    Convolutions get He-normal weights so that, with the identity batch norms of a fresh
    network, activations keep their scale through the 90-odd layers (the default init makes
    pool3 features vanish to ~1e-8).
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = fid_inception_skeleton()
        for module in net.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
        return net.state_dict()
