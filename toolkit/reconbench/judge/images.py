"""Images as the judge sees them: nearest-neighbour upscaled PNGs in data URLs, hashed by pixels."""

from __future__ import annotations

import base64
import hashlib
import io

import numpy as np
from PIL import Image

# The SoK does not state a resolution (SOK-DIGEST §3); 8x8 digits are unreadable as sent, so the
# longer side is enlarged to this many pixels by pixel repetition (no interpolation invents detail).
DEFAULT_SIZE = 256


def upscale(img: np.ndarray, size: int) -> np.ndarray:
    """(C, H, W) uint8 -> (H', W', C) with the longer side = size, nearest neighbour."""
    if img.ndim != 3 or img.dtype != np.uint8:
        raise ValueError(f"expected a (C, H, W) uint8 image, got {img.shape} {img.dtype}")
    c, h, w = img.shape
    scale = size / max(h, w)
    new_h, new_w = max(1, round(h * scale)), max(1, round(w * scale))
    hwc = np.transpose(img, (1, 2, 0))
    pil = Image.fromarray(hwc[:, :, 0] if c == 1 else hwc, mode="L" if c == 1 else "RGB")
    out = np.asarray(pil.resize((new_w, new_h), Image.Resampling.NEAREST))
    return out.reshape(new_h, new_w, c)


def pixel_hash(pixels: np.ndarray) -> str:
    """sha256 of shape and pixels: the cache key survives a PNG encoder that writes other bytes."""
    h = hashlib.sha256(repr(pixels.shape).encode())
    h.update(np.ascontiguousarray(pixels).tobytes())
    return h.hexdigest()


def png_bytes(pixels: np.ndarray) -> bytes:
    c = pixels.shape[2]
    pil = Image.fromarray(pixels[:, :, 0] if c == 1 else pixels, mode="L" if c == 1 else "RGB")
    out = io.BytesIO()
    pil.save(out, format="PNG")
    return out.getvalue()


def data_url(pixels: np.ndarray) -> str:
    return "data:image/png;base64," + base64.b64encode(png_bytes(pixels)).decode("ascii")


def decode_data_url(url: str) -> np.ndarray:
    """A PNG data URL -> (H, W, C) uint8 (the test server reads what the client sent)."""
    prefix = "data:image/png;base64,"
    if not url.startswith(prefix):
        raise ValueError("not a PNG data URL")
    pil = Image.open(io.BytesIO(base64.b64decode(url[len(prefix):], validate=True)))
    arr = np.asarray(pil)
    return arr[:, :, None] if arr.ndim == 2 else arr


class ImageSet:
    """Pixel hashes computed once per distinct image; data URLs built when a request is sent (a
    study of 1,000 CelebA targets holds thousands of images: their PNGs are not all kept in memory)."""

    def __init__(self, size: int):
        if not 16 <= size <= 2048:
            raise ValueError(f"--image-size must be between 16 and 2048 pixels, got {size}")
        self.size = size
        self._hashes: dict[bytes, str] = {}

    def hash(self, img: np.ndarray) -> str:
        key = repr(img.shape).encode() + img.tobytes()
        if key not in self._hashes:
            self._hashes[key] = pixel_hash(upscale(img, self.size))
        return self._hashes[key]

    def url(self, img: np.ndarray) -> str:
        return data_url(upscale(img, self.size))
