"""Scaling of the pairwise engine: time ~ N*M and flat peak memory.

    .venv/bin/python benchmarks/bench_metrics_scaling.py [--sizes 1000 2000 4000] [--big 20000]

Part 1: N = M in --sizes, 32x32x3 photo patches, 10 classes (then one class, the worst case):
engine time split into the per-pair blocks (constant per pair if time ~ N*M) and the
per-image states (network forwards for LPIPS), and the peak resident memory above the level
before the call (Linux VmHWM, reset before each measurement). With the default budget the
peak follows the largest class until the state budget is reached; the run with a small state
budget (--flat-state-mib) shows the plateau.

Part 2: N = M = --big images of 64x64x3 with 10 classes (the pairwise.py docstring example).
Inputs are random uint8 (content changes neither time nor memory). MSE runs to the end; SSIM
stops after --big-blocks blocks and LPIPS after 2 (of ~1000x1000 pairs): by then the engine
holds its full-size super-chunk states and block temporaries, which it only reuses
afterwards, so the peak is the run's peak; their full-run time is extrapolated from the
measured time per pair and per prepared image (the output says so).
LPIPS uses stand-in AlexNet weights (speed and memory do not depend on the values).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch
from bench_metrics_util import exact_rss_accounting, load, mb, peak_rss, same_class_pairs

from reconbench.image.metrics.lpips_metric import LPIPSExtractor, LPIPSKernel, standin_alexnet_state_dict
from reconbench.image.metrics.pairwise import Budget, default_budget, nearest_same_class
from reconbench.image.metrics.pixel import MSEKernel
from reconbench.image.metrics.ssim import SSIMKernel
from reconbench.image.metrics.testdata import perturb, photo_patches


class _Stop(Exception):
    pass


class Limited:
    """Wraps a kernel: times prepare() and block() apart, stops after `max_blocks` blocks."""

    def __init__(self, kernel, max_blocks=None):
        self.k, self.max_blocks = kernel, max_blocks
        self.blocks = self.pairs = self.images = 0
        self.t_block = self.t_prepare = 0.0
        self.larger_is_better, self.worst = kernel.larger_is_better, kernel.worst
        self.state_bytes, self.pair_bytes = kernel.state_bytes, kernel.pair_bytes

    def prepare(self, images):
        t0 = time.perf_counter()
        out = self.k.prepare(images)
        self.t_prepare += time.perf_counter() - t0
        self.images += images.shape[0]
        return out

    def block(self, rec, tar):
        if self.max_blocks is not None and self.blocks >= self.max_blocks:
            raise _Stop
        t0 = time.perf_counter()
        out = self.k.block(rec, tar)
        self.t_block += time.perf_counter() - t0
        self.blocks += 1
        self.pairs += out.numel()
        return out


def measure(kernel, rec, ry, tar, ty, max_blocks=None, budget=None):
    lim = Limited(kernel, max_blocks)
    args = [torch.from_numpy(a) for a in (rec, ry, tar, ty)]
    with peak_rss() as mem:
        t0 = time.perf_counter()
        try:
            nearest_same_class(lim, *args, budget=budget)
        except _Stop:
            pass
        lim.elapsed = time.perf_counter() - t0
    lim.peak = mem["peak_extra"]
    return lim


def prepared_images(kernel, labels, budget):
    """Images the engine prepares in a full run (targets once, reconstructions per target super-chunk)."""
    per_side = max(1, budget.state_bytes // 2 // kernel.state_bytes())
    _, counts = np.unique(labels, return_counts=True)
    return int(sum(c + -(-c // per_side) * c for c in counts))


def kernels(shape, lpips_state):
    return {"mse": MSEKernel(shape), "ssim": SSIMKernel(shape), "lpips": LPIPSKernel(LPIPSExtractor(lpips_state), shape)}


def part1(sizes, lpips_state, one_class_max, budget=None, classes_list=(10, 1)):
    b = budget or default_budget("cpu")
    print(f"\n## 32x32x3 photo patches; budget: states {mb(b.state_bytes)}, blocks {mb(b.block_bytes)}")
    print("block = the N*M part (should be constant per pair); prepare = the per-image part (N + M images)")
    pool, _ = photo_patches(1000, 32, seed=0)
    print(f"{'classes':>7} {'N=M':>6} {'metric':6} {'pairs':>11} {'total s':>8} {'block us/pair':>14} "
          f"{'prepare ms/img':>15} {'peak extra':>11}")
    for classes in classes_list:
        for n in sizes:
            if classes == 1 and n > one_class_max:
                continue
            reps = -(-n // len(pool))
            tar = perturb(np.concatenate([pool] * reps)[:n], 8.0, seed=1)  # distinct images
            rec = perturb(np.concatenate([pool[::-1]] * reps)[:n], 25.0, seed=2)
            labels = np.arange(n, dtype=np.int64) % classes
            pairs = same_class_pairs(labels, labels)
            for name, kernel in kernels(tar.shape[1:], lpips_state).items():
                run = measure(kernel, rec, labels, tar, labels, budget=budget)
                print(f"{classes:7d} {n:6d} {name:6} {pairs:11,d} {run.elapsed:8.2f} {run.t_block / pairs * 1e6:14.2f} "
                      f"{run.t_prepare / run.images * 1e3:15.3f} {mb(run.peak):>11}")


def part2(n, lpips_state, max_blocks):
    budget = default_budget("cpu")
    print(f"\n## N = M = {n:,}, 64x64x3, 10 classes; budget: states {mb(budget.state_bytes)}, blocks {mb(budget.block_bytes)}")
    rng = np.random.default_rng(0)
    rec = rng.integers(0, 256, (n, 3, 64, 64), dtype=np.uint8)
    tar = rng.integers(0, 256, (n, 3, 64, 64), dtype=np.uint8)
    labels = np.arange(n, dtype=np.int64) % 10
    pairs = same_class_pairs(labels, labels)
    print(f"inputs (uint8, owned by the caller): {mb(rec.nbytes + tar.nbytes)}; same-class pairs: {pairs:,}")
    for name, kernel in kernels((3, 64, 64), lpips_state).items():
        print(f"  {name}: state {kernel.state_bytes() / 1e3:,.0f} kB/image, temporaries {kernel.pair_bytes() / 1e3:,.1f} kB/pair")
        limit = {"mse": None, "ssim": max_blocks, "lpips": 2}[name]
        run = measure(kernel, rec, labels, tar, labels, limit)
        if run.pairs == pairs:
            what = f"full run {run.elapsed:.1f} s"
        else:
            full_images = prepared_images(kernel, labels, budget)
            estimate = run.t_block / run.pairs * pairs + run.t_prepare / run.images * full_images
            what = (f"stopped after {run.blocks} blocks ({run.pairs:,} pairs, {run.t_block:.1f} s in blocks, "
                    f"{run.images:,} images prepared in {run.t_prepare:.1f} s); full run extrapolated ~{estimate / 60:.0f} min")
        print(f"  {name}: peak above inputs {mb(run.peak)}; {what}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000])
    p.add_argument("--one-class-max", type=int, default=2000, help="largest N for the one-class worst case")
    p.add_argument("--big", type=int, default=20000)
    p.add_argument("--big-blocks", type=int, default=200)
    p.add_argument("--flat-state-mib", type=int, default=16, help="small state budget for the flat-memory run (0: skip)")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    exact_rss_accounting()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), device cpu; {load()}")
    state = standin_alexnet_state_dict(0)
    part1(args.sizes, state, args.one_class_max)
    if args.flat_state_mib:
        print("\n## the same with a small state budget: once a class outgrows it, the peak stops growing")
        part1(args.sizes, state, 0, Budget(args.flat_state_mib * 2**20, 8 * 2**20), classes_list=(10,))
    if args.big:
        part2(args.big, state, args.big_blocks)
    print(f"\n{load()}")


if __name__ == "__main__":
    sys.exit(main())
