"""The near-copy search of an entry against its track's public pool (checks/nearcopies.py): the same
answer as nearcopy.Space.flag, screened by lower bounds instead of computed for every pair.

Space.flag compares each reconstruction with every public image in full: on a Fashion-MNIST track,
ten 17,000 x 1,024 float64 products per entry, over nine shifted feature sets held in memory
(1.4 GB a track), rebuilt for each of the board's tracks. That was most of the site build's CPU
and its 7.9 GB peak (issue 37; benchmarks/bench_site_real.py). Here:
- screen: orthonormal projections never lengthen a difference, so ||P(x - y)||^2 / D <= pixel MSE
  (P: 16 principal axes of a seeded sample of the pool's pixels), and for structure vectors of norm
  <= 1, ||P(q - f)||^2 / 2 <= (|q|^2 + |f|^2) / 2 - q.f <= 1 - q.f (P: the 16 lowest DCT frequencies,
  nearindex.dct_projection). A pair whose bound exceeds the threshold cannot be within it.
- refine: every pair whose bound is within a threshold gets its exact distance: the pixel MSE from
  the uint8 grey levels (integers, no rounding), the structure distance from both images' structure
  features (nearcopy.structure_features, computed for those images only; min over the nine shifts).
So a reconstruction is flagged exactly when it has a public image within a threshold, and its
evidence is the nearest such image (in pixel space when the pixel test flags it, else in structure
space) with both exact distances to that image. Unflagged reconstructions carry no distance (inf).
The projected structure vectors are kept per image content: the Fashion-MNIST tracks' pools share
their images, so a board computes them once per image, not once per track; their features come from
shiftfeatures.shifted_features (structure_features' values bit for bit) in batches of 256: 0.13-0.16
of the CPU of structure_features per shift in batches of 2,048 (benchmarks/bench_struct_projection.py).
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict

import numpy as np

from reconbench.submissions import nearcopy
from reconbench.submissions.nearcopy import SHIFTS, Flags, Thresholds, structure_features
from reconbench.submissions.nearindex import dct_projection, project
from reconbench.submissions.shiftfeatures import shifted_features

DIMS = 16  # projected dimensions of each space (the screen; the answer is exact whatever the value)
BASIS_SAMPLE = 2000  # pool images the pixel axes are computed from (any orthonormal axes keep the bound)
CHUNK = 1 << 22  # screened pairs at once (float64: 32 MB)
FEATURE_BATCH = 2048  # images whose full structure features are computed at once
PROJECTION_BATCH = 256  # pool images projected at once (smaller batches stay in cache: half the CPU of 2048)
MEMO_MAX = 400_000  # projected structure vectors kept per process (~1.2 kB an image)
_AXES: dict[tuple, np.ndarray] = {}  # (dataset, image shape) -> pixel axes (PublicSpace's axes_key)
_MEMO: dict[bytes, np.ndarray] = {}  # image digest -> (len(SHIFTS), DIMS) projected structure vectors
POOL_BLOCK = 1024  # closest_pixel: pool images per float32 product (a few MB: the block stays in cache)
SLACK = 1e-9  # relative and absolute slack on the screen's bound (its float64 rounding, ~1e-13 here)


def _digest(image: np.ndarray) -> bytes:
    return hashlib.sha1(repr(image.shape).encode() + image.tobytes()).digest()


def _struct_projection(images: np.ndarray) -> np.ndarray:
    """(N, len(SHIFTS), DIMS) projected structure vectors of each image, from the memo where known."""
    p = dct_projection(tuple(images.shape[1:]), DIMS)
    keys = [_digest(img) for img in images]
    missing = [i for i, k in enumerate(keys) if k not in _MEMO]
    if len(_MEMO) + len(missing) > MEMO_MAX:
        _MEMO.clear()
        missing = list(range(len(images)))
    for lo in range(0, len(missing), PROJECTION_BATCH):
        rows = missing[lo:lo + PROJECTION_BATCH]
        batch = images[rows]
        proj = np.stack([f.numpy() @ p.T for _, f in shifted_features(batch)], axis=1)  # structure_features
        for i, v in zip(rows, proj):
            _MEMO[keys[i]] = v
    return np.stack([_MEMO[k] for k in keys]) if keys else np.zeros((0, len(SHIFTS), p.shape[0]))


def _pixel_axes(flat: np.ndarray) -> np.ndarray:
    """(k, D) orthonormal rows: principal axes of a seeded sample of the pool (pixels in [0, 1])."""
    rng = np.random.default_rng(0)
    sample = flat if len(flat) <= BASIS_SAMPLE else flat[np.sort(rng.choice(len(flat), BASIS_SAMPLE, replace=False))]
    x = sample.astype(np.float64) / 255.0
    _, vectors = np.linalg.eigh(np.cov(x, rowvar=False) if len(x) > 1 else np.eye(x.shape[1]))
    return np.ascontiguousarray(vectors[:, ::-1][:, :min(DIMS, x.shape[1])].T)


def _within(q: np.ndarray, pool: np.ndarray, pool_sq: np.ndarray, limit: float) -> tuple[np.ndarray, np.ndarray]:
    """(query row, pool index) pairs with ||q - p||^2 <= limit (with SLACK), in chunks.

    ||q - p||^2 <= L  <=>  q.p - |p|^2 / 2 >= (|q|^2 - L) / 2: one product of [q, 1] with [p, -|p|^2 / 2],
    then one comparison a pair (three passes over the N x M block fewer than forming the distance); its
    rounding (~1e-12 here: norms <= 32) is far inside SLACK."""
    q_sq = (q * q).sum(1)
    rows_out, cols_out = [], []
    step = max(1, CHUNK // max(1, len(pool)))
    bound = limit * (1 + SLACK) + SLACK
    pool_aug = np.concatenate([pool, -0.5 * pool_sq[:, None]], axis=1).T.copy()
    q_aug = np.concatenate([q, np.ones((len(q), 1))], axis=1)
    floor = 0.5 * (q_sq - bound)
    for lo in range(0, len(q), step):
        r, c = np.nonzero(q_aug[lo:lo + step] @ pool_aug >= floor[lo:lo + step, None])
        rows_out.append(r + lo)
        cols_out.append(c)
    if not rows_out:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(rows_out).astype(np.int64), np.concatenate(cols_out).astype(np.int64)


def nearest_of_each(rows: np.ndarray, cols: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Positions of each row's smallest value among (row, col, value) pairs; the lowest col on a tie."""
    order = np.lexsort((cols, values, rows))
    return order[np.r_[True, rows[order][1:] != rows[order][:-1]]] if len(order) else order


class PublicSpace:
    """A track's public pool, searchable for near-copies (see the module docstring)."""

    def __init__(self, images: np.ndarray, axes_key: str | None = None):
        """axes_key: pools under one key (a dataset: its tracks and sealed draws) share their pixel axes,
        computed from the first such pool (any orthonormal axes keep the bound; these screen as well)."""
        self.images = np.ascontiguousarray(images, dtype=np.uint8)
        self.shape = tuple(self.images.shape[1:])
        self.flat = self.images.reshape(len(self.images), -1)
        self.flat_sq = np.einsum("ij,ij->i", self.flat, self.flat, dtype=np.int64).astype(np.float64)  # exact
        if axes_key is None:
            self.axes = _pixel_axes(self.flat)
        else:
            key = (axes_key, self.shape)
            if key not in _AXES:
                _AXES[key] = _pixel_axes(self.flat)
            self.axes = _AXES[key]
        self.pixel_proj = project(self.flat, self.axes)
        self.pixel_sq = (self.pixel_proj ** 2).sum(1)
        self.struct_proj = _struct_projection(self.images)  # (M, shifts, k)
        self.struct_sq = (self.struct_proj ** 2).sum(2)  # (M, shifts)

    def __len__(self) -> int:
        return len(self.images)

    def _pixel_mse(self, queries: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        out = np.empty(len(rows))
        step = max(1, CHUNK // max(1, self.flat.shape[1]))  # pairs at once: int32 differences, 16 MB
        for lo in range(0, len(rows), step):
            diff = self.flat[cols[lo:lo + step]].astype(np.int32) - queries[rows[lo:lo + step]].astype(np.int32)
            out[lo:lo + step] = np.einsum("ij,ij->i", diff, diff, dtype=np.int64)
        return out / (255.0 ** 2 * self.flat.shape[1])

    def _structure(self, q_feat: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Exact structure distance of each pair: min over the pool image's shifted features."""
        if not len(rows):
            return np.zeros(0)
        wanted, at = np.unique(cols, return_inverse=True)
        best = np.full(len(rows), np.inf)
        for s in SHIFTS:
            feats = np.concatenate([structure_features(self.images[wanted[lo:lo + FEATURE_BATCH]], s).numpy()
                                    for lo in range(0, len(wanted), FEATURE_BATCH)])
            best = np.minimum(best, 1.0 - np.einsum("ij,ij->i", q_feat[rows], feats[at]))
        return best

    def _pixel_screen(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        flat = np.ascontiguousarray(queries, dtype=np.uint8).reshape(len(queries), -1)
        return flat, (flat.astype(np.float64) / 255.0) @ self.axes.T

    def pixel_pairs(self, queries: np.ndarray, mse: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every (query, pool image) pair with pixel MSE <= mse: (query rows, pool indices, exact MSE)."""
        flat, q = self._pixel_screen(queries)
        rows, cols = _within(q, self.pixel_proj, self.pixel_sq, mse * flat.shape[1])
        values = self._pixel_mse(flat, rows, cols)
        keep = values <= mse
        return rows[keep], cols[keep], values[keep]

    def closest_pixel(self, queries: np.ndarray) -> float:
        """The smallest pixel MSE between any query and any pool image, exact. The query nearest a pool
        image in the projected space gives an upper bound u (that pair's exact MSE); a query whose
        projected distance to every pool image exceeds u (the projection's lower bound, module docstring)
        cannot hold the minimum, and the queries left are compared with the whole pool: the products in
        float32 (half the CPU of float64), pool images in blocks (memory bounded); every pair within
        their rounding bound of the smallest is then measured exactly from the uint8 grey levels."""
        flat, q = self._pixel_screen(queries)
        if not len(flat) or not len(self):
            return float("inf")
        lower, nearest = np.empty(len(q)), np.empty(len(q), dtype=np.int64)
        step = max(1, CHUNK // len(self))
        for lo in range(0, len(q), step):
            d = q[lo:lo + step] @ self.pixel_proj.T
            d *= -2.0
            d += self.pixel_sq[None, :]
            nearest[lo:lo + step] = d.argmin(1)
            lower[lo:lo + step] = d[np.arange(len(d)), nearest[lo:lo + step]] + (q[lo:lo + step] ** 2).sum(1)
        upper = float(self._pixel_mse(flat, np.arange(len(q)), nearest).min())
        flat = flat[lower <= upper * flat.shape[1] * (1 + SLACK) + SLACK]
        if not len(flat):
            return upper
        d = flat.shape[1]
        x = flat.astype(np.float32)
        x_sq = (flat.astype(np.float64) ** 2).sum(1)
        # |float32 dot - exact| <= D u (x.p) <= D u (|x|^2 + |p|^2) / 2 (u = 2^-24, any summation order);
        # grey levels are exact in float32 and the squared norms exact in float64
        slack = d * 2.0 ** -23 * (x_sq.max() + 255.0 ** 2 * d)
        best, rows, cols = upper * 255.0 ** 2 * d, [], []
        buffer = np.empty((min(POOL_BLOCK, len(self)), d), dtype=np.float32)  # one buffer: no fresh pages a block
        for lo in range(0, len(self), POOL_BLOCK):
            p = buffer[:len(self.flat[lo:lo + POOL_BLOCK])]
            np.copyto(p, self.flat[lo:lo + POOL_BLOCK], casting="unsafe")
            dist = x_sq[:, None] + self.flat_sq[None, lo:lo + POOL_BLOCK] - 2.0 * (x @ p.T)
            best = min(best, float(dist.min()))
            r, c = np.nonzero(dist <= best + 2 * slack)
            rows.append(r)
            cols.append(c + lo)
        rows, cols = np.concatenate(rows), np.concatenate(cols)
        return min(upper, float(self._pixel_mse(flat, rows, cols).min())) if len(rows) else upper

    def flag(self, queries: np.ndarray, thresholds: Thresholds) -> Flags:
        queries = np.ascontiguousarray(queries, dtype=np.uint8)
        n, d = len(queries), int(math.prod(self.shape))
        flat = queries.reshape(n, -1)
        rows_p, cols_p, mse = self.pixel_pairs(queries, thresholds.pixel_mse)  # bound, then exact
        # structure test: bound over the nine shifts, then exact
        q_feat = structure_features(queries).numpy()
        q_struct = q_feat @ dct_projection(self.shape, DIMS).T
        pairs = [_within(q_struct, self.struct_proj[:, i], self.struct_sq[:, i], 2.0 * thresholds.structure)
                 for i in range(len(SHIFTS))]
        both = np.unique(np.concatenate([r * len(self) + c for r, c in pairs])) if pairs else np.zeros(0, np.int64)
        rows_s, cols_s = both // len(self), both % len(self)
        dist = self._structure(q_feat, rows_s, cols_s)
        keep = dist <= thresholds.structure
        rows_s, cols_s, dist = rows_s[keep], cols_s[keep], dist[keep]

        hit = np.zeros(n, dtype=bool)
        where = np.full(n, -1, dtype=np.int64)
        hit[rows_s] = True
        # the nearest image in structure space, then (overriding) in pixel space; ties: the lowest index
        for rows, cols, values in ((rows_s, cols_s, dist), (rows_p, cols_p, mse)):
            first = nearest_of_each(rows, cols, values)
            where[rows[first]] = cols[first]
        hit[rows_p] = True
        pixel, structure = np.full(n, np.inf), np.full(n, np.inf)
        flagged = np.flatnonzero(hit)
        pixel[flagged] = self._pixel_mse(flat, flagged, where[flagged])
        structure[flagged] = self._structure(q_feat, flagged, where[flagged])
        return Flags(hit, where, pixel, structure)


# A board's entries come grouped by track (folder order), so a few recent tracks keep every hit
# without holding them all (a PublicSpace is small: its projections, ~10 MB on Fashion-MNIST).
SPACES_KEPT = 2
_SPACES: OrderedDict[tuple[str, str | None], tuple[PublicSpace, Thresholds]] = OrderedDict()


def public_space(track) -> tuple[PublicSpace, Thresholds]:
    """The track's public pool as a PublicSpace, and its thresholds (registry, else calibrated:
    nearcopy.public_thresholds, which keeps them when the space is dropped)."""
    from reconbench.image.track_files import public_pool

    key = (track.id, track.target_set_sha256)
    if key in _SPACES:
        _SPACES.move_to_end(key)
    else:
        images = public_pool(track)
        thresholds = nearcopy._THRESHOLDS.get(key) or nearcopy._recorded(track, images) or nearcopy.calibrate(images)
        nearcopy._THRESHOLDS[key] = thresholds
        _SPACES[key] = (PublicSpace(images, axes_key=track.dataset), thresholds)
        while len(_SPACES) > SPACES_KEPT:
            _SPACES.popitem(last=False)
    return _SPACES[key]


def release() -> None:
    """Drop the spaces and the per-image memo (the site build, once validation is done)."""
    _SPACES.clear()
    _MEMO.clear()
    _AXES.clear()
