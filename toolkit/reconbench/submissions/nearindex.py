"""Near-duplicate candidates through a nearest-neighbour index, so that an entry is compared with the
few earlier entries that can be near-duplicates of it, not with every entry of its target set.

The exact test stays nearcopy.Space.flag (checks/duplicates.py runs it on the candidates). The index
only has to never miss: every image the exact test flags must be a hit here, so that the share of
hits bounds the exact share from above and an entry below DUPLICATE_SHARE here is below it there.
That holds by construction:
- Both spaces are Euclidean on features: pixel MSE <= t  <=>  ||x - y|| <= sqrt(t D) (pixels in [0, 1],
  D values per image); for the unit structure vectors, 1 - q.f <= t  <=>  ||q - f|| <= sqrt(2 t)
  (a constant image maps to the zero vector, exact distance 1; its index distance is 0 or 1, so it is
  a hit whenever the exact test could flag it).
- The trees hold orthonormal projections of the features: an orthonormal projection never
  lengthens a vector, so ||P(x - y)|| <= ||x - y|| and a tree query returns a superset.
  Structure vectors are projected onto the 16 lowest frequencies of the 2-D DCT-II (per channel):
  they are blurred, so these keep nearly all of their energy (measured on the digits examples: the
  projected shares stay below 3% where the exact ones are 0). They are stored as float16 (the
  cache's size); the radius grows by the worst rounding of both vectors, which keeps the bound.
- Pixels are projected onto the 16 principal axes of the track's public pool (the data the
  thresholds are calibrated on), and every candidate the tree returns is then refined with the
  exact MSE from the uint8 pixels (stored as they are): the pixel hits are the exact ones. A
  board of smooth images (blends, class means) is dense in any low-dimensional view of the pixels,
  and the refinement keeps its candidates from counting.
- The structure test's minimum over +-1 px shifts is the earlier entry's image shifted (as
  Space.flag does it): the index holds the nine shifted vectors of each of its images.

- Entries are indexed in arrival order, in blocks of BLOCK entries with trees of their own; a query
  searches only the blocks that hold an entry it is compared with. A dense board makes the pixel
  candidates grow with the board (blends of five real runs on digits: ~620 per image at 400 entries,
  ~4 within the threshold), and the tree's time grows with them: the blocks halve what a whole
  board's validation searches (benchmarks/bench_site_build.py).

Library: SciPy's cKDTree. It answers radius queries exactly (no false negatives, which an approximate
index such as HNSW (hnswlib, faiss) or NN-descent (pynndescent) cannot promise, and a missed
neighbour would let a copy through), SciPy is already a dependency, and in 16 projected dimensions
with radii at the 1st percentile of the public data's nearest-neighbour distances a structure query
visits few leaves. Measured against scikit-learn's KDTree on 900,000 structure vectors: built 5.5x
faster (2.4 vs 13.3 CPU-s), queried 2x faster, the same answers. faiss's exact index is brute force
(O(n) per query, so O(n^2) for the board).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain

import numpy as np

from reconbench.submissions.nearcopy import SHIFTS, Space, Thresholds, structure_features

PIXEL_DIMS = 16  # principal axes of the public pool the pixel tree uses (candidates, refined exactly)
STRUCT_DIMS = 16  # DCT coefficients per shifted structure vector (blurred: the low frequencies hold its energy)
FEATURE_VERSION = f"u8-pixels-dct-s{STRUCT_DIMS}-shifts{len(SHIFTS)}-f16-v2"
UNSHIFTED = SHIFTS.index((0, 0))  # the query side is not shifted (Space.flag)
_F16_REL = 2.0 ** -11  # float16's unit roundoff (relative error of one stored value)
_F16_ABS = 2.0 ** -24  # its smallest subnormal step (absolute error near zero)
BLOCK = 64  # entries per pair of trees: a query searches the blocks holding an entry it is compared with
REFINE_ELEMENTS = 1 << 22  # candidate pixels refined at once (int32: 16 MB)


@lru_cache(maxsize=8)
def dct_projection(shape: tuple[int, ...], dims: int) -> np.ndarray:
    """(k, C*H*W) orthonormal rows: the 2-D DCT-II basis images of the k lowest frequencies (by
    u + v, then u, then channel), each on one channel; k = min(dims, C*H*W)."""
    c, h, w = shape

    def basis(n: int) -> np.ndarray:
        k = np.arange(n)[:, None]
        m = np.cos(math.pi * (2 * np.arange(n)[None, :] + 1) * k / (2 * n)) * math.sqrt(2.0 / n)
        m[0] /= math.sqrt(2.0)
        return m

    bh, bw = basis(h), basis(w)
    order = sorted((u + v, u, v, ch) for u in range(h) for v in range(w) for ch in range(c))[:min(dims, c * h * w)]
    rows = np.zeros((len(order), c, h, w))
    for i, (_, u, v, ch) in enumerate(order):
        rows[i, ch] = np.outer(bh[u], bw[v])
    return rows.reshape(len(order), -1)


BASIS_ROWS = 4096  # pool images centred at once (float64: 32 MB at 1,024 pixels)


def pixel_basis(pool: np.ndarray, dims: int = PIXEL_DIMS) -> np.ndarray:
    """(k, D) orthonormal rows: the principal axes of a public pool's pixels in [0, 1] (largest first).
    The covariance (np.cov's) is summed over blocks of rows: a float64 copy of the whole pool would be
    573 MB for the 70,000 Fashion-MNIST images, and np.cov makes two (issue 37: the site's peak)."""
    flat = pool.reshape(len(pool), -1)
    n, d = flat.shape
    mean = flat.mean(axis=0, dtype=np.float64) / 255.0
    cov = np.zeros((d, d))
    for lo in range(0, n, BASIS_ROWS):
        x = flat[lo:lo + BASIS_ROWS].astype(np.float64) / 255.0 - mean
        cov += x.T @ x
    values, vectors = np.linalg.eigh(cov / max(n - 1, 1))
    return np.ascontiguousarray(vectors[:, ::-1][:, :min(dims, d)].T)


def project(flat: np.ndarray, axes: np.ndarray) -> np.ndarray:
    """(N, k) float64: uint8 pixel rows in [0, 1] on the axes' rows, a block of rows at a time (a float64
    copy of a whole public dataset would be 139 MB for 17,000 Fashion images, 573 MB for 70,000)."""
    out = np.empty((len(flat), len(axes)))
    for lo in range(0, len(flat), BASIS_ROWS):
        out[lo:lo + BASIS_ROWS] = (flat[lo:lo + BASIS_ROWS].astype(np.float64) / 255.0) @ axes.T
    return out


_BASES: dict[tuple[str, str | None], np.ndarray] = {}


def track_basis(track) -> np.ndarray:
    """pixel_basis of the track's public pool (every split), once per process."""
    from reconbench.image.track_files import public_pool

    key = (track.id, track.target_set_sha256)
    if key not in _BASES:
        _BASES[key] = pixel_basis(public_pool(track))
    return _BASES[key]


@dataclass(frozen=True)
class Features:
    """One set of reconstructions in the index's spaces (see the module docstring)."""

    pixel: np.ndarray  # (N, D) uint8: the images' pixels as they are
    struct: np.ndarray  # (N, len(SHIFTS), k_struct) float16: the images shifted by each of SHIFTS

    def __len__(self) -> int:
        return len(self.pixel)


def compute_features(images: np.ndarray) -> Features:
    """uint8 (N, C, H, W) images -> Features (the structure vectors as nearcopy computes them)."""
    shape = tuple(images.shape[1:])
    p_struct = dct_projection(shape, STRUCT_DIMS)
    struct = np.stack([structure_features(images, s).numpy() @ p_struct.T for s in SHIFTS], axis=1)
    return Features(np.ascontiguousarray(images, dtype=np.uint8).reshape(len(images), -1), struct.astype(np.float16))


def radii(thresholds: Thresholds, shape: tuple[int, ...]) -> tuple[float, float]:
    """(pixel, structure) radii in the trees: the exact thresholds' distances (pixels in [0, 1]), the
    structure one plus float16 rounding of the two vectors compared (their norms are <= 1)."""
    pixel = math.sqrt(max(thresholds.pixel_mse, 0.0) * math.prod(shape))
    struct = math.sqrt(max(2.0 * thresholds.structure, 0.0)) + 2 * (_F16_REL + _F16_ABS * math.sqrt(STRUCT_DIMS))
    return pixel * (1 + 1e-9) + 1e-9, struct * (1 + 1e-9) + 1e-9


@dataclass(frozen=True)
class _Block:
    """Entries first..stop-1 of an index; their images from pixel0 (structure vectors from struct0) on."""

    first: int
    stop: int
    pixel0: int
    struct0: int
    pixel: object  # cKDTree of the block's projected pixels
    struct: object  # cKDTree of the block's shifted structure vectors


class NearIndex:
    """Every image of a set of entries (one target set), searchable by radius in both spaces.

    The entries are held in arrival order, in blocks of BLOCK entries with trees of their own: an
    entry is compared with those that came before it (checks/duplicates.py), so a query skips the
    blocks that hold none of them, and validating a whole board searches half of it on average."""

    def __init__(self, entries: Iterable[tuple[Hashable, Features]], basis: np.ndarray):
        """entries: in arrival order. basis: pixel_basis of the target set's public pool (queries must use the same)."""
        self.basis = basis
        self.keys: list[Hashable] = []
        feats: list[Features] = []
        for key, f in entries:
            self.keys.append(key)
            feats.append(f)
        sizes = np.array([len(f) for f in feats], dtype=np.int64)
        shifts = np.array([f.struct.shape[1] * len(f) for f in feats], dtype=np.int64)
        self._owner_p = np.repeat(np.arange(len(feats), dtype=np.int64), sizes)
        self._owner_s = np.repeat(np.arange(len(feats), dtype=np.int64), shifts)
        self._pixels = np.concatenate([f.pixel for f in feats]) if feats else np.zeros((0, basis.shape[1]), dtype=np.uint8)
        pixel0 = np.concatenate([[0], np.cumsum(sizes)])
        struct0 = np.concatenate([[0], np.cumsum(shifts)])
        self._blocks = [self._block(feats, lo, min(lo + BLOCK, len(feats)), int(pixel0[lo]), int(struct0[lo]))
                        for lo in range(0, len(feats), BLOCK)]

    def _block(self, feats: list[Features], first: int, stop: int, pixel0: int, struct0: int) -> _Block:
        from scipy.spatial import cKDTree

        pixels = self._pixels[pixel0:pixel0 + sum(len(f) for f in feats[first:stop])]
        struct = np.concatenate([f.struct.reshape(-1, f.struct.shape[-1]) for f in feats[first:stop]])
        return _Block(first, stop, pixel0, struct0, cKDTree(self._project(pixels)), cKDTree(struct.astype(np.float64)))

    def _project(self, pixels: np.ndarray) -> np.ndarray:
        return (pixels.astype(np.float64) / 255.0) @ self.basis.T

    def __len__(self) -> int:
        return len(self.keys)

    def upper_shares(self, mine: Features, thresholds: Thresholds, shape: tuple[int, ...],
                     among: set[Hashable] | None = None) -> dict[Hashable, float]:
        """For each indexed entry (of `among`, if given) with any hit: the share of `mine`'s images
        within the radii of one of its images. It is >= the exact share Space.flag measures."""
        if not self.keys or not len(mine):
            return {}
        r_pixel, r_struct = radii(thresholds, shape)
        wanted = np.ones(len(self.keys), dtype=bool) if among is None else \
            np.array([k in among for k in self.keys], dtype=bool)
        query_p = self._project(mine.pixel)
        query_s = mine.struct[:, UNSHIFTED].astype(np.float64)
        # exact pixel MSE of the candidates, in grey levels (integers: no rounding), with the slack
        # of the float64 expansion Space.flag computes
        limit = thresholds.pixel_mse * mine.pixel.shape[1] * 255.0 ** 2 * (1 + 1e-9) + 1e-6
        n_keys = len(self.keys)
        found = []  # image * n_keys + entry, for each (image, entry) with a hit
        for block in self._blocks:
            if not wanted[block.first:block.stop].any():
                continue
            rows, cand = _pairs(block.pixel.query_ball_point(query_p, r_pixel, return_sorted=False))
            cand += block.pixel0
            keep = np.zeros(len(cand), dtype=bool)
            step = max(1, REFINE_ELEMENTS // max(1, mine.pixel.shape[1]))
            for lo in range(0, len(cand), step):
                diff = self._pixels[cand[lo:lo + step]].astype(np.int32) - mine.pixel[rows[lo:lo + step]].astype(np.int32)
                keep[lo:lo + step] = np.einsum("ij,ij->i", diff, diff, dtype=np.int64) <= limit
            found.append(rows[keep] * n_keys + self._owner_p[cand[keep]])
            rows, cand = _pairs(block.struct.query_ball_point(query_s, r_struct, return_sorted=False))
            found.append(rows * n_keys + self._owner_s[cand + block.struct0])
        hit = np.unique(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)
        counts = np.bincount(hit % n_keys, minlength=n_keys)
        n = len(mine)
        return {self.keys[i]: counts[i] / n for i in np.flatnonzero(counts) if wanted[i]}


def _pairs(hits) -> tuple[np.ndarray, np.ndarray]:
    """query_ball_point's per-query lists -> (query row, indexed point) arrays."""
    lengths = np.fromiter((len(h) for h in hits), dtype=np.int64, count=len(hits))
    points = np.fromiter(chain.from_iterable(hits), dtype=np.int64, count=int(lengths.sum()))
    return np.repeat(np.arange(len(hits), dtype=np.int64), lengths), points


def first_near_duplicate(images: np.ndarray, features: Features, earlier: list[Hashable], index: NearIndex,
                         space_of: Callable[[Hashable], Space | None], thresholds: Thresholds,
                         share: float) -> tuple[Hashable, float] | None:
    """The first of `earlier` (in its order) of which more than `share` of `images` are near-copies
    (Space.flag), and that share; None if there is none. Space.flag runs only where the index's
    bound exceeds `share`: elsewhere the exact share, at most the bound, cannot."""
    bounds = index.upper_shares(features, thresholds, tuple(images.shape[1:]), among=set(earlier))
    for other in earlier:
        if bounds.get(other, 0.0) <= share:
            continue
        space = space_of(other)
        if space is None:
            continue
        found = space.flag(images, thresholds).share
        if found > share:
            return other, found
    return None
