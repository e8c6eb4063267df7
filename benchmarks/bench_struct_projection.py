"""The public pool's projected structure vectors (submissions/publicspace._struct_projection, issue 37):
structure_features at each of the nine shifts (the definition; in the code's batches before, 2,048
images, and in its batches now) against shiftfeatures.shifted_features (filters once per image with
wrap padding, rolled; the borders recomputed), on a track's whole pool.

    .venv/bin/python benchmarks/bench_struct_projection.py [--track fashion-n100] [--repeat 2]

Each is projected on the 16 DCT axes as _struct_projection does, the toolkit's from an empty memo;
the script checks they are equal bit for bit, then prints CPU seconds (process time, one torch
thread, best of --repeat, the two alternated) and the ratio.
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

from reconbench.core.tracks import get_track  # noqa: E402
from reconbench.image.track_files import public_pool  # noqa: E402
from reconbench.submissions import publicspace  # noqa: E402
from reconbench.submissions.nearcopy import SHIFTS, structure_features  # noqa: E402
from reconbench.submissions.nearindex import dct_projection  # noqa: E402
from reconbench.submissions.shiftfeatures import exact  # noqa: E402


def definition(images: np.ndarray, batch: int) -> np.ndarray:
    """_struct_projection's definition (and its code before, in batches of 2,048): structure_features
    per shift, projected."""
    p = dct_projection(tuple(images.shape[1:]), publicspace.DIMS)
    return np.concatenate([np.stack([structure_features(images[lo:lo + batch], s).numpy() @ p.T for s in SHIFTS],
                                    axis=1) for lo in range(0, len(images), batch)])


def toolkit(images: np.ndarray) -> np.ndarray:
    publicspace._MEMO.clear()
    return publicspace._struct_projection(images)


def cpu(fn, images: np.ndarray) -> tuple[float, np.ndarray]:
    t0 = time.process_time()
    out = fn(images)
    return time.process_time() - t0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--track", default="fashion-n100")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    pool = public_pool(get_track(args.track))
    fast = exact(tuple(pool.shape[1:]))  # the probe, outside the timings (once per shape and process)
    ways = {"structure_features per shift, batches of 2,048 (before)": lambda x: definition(x, 2048),
            f"structure_features per shift, batches of {publicspace.PROJECTION_BATCH}":
                lambda x: definition(x, publicspace.PROJECTION_BATCH),
            f"shifted_features (wrap filters rolled, borders recomputed), batches of {publicspace.PROJECTION_BATCH} "
            "(toolkit)": toolkit}
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.repeat):  # alternated, so that load changes hit all
        outs = []
        for name, fn in ways.items():
            t, out = cpu(fn, pool)
            times[name].append(t)
            outs.append(out)
        assert all(np.array_equal(outs[0], o) for o in outs[1:]), "projections differ from the definition"
        del outs
    print(f"{args.track}: public pool {pool.shape[0]:,} images {tuple(pool.shape[1:])}, nine shifts, "
          f"fast path {'on' if fast else 'off (probe mismatch)'}, load {os.getloadavg()[0]:.1f}; "
          "projections bit-identical")
    print("| _struct_projection | CPU s (best) | ratio |")
    print("|---|---|---|")
    before = min(next(iter(times.values())))
    for name, t in times.items():
        print(f"| {name} | {min(t):.2f} | {min(t) / before:.2f} |")


if __name__ == "__main__":
    main()
