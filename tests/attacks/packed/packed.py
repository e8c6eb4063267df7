"""A hostile attack (issue 43, item 4) that carries images in its code, packed where a literal rule does not look:
its sibling module `store` holds them, LZMA-compressed, as hex in `#` comment lines (read back from its own
file), as one hex integer (DATA), or as many short strings (PARTS). tests/test_own_attack_e2e.py writes
store.py: COUNT images of SHAPE, then their int8 labels; with SIGMA, the images from NOISE_FROM on get seeded
Gaussian noise of that sd (pixels in [0, 1]) here, at run time (noise does not compress). It returns the same
bytes on every run: a reproduction re-run signs them."""

import lzma
from pathlib import Path

import numpy as np
import store
import torch

from reconbench.image.attacks.base import Attack, Reconstruction


class Packed(Attack):
    name, paper, family, scenarios = "packed", "none", "training", ("static/black-box/none",)

    def run(self, knowledge, *, seed, progress):
        if hasattr(store, "DATA"):
            blob = format(store.DATA, "x")[1:]  # a leading 1 keeps the leading zeros
        elif hasattr(store, "PARTS"):
            blob = "".join(store.PARTS)
        else:
            lines = Path(store.__file__).read_text().splitlines()
            blob = "".join(line[2:].strip() for line in lines if line.startswith("# "))
        raw = lzma.decompress(bytes.fromhex(blob))
        size = store.COUNT * int(np.prod(store.SHAPE))
        images = np.frombuffer(raw[:size], dtype=np.uint8).reshape((store.COUNT, *store.SHAPE))
        labels = np.frombuffer(raw[size:], dtype=np.int8).astype(np.int64)
        x = images / 255.0
        if getattr(store, "SIGMA", 0):
            rng = np.random.default_rng(0)
            x[store.NOISE_FROM:] = np.clip(x[store.NOISE_FROM:] + rng.normal(0, store.SIGMA, x[store.NOISE_FROM:].shape), 0, 1)
        return Reconstruction(torch.from_numpy(x).float(), torch.from_numpy(labels.copy()))
