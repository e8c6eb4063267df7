"""How many draws a sealed track needs (K): a knowledge-only reference's false-positive rate and the
power to see partial member recoveries, for K = 1, 2, 3, 5, 8, measured on fashion-n100-sealed's pool.

    nice -n 10 .venv/bin/python benchmarks/bench_sealed_draws.py [--draws 300] [--groups 2000]

R membership draws of the real pool (200 images, 20 per class) come from a throwaway key
(core/seal.draw_members, draws 0..R-1). For each draw, three kinds of reconstructions (n = 100, 10 per class):
  reference   100 aux images drawn at random per draw (knowledge-only: they cannot know the members)
  blend m     m of them replaced by 50/50 blends of a member of the draw with an aux image of its class
              (an attack that half-recovers m members; m = 5, 10, 20)
Per draw and set, the MSE, PSNR and SSIM gaps' permutation p (core/membership.py, 2000 permutations,
scores from the metrics' own kernels). For each K, `--groups` random groups of K distinct draws give
the across-draw verdict (core/draws.py: Fisher's combination per metric, Bonferroni over the three at
alpha = 0.01): its rate on the reference is the false-positive rate, on the blends the power. The
gap's p does not depend on the model, only on the reconstructions and the membership, so no model is
trained here; what a trained model adds is which members an attack recovers, which the blends stand for.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import torch

from reconbench.core.draws import across_draws, verdict
from reconbench.core.membership import ALPHA, Group, membership_gap
from reconbench.core.seal import draw_members, new_key
from reconbench.image.data.fashion_splits import fashion_splits, sealed_pool
from reconbench.image.metrics.leakage import kernel_matrix
from reconbench.image.metrics.pixel import MSEKernel, psnr_from_mse
from reconbench.image.metrics.ssim import SSIMKernel

KS = (1, 2, 3, 5, 8)
BLENDS = (5, 10, 20)
AUX_PER_CLASS = 100
N = 100
SHAPE = (1, 32, 32)


def arg(name: str, default: int) -> int:
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def main() -> None:
    draws, groups = arg("--draws", 300), arg("--groups", 2000)
    started = time.process_time()
    pool = sealed_pool("fashion-mnist", 100)
    aux = fashion_splits("fashion-mnist", 100).aux_same
    aux_idx = np.concatenate([np.flatnonzero(aux.labels == c)[:AUX_PER_CLASS] for c in range(10)])
    aux_img, aux_y = aux.images[aux_idx], aux.labels[aux_idx]
    # blend i: pool item i with the first aux image of its class (uint8, as a result file holds it)
    first = {c: aux_img[np.flatnonzero(aux_y == c)[0]].astype(np.float64) for c in range(10)}
    blend = np.stack([np.rint((pool.images[i].astype(np.float64) + first[int(pool.labels[i])]) / 2) for i in range(len(pool))])
    blend = blend.astype(np.uint8)
    candidates = torch.from_numpy(np.concatenate([aux_img, blend]))
    cand_y = np.concatenate([aux_y, pool.labels])
    pool_t = torch.from_numpy(pool.images)
    mse = kernel_matrix(MSEKernel(SHAPE), candidates, pool_t, "cpu")
    matrices = {"mse": (mse, False), "psnr": (psnr_from_mse(mse), True),
                "ssim": (kernel_matrix(SSIMKernel(SHAPE), candidates, pool_t, "cpu"), True)}
    print(f"kernels: {len(candidates)} candidates x {len(pool)} pool items, {time.process_time() - started:.0f} CPU s",
          flush=True)
    key, rng = bytes.fromhex(new_key()), np.random.default_rng(0)
    settings = ("reference", *(f"blend {m}" for m in BLENDS))
    p = {s: {m: np.zeros(draws) for m in matrices} for s in settings}
    gap = {s: {m: np.zeros(draws) for m in matrices} for s in settings}
    for d in range(draws):
        members = draw_members(key, "fashion-n100-sealed", d, pool.labels)
        base = np.concatenate([rng.choice(np.flatnonzero(aux_y == c), N // 10, replace=False) for c in range(10)])
        for s in settings:
            rows = base.copy()
            if s != "reference":
                m = int(s.split()[1])
                chosen = rng.choice(np.flatnonzero(members), m, replace=False)
                rows[rng.choice(N, m, replace=False)] = len(aux_img) + chosen  # replace m reference rows by blends
            for name, (matrix, larger) in matrices.items():
                found = []
                for c in range(10):
                    r = rows[cand_y[rows] == c]
                    cols = np.flatnonzero(pool.labels == c)
                    found.append(Group.from_matrix(str(c), matrix[np.ix_(r, cols)], members[cols], larger))
                g = membership_gap(found, larger, n_total=N)
                p[s][name][d], gap[s][name][d] = g.p, g.gap
        if d % 50 == 49:
            print(f"  {d + 1} draws, {time.process_time() - started:.0f} CPU s", flush=True)
    print(f"\nper-draw p (one draw, no combination): share < {ALPHA} per metric")
    for s in settings:
        print(f"  {s:10s} " + "  ".join(f"{m} {np.mean(p[s][m] < ALPHA):.3f}" for m in matrices))
    print(f"\nacross-draw verdict (Fisher per metric, Bonferroni over {len(matrices)}): share of {groups} groups of K "
          f"distinct draws out of {draws} called 'leaks'")
    print("| K | " + " | ".join(settings) + " |")
    print("|---|" + "---|" * len(settings))
    for k in KS:
        picks = [rng.choice(draws, k, replace=False) for _ in range(groups)]
        rates = []
        for s in settings:
            calls = [verdict({m: across_draws(list(gap[s][m][i]), list(p[s][m][i])) for m in matrices}) for i in picks]
            rates.append(float(np.mean(calls)))
        print(f"| {k} | " + " | ".join(f"{r:.3f}" for r in rates) + " |", flush=True)
    print(f"\ntotal {time.process_time() - started:.0f} CPU s")


if __name__ == "__main__":
    main()
