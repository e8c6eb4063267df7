"""The near-copy structure space (submissions/nearcopy.py): the toolkit's features against the
torch.median formulation they replaced, on a public pool of a Fashion-MNIST track.

    .venv/bin/python benchmarks/bench_nearcopy_features.py [--track fashion-n1000] [--repeat 2]

Both compute the nine shifted feature sets a public Space holds; the script checks they are equal
bit for bit, then prints CPU seconds (one torch thread, best of --repeat) and the ratio.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "toolkit"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from reconbench.submissions.nearcopy import SHIFTS, _binomial, structure_features  # noqa: E402
from reconbench.image.track_files import public_pool  # noqa: E402
from reconbench.core.tracks import get_track  # noqa: E402


def reference(images: np.ndarray, shift: tuple[int, int]) -> torch.Tensor:
    """The formulation before: torch.median over every pixel's unfolded 3x3 patch, in float64."""
    x = torch.from_numpy(np.ascontiguousarray(images)).double() / 255.0
    if shift != (0, 0):
        x = torch.roll(x, shifts=shift, dims=(2, 3))
    c = x.shape[1]
    patches = F.pad(x, (1, 1, 1, 1), mode="replicate").unfold(2, 3, 1).unfold(3, 3, 1)
    x = patches.reshape(*patches.shape[:4], 9).median(-1).values
    y = F.conv2d(F.pad(x, (1, 1, 1, 1), mode="replicate"), _binomial(c), groups=c).flatten(1)
    y = y - y.mean(1, keepdim=True)
    return y / y.norm(dim=1, keepdim=True).clamp_min(1e-12)


def cpu(fn) -> tuple[float, list[torch.Tensor]]:
    t0 = time.process_time()
    out = [fn(s) for s in SHIFTS]
    return time.process_time() - t0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--track", default="fashion-n1000")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    pool = public_pool(get_track(args.track))
    ref_s, new_s = [], []
    for _ in range(args.repeat):  # alternated, so that load changes hit both
        t, ref = cpu(lambda s: reference(pool, s))
        ref_s.append(t)
        t, new = cpu(lambda s: structure_features(pool, s))
        new_s.append(t)
        assert all(torch.equal(a, b) for a, b in zip(ref, new)), "features differ from the reference"
        del ref, new
    print(f"{args.track}: public pool {pool.shape[0]:,} images {tuple(pool.shape[1:])}, nine shifts, "
          f"load {os.getloadavg()[0]:.1f}; features bit-identical")
    print("| formulation | CPU s (best) | ratio |")
    print("|---|---|---|")
    print(f"| torch.median over unfolded patches (reference) | {min(ref_s):.1f} | 1.00 |")
    print(f"| sorting network on grey levels (toolkit) | {min(new_s):.1f} | {min(new_s) / min(ref_s):.2f} |")


if __name__ == "__main__":
    main()
