"""Image side of the extraction count (core/extraction.py): its calibration and its distances.

Distance: per-pixel MSE on [0, 1] pixels, the copy check's distance and the near-duplicate
index's pixel space (submissions/nearindex.py searches it exactly: a projection that never
lengthens a vector, then the exact MSE of each candidate), and the distance the extraction papers
use: Carlini et al. (USENIX'23) and Meehan et al. (AISTATS'20) call a sample copied by its
Euclidean (l2) distance to the nearest training image, which is sqrt(D * MSE). SSIM would rank the
same near-copies but no index answers its radius queries exactly.

Calibration (`calibrate`), on the track's whole public dataset (the dataset its splits came from:
70,000 Fashion-MNIST images, 1,797 digits), byte-identical images counted once:
    threshold = the QUANTILE quantile of the per-pixel MSE from each image to its nearest other
                image of the same class ("natural data almost never comes this close");
    pair_rate = (ordered same-class pairs within the threshold + 1) / (ordered same-class pairs + 1).
Exact (brute force per class, float64 distances from integer grey levels); `main` prints the
registry's `extraction` objects (scripts/extraction_thresholds.py writes them).
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import torch

from reconbench.core.extraction import Extraction, ExtractionGroup, extraction_count, pair_rate

QUANTILE = 0.001
CHUNK_ELEMENTS = 1 << 23
KEEP = 16  # smallest distances kept per image (a row with more within the threshold is recounted)
DERIVATION = (f"quantile {QUANTILE:g} of the per-pixel MSE ([0,1] pixels) from each distinct image of the track's "
              "whole public dataset to its nearest other image of the same class; pair_rate = (same-class ordered "
              "pairs within it + 1) / (same-class ordered pairs + 1) (reconbench.image.metrics.extraction)")


def dataset_sha256(images: np.ndarray, labels: np.ndarray) -> str:
    h = hashlib.sha256(np.ascontiguousarray(images).tobytes())
    h.update(np.ascontiguousarray(labels, dtype=np.int64).tobytes())
    return h.hexdigest()


def _flat(images: np.ndarray) -> torch.Tensor:
    flat = np.ascontiguousarray(images).reshape(len(images), int(np.prod(images.shape[1:])))
    return torch.from_numpy(flat).to(torch.float64)


def _class_neighbours(x: torch.Tensor) -> torch.Tensor:
    """(N, KEEP) smallest squared grey-level distances from each row to the other rows, ascending."""
    sq = (x * x).sum(1)
    rows = max(1, CHUNK_ELEMENTS // max(1, len(x)))
    keep = min(KEEP, len(x) - 1)
    out = []
    for lo in range(0, len(x), rows):
        d = (sq[lo:lo + rows, None] + sq[None, :] - 2.0 * x[lo:lo + rows] @ x.T).clamp_min_(0).round_()
        d[torch.arange(d.shape[0]), torch.arange(lo, lo + d.shape[0])] = math.inf
        out.append(torch.topk(d, keep, dim=1, largest=False).values)
    return torch.cat(out)


def informative(images: np.ndarray) -> np.ndarray:
    """(N, D') the pixels that are not 0 in every image (a zero border adds nothing to a distance):
    a padded view and the unpadded one give the same array, so they share one calibration."""
    flat = np.ascontiguousarray(images).reshape(len(images), -1)
    return np.ascontiguousarray(flat[:, flat.any(axis=0)])


def calibrate(images: np.ndarray, labels: np.ndarray, quantile: float = QUANTILE) -> dict:
    """The registry's `extraction` object for a public dataset (module docstring)."""
    return calibrate_pixels(informative(images), labels, int(np.prod(images.shape[1:])), quantile) | {
        "dataset_sha256": dataset_sha256(images, labels)}


def calibrate_pixels(flat: np.ndarray, labels: np.ndarray, dim: int, quantile: float = QUANTILE) -> dict:
    """calibrate() on (N, D') pixels of images with `dim` pixels in all."""
    _, first = np.unique(np.c_[flat, labels.astype(np.int64)[:, None]], axis=0, return_index=True)
    first = np.sort(first)
    x_all, y_all = flat[first], labels[first]
    nearest, kept, pairs = [], [], 0
    for c in np.unique(y_all):
        x = _flat(x_all[y_all == c])
        if len(x) < 2:
            continue
        d = _class_neighbours(x)
        nearest.append(d[:, 0])
        kept.append((x, d))
        pairs += len(x) * (len(x) - 1)
    scale = dim * 255.0 ** 2
    threshold_sq = float(np.quantile(torch.cat(nearest).numpy(), quantile, method="lower"))
    within = 0
    for x, d in kept:
        counts = (d <= threshold_sq).sum(1)
        full = torch.nonzero(counts == d.shape[1]).flatten()  # every kept distance within: count the row exactly
        within += int(counts.sum())
        for i in full.tolist():
            row = ((x - x[i]) ** 2).sum(1).round_()
            within += int((row <= threshold_sq).sum()) - 1 - int(counts[i])
    return {"threshold": threshold_sq / scale, "quantile": quantile, "pair_rate": pair_rate(within, pairs),
            "pairs_within": within, "pairs": pairs, "derivation": DERIVATION}


def mse_matrix(rec: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """(n, P) per-pixel MSE on [0, 1] between uint8 images (float64 from integers: exact)."""
    a, b = _flat(rec), _flat(pool)
    d = ((a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T).clamp_min_(0).round_()
    return (d / (a.shape[1] * 255.0 ** 2)).numpy()


def image_extraction(rec: np.ndarray, rec_y: np.ndarray, tar: np.ndarray, tar_y: np.ndarray, hold: np.ndarray,
                     hold_y: np.ndarray, threshold: float, rate: float) -> Extraction:
    """The count for uint8 images: per class, the pool is its targets then its holdout (as the gap's).
    A class no reconstruction is labelled with still counts its members in n (none can be extracted)."""
    rec_y, tar_y, hold_y = (np.asarray(y, dtype=np.int64) for y in (rec_y, tar_y, hold_y))
    groups = []
    for c in np.unique(tar_y):
        r, t, h = (np.flatnonzero(y == c) for y in (rec_y, tar_y, hold_y))
        pool = np.concatenate([tar[t], hold[h]])
        members = np.r_[np.ones(len(t), bool), np.zeros(len(h), bool)]
        groups.append(ExtractionGroup.from_distances(str(c), mse_matrix(rec[r], pool), members))
    return extraction_count(groups, threshold, rate)


def main(argv: list[str] | None = None) -> int:
    """`python -m reconbench.image.metrics.extraction [TRACK...]`: print each track's calibration."""
    import json
    import sys

    from reconbench.core.tracks import all_tracks
    from reconbench.image.track_files import public_dataset

    wanted = set(argv if argv is not None else sys.argv[1:])
    out, done = {}, {}
    for t in all_tracks():
        if t.status != "unpublished" and (not wanted or t.id in wanted):
            images, labels = public_dataset(t)
            key = dataset_sha256(images, labels)  # tracks of one dataset and view share it
            out[t.id] = done[key] = done.get(key) or calibrate(images, labels)
    sys.stdout.write(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
