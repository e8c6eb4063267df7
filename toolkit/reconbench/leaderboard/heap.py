"""Hand freed memory back to the system between the site build's stages.

glibc keeps freed blocks below its (dynamic, up to 32 MB) mmap threshold in the process's heap, so
the arrays of one track's scoring stay resident while the next track's are made: the build's peak
then grows with the number of tracks. malloc_trim(0) returns them (issue 37: the real board's build
under 2 GB). Elsewhere (macOS, musl) there is nothing to call and nothing is done.
"""

from __future__ import annotations

import ctypes
import gc


def trim(freeze: bool = False) -> None:
    """Collect cyclic garbage and return freed heap to the system. `freeze`: then move every object
    still alive to the collector's permanent generation (gc.freeze), so the later trims scan only what
    was made after it: a full collection over the build's millions of objects (torch, transformers,
    the validation reports) cost ~0.4 CPU-s a call, 35 calls a build (cProfile of the real board's build)."""
    gc.collect()
    if freeze:
        gc.freeze()
    release()


def release() -> None:
    """malloc_trim alone (no collection: cheap enough to call between two tracks' validation)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
MMAP_FROM = 4 << 20  # bytes: blocks this large get pages of their own, returned to the system when freed


def large_blocks_unmapped() -> None:
    """Fix glibc's mmap threshold at MMAP_FROM: by default it rises (up to 32 MB) each time a mapped
    block is freed, after which the scoring's large temporaries (SSIM and distance blocks, feature
    batches) come from the heap and stay resident after they are freed, track after track (issue 37:
    the real board's build peaked above 2 GB). Elsewhere (macOS, musl) nothing is done."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_FROM)
        libc.mallopt(M_TRIM_THRESHOLD, MMAP_FROM)
    except (OSError, AttributeError):
        pass
