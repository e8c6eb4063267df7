"""Near-copies: how close to a public image (or to another entry's reconstruction) is too close.

Two distances, both between uint8 images scaled to [0, 1]:
- pixel:     per-pixel MSE, the copy check's distance (checks/copies.py);
- structure: 1 - normalised cross-correlation of the images after a 3x3 median filter and a 3x3
             binomial blur, minimised over circular shifts of -1..1 pixel. A fixed feature space
             that needs no downloaded weights: the median filter removes a few edited pixels, the
             blur high-frequency noise, mean-centring and unit norm any brightness/contrast change,
             and the shift minimum a one-pixel translation. Each of these turns a public image into
             a "new" image that plain MSE calls far (one full-range pixel on 8x8 digits is MSE 0.016,
             the median distance between two *different* digits).

Thresholds are calibrated per track from the public dataset itself (`calibrate`): for each image
of the pool (every split: the whole public dataset, byte-identical duplicates counted once), the
distance to its nearest *other* image; the threshold is the PERCENTILE-th percentile of those
nearest-neighbour distances, in each space. So by construction only ~1% of public images are that
close to another public image, and a reconstruction that close to one is flagged. Pools larger
than SAMPLE images are calibrated on a seeded sample of SAMPLE queries against the whole pool.
The values are recorded in the registry (tracks.json, `near_copy`) with this derivation; a track
without them is calibrated on the fly (deterministic).

An entry with more than HELD_SHARE of its reconstructions flagged is held (checks/nearcopies.py).
Measured on digits: the seven example entries have 0-2% flagged; the target set with one
full-range pixel changed per image 54%, three pixels 11%, noise of +-20 grey levels, a brightness
change or a one-pixel shift 100%.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

PERCENTILE = 1.0
HELD_SHARE = 0.05  # more than 5% of reconstructions flagged: held (honest entries measured <= 2%)
SAMPLE = 2000
SEED = 0
SHIFTS = [(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
CHUNK_ELEMENTS = 1 << 22
DERIVATION = (f"percentile {PERCENTILE:g} of the nearest-neighbour distance between distinct images of the "
              "track's whole public dataset (every split), per space: pixel = per-pixel MSE on [0,1]; "
              "structure = 1 - NCC after 3x3 median + 3x3 binomial blur, min over +-1 px circular shifts "
              "(reconbench.submissions.nearcopy)")


@dataclass(frozen=True)
class Thresholds:
    pixel_mse: float
    structure: float
    percentile: float = PERCENTILE
    pool_sha256: str = ""
    derivation: str = DERIVATION

    def to_dict(self) -> dict:
        return {"pixel_mse": self.pixel_mse, "structure": self.structure, "percentile": self.percentile,
                "pool_sha256": self.pool_sha256, "derivation": self.derivation}


def pool_sha256(images: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(images).tobytes()).hexdigest()


def _binomial(channels: int) -> torch.Tensor:
    k = torch.tensor([1.0, 2.0, 1.0], dtype=torch.float64)
    return ((k[:, None] * k[None, :]) / 16).expand(channels, 1, 3, 3)


# Paeth's 19 compare-exchanges that leave the median of 9 values in slot 4 (Devillard, "Fast median
# search", opt_med9): the 3x3 median without materialising every pixel's nine neighbours.
_MEDIAN9 = ((1, 2), (4, 5), (7, 8), (0, 1), (3, 4), (6, 7), (1, 2), (4, 5), (7, 8), (0, 3), (5, 8), (4, 7),
            (3, 6), (1, 4), (2, 5), (4, 7), (4, 2), (6, 4), (4, 2))


def median3x3(x: torch.Tensor) -> torch.Tensor:
    """3x3 median of N x C x H x W with replicate padding; the values torch.median gives over each
    pixel's nine neighbours (a median is one of its inputs, so no rounding can differ). Any dtype:
    uint8 grey levels move a quarter of float32's bytes."""
    h, w = x.shape[-2:]
    rows, cols = torch.arange(-1, h + 1).clamp(0, h - 1), torch.arange(-1, w + 1).clamp(0, w - 1)
    return median3x3_padded(x[..., rows, :][..., cols])  # replicate padding by index (F.pad's wants floats)


def median3x3_padded(p: torch.Tensor) -> torch.Tensor:
    """N x C x H x W: the 3x3 median of each pixel of N x C x (H+2) x (W+2) but its 1-pixel frame."""
    h, w = p.shape[-2] - 2, p.shape[-1] - 2
    v = [p[..., dy:dy + h, dx:dx + w] for dy in range(3) for dx in range(3)]
    for a, b in _MEDIAN9:
        v[a], v[b] = torch.minimum(v[a], v[b]), torch.maximum(v[a], v[b])
    return v[4]


def structure_features(images: np.ndarray, shift: tuple[int, int] = (0, 0)) -> torch.Tensor:
    """N x D unit vectors (see the module docstring); a constant image maps to ~zeros (distance ~1)."""
    # The median runs on the grey levels (x -> x/255 keeps their order), so the blur below gets the
    # same doubles as a median of the scaled images would give.
    x = torch.from_numpy(np.ascontiguousarray(images))
    if shift != (0, 0):
        x = torch.roll(x, shifts=shift, dims=(2, 3))
    c = x.shape[1]
    x = median3x3(x).double() / 255.0
    y = F.conv2d(F.pad(x, (1, 1, 1, 1), mode="replicate"), _binomial(c), groups=c).flatten(1)
    return unit_rows(y)


def unit_rows(y: torch.Tensor) -> torch.Tensor:
    """N x D float64 rows centred and scaled to unit norm (structure_features' last step)."""
    y = y - y.mean(1, keepdim=True)
    return y / y.norm(dim=1, keepdim=True).clamp_min(1e-12)


def _pixels(images: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(images).reshape(len(images), -1)).double() / 255.0


class Space:
    """Nearest-neighbour search of query images against one fixed set of images, in both spaces."""

    def __init__(self, images: np.ndarray):
        self.images = images
        self.pixels = _pixels(images)
        self.pixel_sq = (self.pixels * self.pixels).sum(1)
        self.features = [structure_features(images, s) for s in SHIFTS]

    def __len__(self) -> int:
        return len(self.images)

    def nearest(self, queries: np.ndarray, exclude_self: bool = False) -> tuple[np.ndarray, ...]:
        """(pixel MSE, index, structure distance, index) of each query's nearest image here.
        exclude_self: the queries are this set's own first rows (calibration): skip i == i."""
        q_pix, q_feat = _pixels(queries), structure_features(queries)
        d = q_pix.shape[1]
        rows = max(1, CHUNK_ELEMENTS // max(1, len(self)))
        out = [[], [], [], []]
        for lo in range(0, len(queries), rows):
            hi = min(lo + rows, len(queries))
            xb = q_pix[lo:hi]
            pix = ((xb * xb).sum(1, keepdim=True) + self.pixel_sq[None, :] - 2.0 * xb @ self.pixels.T).clamp_min_(0) / d
            struct = torch.stack([1.0 - q_feat[lo:hi] @ f.T for f in self.features]).min(0).values
            if exclude_self:
                idx = torch.arange(lo, hi)
                pix[idx - lo, idx] = float("inf")
                struct[idx - lo, idx] = float("inf")
            for slot, dist in ((0, pix), (2, struct)):
                value, index = dist.min(dim=1)
                out[slot].append(value)
                out[slot + 1].append(index)
        return tuple(torch.cat(part).numpy() for part in out)

    def flag(self, queries: np.ndarray, thresholds: Thresholds) -> "Flags":
        pix, pix_i, struct, struct_i = self.nearest(queries)
        hit = (pix <= thresholds.pixel_mse) | (struct <= thresholds.structure)
        # the image shown as evidence: the nearer one in the space that flagged it
        where = np.where(pix <= thresholds.pixel_mse, pix_i, struct_i)
        return Flags(hit, where, pix, struct)


@dataclass(frozen=True)
class Flags:
    hit: np.ndarray  # bool per query
    where: np.ndarray  # index of the nearest image (in the space that flagged it)
    pixel: np.ndarray
    structure: np.ndarray

    @property
    def share(self) -> float:
        return float(self.hit.mean()) if len(self.hit) else 0.0


def unique_images(images: np.ndarray) -> np.ndarray:
    """Byte-identical images counted once (a dataset's exact duplicates are not 'distinct')."""
    _, first = np.unique(images.reshape(len(images), -1), axis=0, return_index=True)
    return images[np.sort(first)]


def calibrate(images: np.ndarray) -> Thresholds:
    """Thresholds from the public pool itself (see the module docstring)."""
    pool = unique_images(images)
    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(pool))[:SAMPLE] if len(pool) > SAMPLE else np.arange(len(pool))
    # queries first, so that exclude_self removes each query's own row
    rest = np.setdiff1d(np.arange(len(pool)), order)
    space = Space(pool[np.concatenate([order, rest])])
    pix, _, struct, _ = space.nearest(pool[order], exclude_self=True)
    return Thresholds(pixel_mse=float(np.percentile(pix, PERCENTILE)), structure=float(np.percentile(struct, PERCENTILE)),
                      pool_sha256=pool_sha256(images))


_THRESHOLDS: dict[tuple[str, str | None], Thresholds] = {}


def public_thresholds(track) -> Thresholds:
    """The track's thresholds alone (the near-duplicate test between entries needs no public Space)."""
    key = (track.id, track.target_set_sha256)
    if key not in _THRESHOLDS:  # publicspace.public_space records its thresholds here too
        from reconbench.image.track_files import public_pool

        images = public_pool(track)
        _THRESHOLDS[key] = _recorded(track, images) or calibrate(images)
    return _THRESHOLDS[key]


def _recorded(track, images: np.ndarray) -> Thresholds | None:
    recorded = getattr(track, "near_copy", None)
    if recorded is None or recorded.pool_sha256 != pool_sha256(images):
        return None
    return Thresholds(recorded.pixel_mse, recorded.structure, recorded.percentile, recorded.pool_sha256,
                      recorded.derivation)


def main(argv: list[str] | None = None) -> int:
    """`python -m reconbench.submissions.nearcopy [TRACK...]`: print the calibrated thresholds as the
    registry's `near_copy` objects (maintainers paste them into tracks.json)."""
    import json
    import sys

    from reconbench.image.track_files import public_pool
    from reconbench.core.tracks import all_tracks

    wanted = set(argv if argv is not None else sys.argv[1:])
    out = {t.id: calibrate(public_pool(t)).to_dict() for t in all_tracks()
           if t.status != "unpublished" and (not wanted or t.id in wanted)}
    sys.stdout.write(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
