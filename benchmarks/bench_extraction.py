"""CPU time of the extraction count and of the non-member copy check at 70,000 public images (issue 33).

    nice -n 10 python benchmarks/bench_extraction.py

On fashion-n1000 (|D_tar| = 1,000; pool per class: 100 members + 100 holdout) with 1,000
reconstructions (989 noisy aux class means, 10 member copies, one copied test image): the count
(image/metrics/extraction.py), the public index over the whole Fashion-MNIST dataset (built once
per process, submissions/publiccopy.py) and its query, against the brute-force search of the same
70,000 images (checks/copies.nearest_copies: every distance) as the reference, measured in the same
run. Process time (CPU seconds), so a loaded machine changes little.
"""

from __future__ import annotations

import time

import numpy as np
import torch


def cpu(fn):
    t = time.process_time()
    out = fn()
    return out, time.process_time() - t


def main() -> int:
    torch.set_num_threads(1)
    from reconbench.core.tracks import get_track
    from reconbench.image.metrics.extraction import image_extraction
    from reconbench.image.track_files import load_splits, public_dataset
    from reconbench.submissions.checks.copies import nearest_copies
    from reconbench.submissions.publiccopy import PublicIndex, non_member_copies

    track = get_track("fashion-n1000")
    s = load_splits(track)
    images, _ = public_dataset(track)
    rng = np.random.default_rng(0)
    aux, aux_y = s.aux_same.images, s.aux_same.labels
    means = np.stack([aux[aux_y == c].astype(float).mean(0) for c in range(10)])
    base_y = rng.integers(0, 10, 989)
    base = np.clip(means[base_y] + rng.normal(0, 20, means[base_y].shape), 0, 255).round().astype(np.uint8)
    rec = np.concatenate([base, s.target.images[:10], s.test.images[:1]])
    rec_y = np.concatenate([base_y, s.target.labels[:10], s.test.labels[:1]])
    cal = track.extraction
    e, t_count = cpu(lambda: image_extraction(rec, rec_y, s.target.images, s.target.labels, s.holdout.images,
                                              s.holdout.labels, cal.threshold, cal.pair_rate))
    index, t_build = cpu(lambda: PublicIndex(images))
    hits, t_query = cpu(lambda: non_member_copies(rec, s.target.images, index, cal.threshold))
    pool = torch.from_numpy(images.reshape(len(images), -1)).double() / 255.0
    (best, _), t_brute = cpu(lambda: nearest_copies(rec, pool))
    brute = sorted(np.flatnonzero(best <= cal.threshold).tolist())
    assert e.members == 10 and e.holdout == 0, e
    assert [h.reconstruction for h in hits] == [999], hits[:5]  # the copied test image, not the 10 members
    assert brute == list(range(989, 1000)), brute  # every distance: the 10 members and the test image, as the index
    print(f"public images: {len(images):,}; reconstructions: {len(rec):,}")
    print(f"extraction count (1,000 x 200 per class, exact MSE): {t_count:.2f} CPU s -> {e.sentence()}")
    print(f"public index build (70,000 images, 16 principal axes, k-d tree): {t_build:.2f} CPU s (once per process)")
    print(f"non-member copy check, index query + exact refinement: {t_query:.2f} CPU s ({len(hits)} refused)")
    print(f"brute force over the 70,000 (reference, every distance): {t_brute:.2f} CPU s; "
          f"query {t_brute / max(t_query, 1e-9):.1f}x faster")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
