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

The rate cap. The nearest-neighbour quantile depends on how many images a class has: among 7,000
Fashion-MNIST images of a class natural pairs fall within it at a rate of 2e-7, among digits' ~180
at 9e-6, and a dataset of 1,797 images (160,596 same-class pairs) cannot count a rate below ~1e-5.
So the threshold is never where natural same-class pairs fall more often than RATE_CAP (one in a
million: one extracted member among up to 10,000 (reconstruction, member) pairs of a class is then
evidence at the verdict's level). Where the counted rate exceeds the cap, a tail bound gives the
distance, below the data's resolution:

    C(s) <= r_A * (s / s_A) ** b        for s <= s_A

C the share of same-class pairs within squared distance s, s_A the TAIL_PAIRS-th smallest pair
(r_A = TAIL_PAIRS / pairs: the anchor, counted) and b the flattest chord of the counted C below the
anchor, min over pairs s_k < s_A of log(r_A / C(s_k)) / log(s_A / s_k), on the dataset itself and
on the reference dataset (Fashion-MNIST's 70,000 images, REFERENCE, from the anchor at the same rate
r_A): a power law's exponent (the correlation dimension of Grassberger & Procaccia 1983) is ~4.5 in
the bulk of Fashion's pairs, but near-duplicates flatten its far tail to ~1.5, and the flattest
chord is what a bound must assume. Then threshold = min(quantile, s_A * (RATE_CAP / r_A) ** (1 / b))
and pair_rate = r_A * (threshold / s_A) ** b. benchmarks/bench_tail_bound.py checks the bound on
Fashion subsamples of digits' size against the rate all 70,000 images count.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import torch

from reconbench.core.extraction import Extraction, ExtractionGroup, extraction_count, pair_rate

QUANTILE = 0.001
RATE_CAP = 1e-6  # the most natural same-class pairs may fall within the threshold (module docstring)
TAIL_PAIRS = 100  # the tail bound's anchor: the 100th smallest same-class pair
REFERENCE = "fashion-mnist"  # the large dataset whose far tail the bound's exponent also covers
CHUNK_ELEMENTS = 1 << 23
KEEP = 16  # smallest distances kept per image (a row with more within the threshold is recounted)
DERIVATION = (f"quantile {QUANTILE:g} of the per-pixel MSE ([0,1] pixels) from each distinct image of the track's "
              "whole public dataset to its nearest other image of the same class; pair_rate = (same-class ordered "
              "pairs within it + 1) / (same-class ordered pairs + 1); where that rate exceeds "
              f"{RATE_CAP:g}, the tail bound C(s) <= r_A (s/s_A)^b below the {TAIL_PAIRS}th smallest same-class pair "
              f"s_A, b the flattest chord of the counted C below it (own data and {REFERENCE}) gives threshold "
              f"min(quantile, s_A (cap/r_A)^(1/b)) and pair_rate r_A (threshold/s_A)^b "
              "(reconbench.image.metrics.extraction)")


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


def calibrate(images: np.ndarray, labels: np.ndarray, quantile: float = QUANTILE, reference=None,
              rate_cap: float = RATE_CAP) -> dict:
    """The registry's `extraction` object for a public dataset (module docstring). `reference`:
    (pixels, labels) of the tail bound's reference dataset, or None for REFERENCE (loaded if needed)."""
    return calibrate_pixels(informative(images), labels, int(np.prod(images.shape[1:])), quantile, reference,
                            rate_cap) | {"dataset_sha256": dataset_sha256(images, labels)}


def _distinct(flat: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows of (pixels, class) that are not byte-identical to an earlier one, in order."""
    _, first = np.unique(np.c_[flat, labels.astype(np.int64)[:, None]], axis=0, return_index=True)
    first = np.sort(first)
    return flat[first], labels[first]


def smallest_pairs(flat: np.ndarray, labels: np.ndarray, m: int) -> tuple[np.ndarray, int]:
    """The m smallest squared grey-level distances between distinct same-class images (each
    unordered pair once, ascending, exact), and how many unordered same-class pairs there are."""
    x_all, y_all = _distinct(flat, labels)
    best, bound, pairs = np.empty(0), math.inf, 0
    for c in np.unique(y_all):
        x = _flat(x_all[y_all == c])
        pairs += len(x) * (len(x) - 1) // 2
        sq = (x * x).sum(1)
        rows = max(1, CHUNK_ELEMENTS // max(1, len(x)))
        for lo in range(0, len(x), rows):
            d = (sq[lo:lo + rows, None] + sq[None, :] - 2.0 * x[lo:lo + rows] @ x.T).clamp_min_(0).round_()
            upper = torch.arange(lo, lo + d.shape[0])[:, None] < torch.arange(len(x))[None, :]
            got = d[upper & (d <= bound)].numpy()
            best = np.sort(np.concatenate([best, got]))[:m]
            if len(best) == m:
                bound = float(best[-1])
    return best, pairs


def flattest_chord(smallest: np.ndarray, pairs: int, anchor_rate: float) -> tuple[float, float]:
    """(s_A, b): the squared distance where the counted share of pairs C reaches anchor_rate, and the
    flattest chord of log C against log s from it down to any smaller pair (module docstring)."""
    rank = math.ceil(anchor_rate * pairs * (1 - 1e-12))  # the exact rank despite rounding
    if len(smallest) < rank:
        raise ValueError(f"{len(smallest)} pairs given, the anchor needs the {rank} smallest")
    s_a = float(smallest[rank - 1])
    below = np.unique(smallest[smallest < s_a])  # distinct images: every distance >= 1 grey level^2
    if not len(below):
        raise ValueError("no pair below the anchor: no tail to bound")
    counted = np.searchsorted(smallest, below, side="right")  # pairs within each distance
    return s_a, float((np.log(rank / counted) / np.log(s_a / below)).min())


def reference_pixels() -> tuple[np.ndarray, np.ndarray]:
    """REFERENCE's 70,000 images (train and test, unpadded) as informative pixels, with their classes."""
    from reconbench.image.data.fashion import fashion_mnist

    data = fashion_mnist()
    images = np.concatenate([data["train"].images, data["test"].images])
    return informative(images), np.concatenate([data["train"].labels, data["test"].labels])


def reference_exponent(anchor_rate: float, reference=None) -> float:
    """The flattest chord of the reference dataset's counted pair CDF below the anchor rate."""
    ref_flat, ref_labels = reference if reference is not None else reference_pixels()
    ref_smallest, ref_pairs = smallest_pairs(ref_flat, ref_labels, math.ceil(anchor_rate * _pair_count(ref_labels)) + 1)
    return flattest_chord(ref_smallest, ref_pairs, anchor_rate)[1]


def tail_bound(flat: np.ndarray, labels: np.ndarray, quantile_sq: float, reference=None,
               exponent_reference: float | None = None, rate_cap: float = RATE_CAP) -> dict:
    """Threshold (squared grey levels) and rate from the tail bound, with its parameters."""
    own, pairs = smallest_pairs(flat, labels, TAIL_PAIRS)
    anchor_rate = TAIL_PAIRS / pairs
    s_a, b_own = flattest_chord(own, pairs, anchor_rate)
    b_ref = exponent_reference if exponent_reference is not None else reference_exponent(anchor_rate, reference)
    b = min(b_own, b_ref)
    threshold_sq = min(quantile_sq, s_a * (rate_cap / anchor_rate) ** (1.0 / b))
    return {"threshold_sq": threshold_sq, "pair_rate": anchor_rate * (threshold_sq / s_a) ** b,
            "tail": {"anchor_pairs": TAIL_PAIRS, "anchor_rate": anchor_rate, "anchor_sq": s_a, "exponent": b,
                     "exponent_own": b_own, "exponent_reference": b_ref, "reference": REFERENCE,
                     "rate_cap": rate_cap}}


def _pair_count(labels: np.ndarray) -> int:
    """Unordered same-class pairs (an upper bound once byte-identical images are dropped)."""
    n = np.unique(labels, return_counts=True)[1].astype(np.int64)
    return int((n * (n - 1) // 2).sum())


def calibrate_pixels(flat: np.ndarray, labels: np.ndarray, dim: int, quantile: float = QUANTILE,
                     reference=None, rate_cap: float = RATE_CAP) -> dict:
    """calibrate() on (N, D') pixels of images with `dim` pixels in all."""
    x_all, y_all = _distinct(flat, labels)
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
    within = _within(kept, threshold_sq)
    out = {"threshold": threshold_sq / scale, "quantile": quantile, "pair_rate": pair_rate(within, pairs),
           "pairs_within": within, "pairs": pairs, "derivation": DERIVATION}
    if out["pair_rate"] > rate_cap:  # more natural pairs within than the cap: the tail bound's distance
        tail = tail_bound(flat, labels, threshold_sq, reference, rate_cap=rate_cap)
        out |= {"threshold": tail["threshold_sq"] / scale, "pair_rate": tail["pair_rate"],
                "pairs_within": _within(kept, tail["threshold_sq"]),
                "tail": {k: v / scale if k == "anchor_sq" else v for k, v in tail["tail"].items()}}
        out["tail"]["anchor"] = out["tail"].pop("anchor_sq")  # per-pixel MSE, as the threshold
    return out


def _within(kept: list, threshold_sq: float) -> int:
    """Ordered same-class pairs within threshold_sq, exact (from each row's KEEP nearest)."""
    within = 0
    for x, d in kept:
        counts = (d <= threshold_sq).sum(1)
        full = torch.nonzero(counts == d.shape[1]).flatten()  # every kept distance within: count the row exactly
        within += int(counts.sum())
        for i in full.tolist():
            row = ((x - x[i]) ** 2).sum(1).round_()
            within += int((row <= threshold_sq).sum()) - 1 - int(counts[i])
    return within


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
