"""Calibration of the recovery count ("recovers k", core/recovery.py; issue 44, item 2).

    nice -n 10 python benchmarks/bench_recovers_calibration.py [TRACK...]   (default: fashion-n100 fashion-n500)

On each track's real target set and holdout, with the track's whole public dataset (70,000 Fashion-MNIST
images) for nn(x), simulated entries of |D_rec| = |D_tar| reconstructions labelled with the targets'
class counts:

1. Knowledge-only outputs (no model, no membership), ENTRIES of each kind: aux images drawn per class;
   per-class aux means with noise (sigma 20 grey levels); mixups of two aux images of the class
   (lambda ~ U(0.3, 0.7)); uniform noise; and, chosen *with* the membership, each member's k-th nearest
   public neighbour (k ~ 1..3; any public image but the member): the look-alikes the rule must never
   credit. Reported: how often "recovers" fires (its false-positive rate, to hold at or below ALPHA),
   the recovered members and holdout items per entry, and the smallest rel(x) of any member.
   Also, apart (membership-using, not knowledge-only): mixups of each member's two nearest public neighbours.
2. Detection: c member copies (c = 1, 5, 10, 20), each noisy (Gaussian, sigma = 5, 10, 15, 20 grey levels,
   rounded and clipped), blurred (3x3 box mean, edges repeated) or shifted by one pixel (right), among
   |D_tar| - c aux draws; REPLICATES each. Reported: the share of copied members counted as recovered
   (rel < TAU), how often "recovers" fires, how often the extraction count ("extracts") fires on the same
   entries, and the copies' mean SSIM to their member.
3. TAU: the same knowledge-only entries and the 20-copy entries re-counted at other TAU (the shift-tolerant
   nn(x) is computed where near(x) < TAU nn0(x) at the TAU of the run, 1: at larger TAU the table's counts
   use the lower bound nn0 elsewhere, which can only credit more, never less).
Process time (CPU seconds) at the end.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import torch

ENTRIES = 50  # per knowledge-only kind (5 kinds: 250 entries per track)
REPLICATES = 20  # per (transformation, copies)
COPIES = (1, 5, 10, 20)
SIGMAS = (5, 10, 15, 20)
TAUS = (0.5, 0.75, 1.0, 1.25, 1.5)


def classwise(pool_images, pool_y, want_y, rng):
    """One random pool image of each wanted class."""
    out = np.empty((len(want_y), *pool_images.shape[1:]), np.uint8)
    for c in np.unique(want_y):
        where = np.flatnonzero(want_y == c)
        out[where] = pool_images[rng.choice(np.flatnonzero(pool_y == c), len(where))]
    return out


def noisy(images, sigma, rng):
    return np.clip(images.astype(np.float64) + rng.normal(0, sigma, images.shape), 0, 255).round().astype(np.uint8)


def blur(images):
    x = np.pad(images.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)), mode="edge")
    h, w = images.shape[2:]
    out = sum(x[:, :, i:i + h, j:j + w] for i in range(3) for j in range(3)) / 9.0
    return out.round().astype(np.uint8)


def shift(images):
    out = np.zeros_like(images)
    out[..., 1:] = images[..., :-1]  # one pixel right; the left column becomes background
    return out


def shift2(images):
    return shift(shift(images))


def main(argv: list[str]) -> int:
    torch.set_num_threads(1)
    from reconbench.core.membership import ALPHA
    from reconbench.core.recovery import TAU, recovery_count
    from reconbench.core.tracks import get_track
    from reconbench.image.metrics.extraction import image_extraction
    from reconbench.image.metrics.leakage import kernel_matrix
    from reconbench.image.metrics.recovery import image_recovery, l2_matrix, public_nearest
    from reconbench.image.metrics.ssim import SSIMKernel
    from reconbench.image.track_files import load_splits, public_dataset

    started = time.process_time()
    for track_id in argv or ["fashion-n100", "fashion-n500"]:
        t0 = time.process_time()
        track = get_track(track_id)
        s = load_splits(track)
        public, _ = public_dataset(track)
        tar, tar_y, hold, hold_y = s.target.images, s.target.labels, s.holdout.images, s.holdout.labels
        aux, aux_y = s.aux_same.images, s.aux_same.labels
        nn_t, nn_h = public_nearest(tar, public), public_nearest(hold, public)
        t_nn = time.process_time() - t0
        cal = track.extraction
        n = len(tar)
        rng = np.random.default_rng(0)

        def count(rec, rec_y):  # as validation counts (checks/recovery.py): shift-tolerant
            return image_recovery(rec, rec_y, tar, tar_y, hold, hold_y, nn_t, nn_h, public=lambda: public,
                                  public_key=track.dataset)

        # each member's nearest public images other than itself (the look-alikes)
        d = l2_matrix(tar, public)
        d[d == 0] = np.inf
        neighbours = np.argsort(d, axis=1)[:, :3]
        means = {c: aux[aux_y == c].astype(np.float64).mean(0) for c in np.unique(aux_y)}

        def knowledge(kind):
            rec_y = rng.permutation(tar_y)
            if kind == "aux images":
                return classwise(aux, aux_y, rec_y, rng), rec_y
            if kind == "class means + noise":
                base = np.stack([means[int(c)] for c in rec_y])
                return np.clip(base + rng.normal(0, 20, base.shape), 0, 255).round().astype(np.uint8), rec_y
            if kind == "aux mixups":
                a, b = classwise(aux, aux_y, rec_y, rng), classwise(aux, aux_y, rec_y, rng)
                lam = rng.uniform(0.3, 0.7, (len(a), 1, 1, 1))
                return (lam * a + (1 - lam) * b).round().astype(np.uint8), rec_y
            if kind == "uniform noise":
                return rng.integers(0, 256, tar.shape, dtype=np.uint8), rec_y
            if kind == "members' public neighbours":
                pick = neighbours[np.arange(n), rng.integers(0, 3, n)]
                return public[pick], tar_y
            if kind == "mixups of members' two nearest neighbours":
                lam = rng.uniform(0.3, 0.7, (n, 1, 1, 1))
                return (lam * public[neighbours[:, 0]] + (1 - lam) * public[neighbours[:, 1]]).round().astype(np.uint8), tar_y
            raise ValueError(kind)

        kinds = ["aux images", "class means + noise", "aux mixups", "uniform noise", "members' public neighbours"]
        print(f"\n## {track_id}: |D_tar| = {n}, pool per class = members + holdout, public images {len(public):,}; "
              f"nn(x) of the {2 * n} pool items: {t_nn:.1f} CPU s; median nn {np.median(np.r_[nn_t, nn_h]):.0f} grey levels")
        print("\n| knowledge-only output | entries | \"recovers\" fired | recovered members / holdout items per entry (mean) "
              "| smallest rel(x) of a member | \"extracts\" fired |")
        print("|---|---|---|---|---|---|")
        kept: dict[str, list] = {}
        total = fired_all = 0
        for kind in kinds + ["mixups of members' two nearest neighbours"]:
            fired = ext = 0
            km, kh, smallest = [], [], np.inf
            kept[kind] = []
            for _ in range(ENTRIES):
                rec, rec_y = knowledge(kind)
                r = count(rec, rec_y)
                kept[kind].append(r.groups)
                fired += r.recovers
                km.append(r.members)
                kh.append(r.holdout)
                smallest = min(smallest, min(float(g.relative[g.members].min()) for g in r.groups if g.members.any()))
                ext += image_extraction(rec, rec_y, tar, tar_y, hold, hold_y, cal.threshold, cal.pair_rate).extracts
            if kind in kinds:
                total += ENTRIES
                fired_all += fired
            label = kind if kind in kinds else f"{kind} (uses the membership; not knowledge-only)"
            print(f"| {label} | {ENTRIES} | {fired} ({fired / ENTRIES:.2f}) | {np.mean(km):.2f} / {np.mean(kh):.2f} | "
                  f"{smallest:.3f} | {ext} |")
        print(f"\nknowledge-only: \"recovers\" fired in {fired_all} of {total} entries "
              f"({fired_all / total:.3f}; held to ALPHA = {ALPHA:g})")

        # detection
        ssim = SSIMKernel(tuple(tar.shape[1:]))
        transforms = {f"noise sigma {sg}": (lambda x, sg=sg: noisy(x, sg, rng)) for sg in SIGMAS}
        transforms |= {"3x3 blur": blur, "1-pixel shift": shift, "2-pixel shift": shift2}
        print("\n| copies of members | mean SSIM to the member | "
              + " | ".join(f"{c} copied: credited / recovers / extracts" for c in COPIES) + " |")
        print("|---|---|" + "---|" * len(COPIES))
        copies_kept: dict[str, list] = {}
        for name, fn in transforms.items():
            sample = fn(tar)
            mean_ssim = float(np.diag(kernel_matrix(ssim, torch.from_numpy(sample), torch.from_numpy(tar), "cpu")).mean())
            cells = []
            for c in COPIES:
                credited = fired = ext = 0
                for _ in range(REPLICATES):
                    chosen = rng.choice(n, c, replace=False)
                    rec_y = rng.permutation(tar_y)
                    rec = classwise(aux, aux_y, rec_y, rng)
                    rec[:c], rec_y[:c] = fn(tar[chosen]), tar_y[chosen]
                    r = count(rec, rec_y)
                    if c == COPIES[-1]:
                        copies_kept.setdefault(name, []).append((r.groups, chosen))
                    hit = {(g.key, int(i)) for g in r.groups for i in g.index[(g.relative < TAU) & g.members]}
                    credited += sum((str(int(tar_y[i])), int(i)) in hit for i in chosen)
                    fired += r.recovers
                    ext += image_extraction(rec, rec_y, tar, tar_y, hold, hold_y, cal.threshold, cal.pair_rate).extracts
                cells.append(f"{credited / (c * REPLICATES):.2f} / {fired / REPLICATES:.2f} / {ext / REPLICATES:.2f}")
            print(f"| {name} | {mean_ssim:.3f} | " + " | ".join(cells) + " |")
        print(f"\n({REPLICATES} replicates per cell; credited: share of the copied members with rel < {TAU:g}; "
              "recovers / extracts: share of the entries where the verdict fires)")

        # TAU
        print("\n| TAU | knowledge-only \"recovers\" fired | look-alikes credited (members' public neighbours) | "
              + " | ".join(f"{name}: recovers at {COPIES[-1]} copies" for name in transforms) + " |")
        print("|---|---|---|" + "---|" * len(transforms))
        for tau in TAUS:
            ko = sum(recovery_count(g, tau).recovers for k in kinds for g in kept[k])
            look = np.mean([recovery_count(g, tau).members for g in kept["members' public neighbours"]])
            det = [np.mean([recovery_count(g, tau).recovers for g, _ in copies_kept[name]]) for name in transforms]
            print(f"| {tau:g} | {ko} of {total} | {look:.2f} per entry | " + " | ".join(f"{x:.2f}" for x in det) + " |")
        print(f"\n{track_id}: {time.process_time() - t0:.1f} CPU s")
    print(f"\ntotal: {time.process_time() - started:.1f} CPU s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
