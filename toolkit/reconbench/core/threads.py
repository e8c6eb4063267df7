"""How many threads torch uses, and running it single-threaded for a while.

The policy (docs/performance.md): one number, the evaluator's, for every process of a run.
- `recon-submit evaluate --threads N` (or RECONBENCH_THREADS=N) sets it; otherwise it is torch's own
  default (OMP_NUM_THREADS when set, else the physical cores) capped at the CPUs this process may
  run on (its affinity: a container's or a batch scheduler's share of a shared machine).
- The attack's process gets the same number (isolation/parent.py passes it, and says it to OpenMP
  and loky through the environment), so an evaluation never runs more threads than it was given.
- Validation and reproduction's re-scoring run one thread (one_torch_thread): many small tensor
  ops, where a second thread only adds synchronisation; CI runs many such jobs side by side.
Why it matters: on a 2-core machine shared with other jobs, a DeepInversion step at 2 torch
threads cost 15x one at 1 thread (796 vs 52 ms, issue 26): the threads wait for cores.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import torch

THREADS_ENV = "RECONBENCH_THREADS"


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def default_threads() -> int:
    """RECONBENCH_THREADS if set, else torch's default capped at the CPUs this process may use."""
    value = os.environ.get(THREADS_ENV, "").strip()
    if value:
        try:
            n = int(value)
        except ValueError:
            raise ValueError(f"{THREADS_ENV}={value!r}: expected a positive integer") from None
        if n < 1:
            raise ValueError(f"{THREADS_ENV}={value!r}: expected a positive integer")
        return n
    return max(1, min(torch.get_num_threads(), available_cpus()))


def set_threads(threads: int | None = None) -> int:
    """Apply the policy (an explicit count, else default_threads()) to this process; returns it."""
    if threads is not None and threads < 1:
        raise ValueError(f"--threads {threads}: expected a positive integer")
    n = threads or default_threads()
    torch.set_num_threads(n)
    return n


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """One intra-op thread inside the block. Two uses: many small tensor ops (metric tests, the
    leaderboard's gallery, validation), where the thread pool's synchronisation costs more than it
    gains on a busy 2-core runner (measured ~2x); and training that must sum in one fixed order, so a
    rebuild writes the same bytes."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
