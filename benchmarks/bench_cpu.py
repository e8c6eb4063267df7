"""CPU time of a benchmark's child processes, the sandboxed attack's interpreter included.

getrusage(RUSAGE_CHILDREN) counts a descendant's CPU only when its parent waits for it and is
itself waited for. bubblewrap with --unshare-pid (every evaluation on Linux) exits without waiting
for its namespace's init, which is then reparented to the system's init: the attack's CPU never
reaches the benchmark (measured with bubblewrap 0.8.0: 0.1 of 1.0 CPU-s counted). A child
subreaper adopts such orphans instead; reap_orphans() waits for them, which adds their CPU (and
their children's) to this process's RUSAGE_CHILDREN.
"""

from __future__ import annotations

import ctypes
import os
import resource

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def adopt_orphans() -> None:
    """Make this process the subreaper of its descendants (Linux only: the sandbox is Linux only)."""
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def reap_orphans() -> None:
    """Wait for every child left (adopted orphans: call it when no child of this process's own runs)."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def children_cpu() -> float:
    """User + system CPU seconds of the children waited for so far (reap_orphans first)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
