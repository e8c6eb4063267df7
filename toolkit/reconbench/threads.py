"""Running torch single-threaded for a while, then restoring its thread count."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """One intra-op thread inside the block. Two uses: many small tensor ops (metric tests, the
    leaderboard's gallery), where the thread pool's synchronisation costs more than it gains on a
    busy 2-core runner (measured ~2x); and training that must sum in one fixed order, so a rebuild
    writes the same bytes."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
