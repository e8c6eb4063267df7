"""A hostile attack that carries the public target set in its code (issue 33): the target set of a
public dataset drawn with a public seed, computed before submission and pasted in as a literal.
tests/test_carried_data.py writes copies of this file with DATA filled in (base64 of the
zlib-compressed uint8 images and int64 labels) and MODE set:

    exact    the targets as they are
    blurred  a 3x3 box blur of each
    noised   +-NOISE grey levels, tuned just under the near-copy limits
    mixed    every other reconstruction replaced by uniform noise

Every variant returns the same bytes on every run, so a reproduction re-run signs them."""

import base64
import zlib

import numpy as np
import torch

from reconbench.image.attacks.base import Attack, Reconstruction

DATA = ""
SHAPE = (0, 1, 8, 8)
MODE = "exact"
NOISE = 6


class Carried(Attack):
    name, paper, family, scenarios = "carried", "none", "training", ("static/black-box/none",)

    def run(self, knowledge, *, seed, progress):
        raw = zlib.decompress(base64.b64decode(DATA))
        n = SHAPE[0]
        size = int(np.prod(SHAPE))
        images = np.frombuffer(raw[:size], dtype=np.uint8).reshape(SHAPE).astype(np.float64)
        labels = np.frombuffer(raw[size:], dtype=np.int64)[:n]
        rng = np.random.default_rng(0)
        if MODE == "blurred":
            pad = np.pad(images, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="edge")
            images = sum(pad[:, :, dy:dy + SHAPE[2], dx:dx + SHAPE[3]] for dy in range(3) for dx in range(3)) / 9
        elif MODE == "noised":
            images = images + rng.integers(-NOISE, NOISE + 1, images.shape)
        elif MODE == "mixed":
            images[1::2] = rng.integers(0, 256, images[1::2].shape)
        x = torch.from_numpy(np.clip(images, 0, 255).round() / 255.0).float()
        return Reconstruction(x, torch.from_numpy(labels.copy()))
