"""Which test fits the membership gap: re-labelling the pool's membership (ours) vs per-reconstruction tests.

    .venv/bin/python benchmarks/bench_membership_tests.py            # digits: reference rows + examples

For each set of reconstructions that cannot know the members (the reference rows: the aux images as
they are, the per-class aux mean, noise) and for each digits example entry, the SSIM, PSNR, MSE and
KNN gaps tested three ways on the same per-reconstruction best matches:
  ours       paired permutation over membership labels within class (metrics/membership.py)
  sign flip  scipy.stats.permutation_test(permutation_type="samples"): flips each reconstruction's pair
  bootstrap  scipy.stats.bootstrap over reconstructions (paired), 95% percentile interval
A reference row is null by construction, so a test that calls it significant (p < 0.01, or an interval
without 0) is miscalibrated for this data. Prints the table and, per test, how many null rows it flags.
"""

from __future__ import annotations

import glob
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

from reconbench.leaderboard.baselines import baseline_images
from reconbench.image.metrics import score
from reconbench.image.results import load_reconstructions
from reconbench.image.track_files import load_holdout, load_splits
from reconbench.core.tracks import get_track

METRICS = ("mse", "psnr", "ssim", "knn_dist")
LARGER = {"mse": False, "psnr": True, "ssim": True, "knn_dist": False}


def sets(track, splits):
    for kind in ("aux", "aux-mean", "noise"):
        images, labels = baseline_images(kind, len(splits.target), tuple(track.input_shape), track.num_classes,
                                          splits.aux_same)
        yield f"reference: {kind}", True, False, images, labels
    for path in sorted(glob.glob("submissions/*/digits-*/result.json")):
        payload = json.loads(Path(path).read_text())["payload"]
        if payload["track"] != track.id:
            continue
        images, labels = load_reconstructions(Path(path).parent / "reconstructions.safetensors")
        yield payload["entry_id"], False, payload["scenario"].startswith("dynamic"), images, labels


def per_reconstruction(gap, larger: bool) -> np.ndarray:
    sign = 1.0 if larger else -1.0
    return sign * (gap.best_target - gap.best_holdout)


def main() -> int:
    track = get_track("digits")
    splits = load_splits(track)
    flagged = {"ours": [0, 0], "sign flip": [0, 0], "bootstrap": [0, 0]}  # null rows flagged, null rows tested
    print("| reconstructions | metric | gap | ours: interval, p | sign flip p | bootstrap interval |")
    print("|---|---|---|---|---|---|")
    t0 = time.perf_counter()
    for name, null, dynamic, images, labels in sets(track, splits):
        target = splits.update if dynamic else splits.target
        holdout = load_holdout(track, dynamic)
        report = score(images, labels, target.images, target.labels, lpips=False, fid=False, track=track,
                       holdout_images=holdout.images, holdout_labels=holdout.labels)
        for metric in METRICS:
            g, raw = report.membership[metric], report.gaps.get(metric)
            if raw is None:
                continue
            d = per_reconstruction(raw, LARGER[metric])
            flip = stats.permutation_test((d,), np.mean, permutation_type="samples", alternative="greater",
                                          n_resamples=2000, random_state=0).pvalue
            boot = stats.bootstrap((d,), np.mean, n_resamples=2000, method="percentile", random_state=0).confidence_interval
            if null:
                for test, hit in (("ours", g.p < 0.01 or not g.low <= 0 <= g.high), ("sign flip", flip < 0.01),
                                  ("bootstrap", not boot.low <= 0 <= boot.high)):
                    flagged[test][0] += int(hit)
                    flagged[test][1] += 1
            print(f"| {name} | {metric} | {g.gap:+.4g} | [{g.low:+.4g}, {g.high:+.4g}], {g.p:.3g} | {flip:.3g} | "
                  f"[{boot.low:+.4g}, {boot.high:+.4g}] |")
    print()
    for test, (hit, total) in flagged.items():
        print(f"{test}: {hit} of {total} null (reference-row) gaps called significant")
    print(f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
