"""Does the extraction calibration's tail bound hold where it can be counted? (issue 33, digits)

    nice -n 10 python benchmarks/bench_tail_bound.py [DRAWS]

digits' 1,797 images count natural same-class pairs down to a rate of ~6e-6 (one pair of 160,596);
its threshold sits where the tail bound of image/metrics/extraction.py puts the rate at 1e-6, below
anything the data can count. Fashion-MNIST can count that far: its 70,000 images have 2.4e8
same-class pairs. So: DRAWS subsamples of Fashion-MNIST with digits' class sizes, each calibrated as
digits is (anchor: its 100th smallest pair; exponent: the flattest chord of its own pairs and of the
whole reference), and the rate all 70,000 images count at the subsample's threshold, which the
bound claims is at most 1e-6. Beside it, two bounds the calibration does not use: the subsample's
own flattest chord alone, and a power law fitted to its 100 smallest pairs (Hill/Takens maximum
likelihood, the correlation dimension's estimator) -- what an exponent taken from the bulk of the
pairs does in the far tail, where near-duplicates flatten it. Also printed: the chord of Fashion's
counted pair CDF from digits' anchor rate to lower rates (the bulk's exponent against the tail's).
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

from reconbench.core.tracks import get_track
from reconbench.image.metrics.extraction import (RATE_CAP, TAIL_PAIRS, _distinct, flattest_chord, image_extraction,
                                                 informative, reference_pixels, smallest_pairs, tail_bound)
from reconbench.image.track_files import load_splits, public_dataset


def main(argv: list[str]) -> int:
    draws = int(argv[0]) if argv else 50
    started = time.process_time()
    digits_flat, digits_y = _distinct(*(lambda x, y: (informative(x), y))(*public_dataset(get_track("digits"))))
    sizes = np.unique(digits_y, return_counts=True)[1]
    ref_flat, ref_y = _distinct(*reference_pixels())
    _, digits_pairs = smallest_pairs(digits_flat, digits_y, 1)
    anchor_rate = TAIL_PAIRS / digits_pairs
    n_ref = int(sum(n * (n - 1) // 2 for n in np.unique(ref_y, return_counts=True)[1]))
    full, n_ref = smallest_pairs(ref_flat, ref_y, math.ceil(anchor_rate * n_ref) + 1)
    s_a, b_ref = flattest_chord(full, n_ref, anchor_rate)
    print(f"reference: {len(ref_flat):,} distinct images, {n_ref:,} same-class pairs; {len(full):,} smallest counted "
          f"({time.process_time() - started:.0f} CPU s)")
    print(f"digits: {len(digits_flat):,} images, {digits_pairs:,} same-class pairs; anchor rate {anchor_rate:.3g}")
    print(f"Fashion's counted pair CDF from the anchor rate {anchor_rate:.3g} (squared distance {s_a:.0f} grey levels^2):")
    for rate in (1e-4, 1e-5, 1e-6, 2e-7, 5e-8, 1 / n_ref):
        k = max(1, round(rate * n_ref))
        s = full[k - 1]
        print(f"  rate {rate:.2g}: distance^2 {s:.0f}, chord exponent {math.log(anchor_rate / (k / n_ref)) / math.log(s_a / s):.2f}")
    print(f"  flattest chord (the reference exponent): {b_ref:.3f}")

    def counted(threshold_sq: float) -> float:  # the whole reference's rate within it
        return np.searchsorted(full, threshold_sq, side="right") / n_ref

    rng = np.random.default_rng(0)
    rows = {"bound (own and reference chord)": [], "own chord only": [], "power law, Hill MLE": []}
    for _ in range(draws):
        pick = np.concatenate([rng.choice(np.flatnonzero(ref_y == c), n, replace=False) for c, n in enumerate(sizes)])
        sub, sub_y = ref_flat[pick], ref_y[pick]
        got = tail_bound(sub, sub_y, math.inf, exponent_reference=b_ref)
        tail = got["tail"]
        rows["bound (own and reference chord)"].append(counted(got["threshold_sq"]))
        own_t = tail["anchor_sq"] * (RATE_CAP / tail["anchor_rate"]) ** (1 / tail["exponent_own"])
        rows["own chord only"].append(counted(own_t))
        smallest, _ = smallest_pairs(sub, sub_y, TAIL_PAIRS)
        hill = (TAIL_PAIRS - 1) / np.log(smallest[-1] / smallest[:-1]).sum()
        rows["power law, Hill MLE"].append(counted(smallest[-1] * (RATE_CAP / tail["anchor_rate"]) ** (1 / hill)))
    print(f"\n{draws} Fashion subsamples of digits' class sizes: the rate all {len(ref_flat):,} images count at the "
          f"threshold each calibration gives (claimed: <= {RATE_CAP:g})")
    print("| bound | median counted rate | largest | draws above the cap |")
    print("|---|---|---|---|")
    for name, rates in rows.items():
        r = np.array(rates)
        print(f"| {name} | {np.median(r):.2g} | {r.max():.2g} | {int((r > RATE_CAP).sum())} of {draws} |")
    track = get_track("digits")
    cal = track.extraction
    print(f"\ndigits' registry calibration: threshold {cal.threshold:.3g} per-pixel MSE ({cal.threshold * 64 * 255 ** 2:.0f} "
          f"grey levels^2; its closest same-class pair: {smallest_pairs(digits_flat, digits_y, 1)[0][0]:.0f}), pair rate "
          f"{cal.pair_rate:.3g}, exponent {cal.tail.exponent:.3f} (own {cal.tail.exponent_own:.3f})")
    s = load_splits(track)
    for seed in range(3):  # tests/test_extraction.py's case: one exact member among 99 aux images
        rng = np.random.default_rng(seed)
        aux = rng.choice(len(s.aux_same), 99, replace=False)
        which = int(rng.integers(len(s.target)))
        rec = np.concatenate([s.target.images[which:which + 1], s.aux_same.images[aux]])
        rec_y = np.r_[s.target.labels[which], s.aux_same.labels[aux]]
        e = image_extraction(rec, rec_y, s.target.images, s.target.labels, s.holdout.images, s.holdout.labels,
                             cal.threshold, cal.pair_rate)
        print(f"one exact member among 99 aux images (seed {seed}): {e.sentence()}, relabelling p {e.p_relabel:.2g}")
    print(f"\n{time.process_time() - started:.0f} CPU s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
