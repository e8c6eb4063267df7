"""Real images available offline, for the metric tests and benchmarks (not used by `score`).

- `digits()`: scikit-learn's 1,797 8x8 grey digits (values 0..16 scaled to 0..255), 10 classes.
- `photo_patches(n, size)`: crops of the sample photos bundled with scikit-image and
  scikit-learn, resized to size x size x 3; the class is the source photo (10 photos).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np


def digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    d = load_digits()
    images = np.round(d.images * (255.0 / 16.0)).astype(np.uint8)[:, None]
    return images, d.target.astype(np.int64)


@lru_cache(maxsize=1)
def _photos() -> tuple[np.ndarray, ...]:
    import skimage.data as data
    from sklearn.datasets import load_sample_images

    names = ["astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry", "hubble_deep_field", "retina", "colorwheel"]
    return tuple([getattr(data, n)()[..., :3] for n in names] + list(load_sample_images().images))


def photo_patches(n: int, size: int = 32, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """n uint8 patches (n, 3, size, size) and their class (index of the source photo, 0..9)."""
    from skimage.transform import resize

    photos = _photos()
    rng = np.random.default_rng(seed)
    labels = np.arange(n, dtype=np.int64) % len(photos)
    out = np.empty((n, 3, size, size), dtype=np.uint8)
    for i, k in enumerate(labels):
        im = photos[k]
        side = int(rng.integers(size, min(5 * size, *im.shape[:2]) + 1))
        y0, x0 = rng.integers(0, im.shape[0] - side + 1), rng.integers(0, im.shape[1] - side + 1)
        crop = im[y0 : y0 + side, x0 : x0 + side]
        patch = resize(crop, (size, size), anti_aliasing=side > size, preserve_range=True)
        out[i] = np.clip(np.round(patch), 0, 255).astype(np.uint8).transpose(2, 0, 1)
    return out, labels


def perturb(images: np.ndarray, noise: float, seed: int = 0) -> np.ndarray:
    """Reconstruction-like copies: additive Gaussian noise (std in 0..255 units), clipped."""
    rng = np.random.default_rng(seed)
    return np.clip(np.round(images + rng.normal(0.0, noise, images.shape)), 0, 255).astype(np.uint8)
