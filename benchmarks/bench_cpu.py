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


def _proc_cpu(pid: int) -> tuple[int, float, bool] | None:
    """(parent pid, user + system CPU seconds so far, still running: not a zombie) of a process, from
    /proc/<pid>/stat."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), fields[0] != b"Z"


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return "?"


def run_tree(argv: list[str], interval: float = 0.1, by_process: dict | None = None, **popen) -> tuple[float, float]:
    """Run a command to its end; (wall s, CPU s of it and every descendant). The CPU is the larger of
    two counts: getrusage's (adopted orphans reaped), and the sum over the processes of the tree of
    their last /proc sample (taken every `interval` s; `by_process`, if given, gets pid -> (command line,
    that sample) for each process of the tree; a process that is killed before its parent
    waits for it can vanish from getrusage's count, e.g. bubblewrap's init killed after the exit
    grace, with the attack's interpreter in it)."""
    import subprocess
    import time

    before = children_cpu()
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, **popen)
    seen: dict[int, float] = {}
    while True:
        done = proc.poll() is not None
        table = {}
        for entry in os.scandir("/proc"):
            if entry.name.isdigit() and (got := _proc_cpu(int(entry.name))) is not None:
                table[int(entry.name)] = got
        grew = True
        while grew:  # the tree: the command and whatever descends from a process already seen
            grew = False
            for pid, (ppid, cpu, _) in table.items():
                if pid == proc.pid or pid in seen or ppid in seen:
                    grew = grew or pid not in seen
                    seen[pid] = max(seen.get(pid, 0.0), cpu)
                    if by_process is not None:
                        by_process[pid] = (by_process.get(pid, (None,))[0] or _cmdline(pid), seen[pid])
        if done and not any(table[pid][2] for pid in seen if pid != proc.pid and pid in table):
            break
        time.sleep(interval)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, argv)
    reap_orphans()
    wall = time.perf_counter() - t0
    return wall, max(children_cpu() - before, sum(seen.values()))


def byte_compile(folder) -> None:
    """Byte-compile a source tree, as a first run leaves it (Python writes __pycache__ as it imports):
    a timing then measures every later run, even in a shell with PYTHONDONTWRITEBYTECODE=1, where each
    command would otherwise compile the toolkit's modules from source (the attack's process never
    writes bytecode, isolation.parent; it reads what is there)."""
    import compileall

    compileall.compile_dir(str(folder), quiet=1)
