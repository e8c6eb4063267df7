"""Helpers shared by the metric benchmarks: timing, peak-memory measurement, the data."""

from __future__ import annotations

import ctypes
import os
import sys
import time
from contextlib import contextmanager

import numpy as np


def timed(fn, *args, repeat: int = 1, **kwargs):
    """(result of the last call, best wall time over `repeat` calls, in seconds)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        best = min(best, time.perf_counter() - t0)
    return out, best


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    raise RuntimeError(field)


@contextmanager
def peak_rss():
    """Peak resident memory above the level at entry (bytes), via Linux's resettable VmHWM.

    Yields a dict; after the block, d["peak_extra"] = max RSS during the block - RSS at entry.
    """
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # hand freed heap back, so the base is not inflated
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the high-water mark to the current RSS
    base = _status_kb("VmRSS")
    out: dict[str, int] = {}
    yield out
    out["peak_extra"] = (_status_kb("VmHWM") - base) * 1024


def same_class_pairs(rec_labels: np.ndarray, tar_labels: np.ndarray) -> int:
    classes, counts = np.unique(tar_labels, return_counts=True)
    per = dict(zip(classes.tolist(), counts.tolist()))
    return int(sum(per.get(c, 0) for c in rec_labels.tolist()))


def mb(nbytes: float) -> str:
    return f"{nbytes / 2**20:,.0f} MiB"


def load() -> str:
    """The machine's 1-minute load average and core count: timings are shared-machine timings."""
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def exact_rss_accounting() -> None:
    """Re-exec with a fixed glibc mmap threshold, so freed large buffers leave the RSS at once.

    By default glibc raises its mmap threshold after large frees and then keeps later buffers
    in the heap, where freed memory stays resident: peaks measured later in the run would
    include memory the engine no longer holds.
    """
    if os.environ.get("MALLOC_MMAP_THRESHOLD_") is None:
        env = dict(os.environ, MALLOC_MMAP_THRESHOLD_=str(1 << 20))
        os.execve(sys.executable, [sys.executable, *sys.argv], env)
