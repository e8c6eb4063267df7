"""Resource limits on the attack's process tree (issue 36): memory, tasks (pids), CPU time, wall time,
and the sizes of its two writable tmpfs (/tmp and /dev/shm).

The defaults come from the budget preset the run uses (`for_budget`); a contributor's run that needs
more (a GPU run of a `paper` preset) raises them with `evaluate --limit NAME=VALUE`, and the result
records every value that applied (provenance.limits, `Limits.record`).

How each is enforced, from the strongest means the machine offers (docs/sandbox.md has the table):
- memory and tasks: a cgroup of the attack's own (cgroup v1 where the memory and pids hierarchies
  are writable, e.g. as root; cgroup v2 where this process's cgroup already enables both for its
  children), which counts the whole tree, tmpfs pages included; and always, per process,
  RLIMIT_DATA (private writable memory: what malloc, numpy and torch allocate), and RLIMIT_NPROC set
  by the attack's process inside the sandbox: it counts the processes of one user in one user
  namespace (Linux 5.14+), so there it is a per-run limit, but the kernel exempts uid 0 (a root
  evaluator): then the cgroup, or else the evaluator's own count (`Monitor`), ends the run.
- CPU time: RLIMIT_CPU per process, and the evaluator's sum over the tree (`Monitor`).
- wall time: the evaluator's clock.
- tmpfs: bubblewrap's `--size` on /tmp and /dev/shm (the rest of /dev is read-only).
Each one, when hit, ends the run with one line naming it (`LimitExceeded`); the evaluator goes on.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import time
import uuid
from dataclasses import asdict, dataclass, replace
from pathlib import Path

GiB, MiB = 1 << 30, 1 << 20
UNITS = {"": 1, "k": 1 << 10, "kib": 1 << 10, "m": MiB, "mib": MiB, "g": GiB, "gib": GiB, "t": 1 << 40, "tib": 1 << 40}
TIME_UNITS = {"": 1, "s": 1, "m": 60, "min": 60, "h": 3600}
SIZE_FIELDS = ("memory", "tmp", "shm")
TIME_FIELDS = ("cpu", "wall")
CGROUP_ROOT = Path("/sys/fs/cgroup")
PREFIX = "reconbench-attack-"  # then the evaluator's pid and a random part
# (file, counter, limit): an OOM kill in the cgroup (v2, v1), a fork refused by pids.max
EVENTS = (("memory.events", "oom_kill", "memory"), ("memory.oom_control", "oom_kill", "memory"), ("pids.events", "max", "pids"))


class LimitError(ValueError):
    """A bad --limit value."""


class LimitExceeded(RuntimeError):
    """The attack's run hit one of its limits (the message is the one line the user sees)."""


@dataclass(frozen=True)
class Limits:
    memory: int  # bytes, the whole tree (cgroup) and each process (RLIMIT_DATA)
    pids: int  # tasks (processes and threads) at once
    cpu: int  # CPU seconds, the whole tree
    wall: int  # seconds
    tmp: int  # bytes of /tmp
    shm: int  # bytes of /dev/shm

    def raised(self, overrides: dict[str, str]) -> Limits:
        """These limits with `name=value` overrides (only upwards: a run may not claim lower ones)."""
        changes = {}
        for name, text in overrides.items():
            if name not in asdict(self):
                raise LimitError(f"--limit {name}={text}: unknown limit (one of {', '.join(asdict(self))})")
            value = _parse(name, text)
            if value < getattr(self, name):
                raise LimitError(f"--limit {name}={text}: below the budget's {describe(name, getattr(self, name))}; "
                                 "limits can only be raised")
            changes[name] = value
        return replace(self, **changes)

    def record(self) -> str:
        """What provenance.limits records, e.g. 'memory=8GiB pids=1024 cpu=43200s wall=21600s tmp=2GiB shm=512MiB'."""
        return " ".join(f"{k}={describe(k, v)}" for k, v in asdict(self).items())


# Per budget preset: a quick run is a smoke test, a paper run may take a day on a large machine.
BUDGET_LIMITS = {
    "quick": Limits(memory=4 * GiB, pids=512, cpu=2 * 3600, wall=3600, tmp=1 * GiB, shm=256 * MiB),
    "default": Limits(memory=8 * GiB, pids=1024, cpu=12 * 3600, wall=6 * 3600, tmp=2 * GiB, shm=512 * MiB),
    "paper": Limits(memory=32 * GiB, pids=4096, cpu=96 * 3600, wall=48 * 3600, tmp=8 * GiB, shm=2 * GiB),
}


def for_budget(budget: str, overrides: dict[str, str] | None = None) -> Limits:
    base = BUDGET_LIMITS.get(budget, BUDGET_LIMITS["default"])
    return base.raised(overrides) if overrides else base


# The most a re-run takes from an entry's recorded limits: provenance.limits is the entry's own signed
# claim, so without a ceiling a forged "memory=999TiB pids=999999999 ..." would lift every limit on the
# reproducer's machine. Four times the paper preset's; an entry that records more is not re-run.
RERUN_CEILING = Limits(memory=128 * GiB, pids=16384, cpu=384 * 3600, wall=192 * 3600, tmp=32 * GiB, shm=8 * GiB)


def recorded_overrides(budget: str, recorded: str | None) -> dict[str, str] | None:
    """The raised limits a result records (provenance.limits), as overrides for its re-run: only the
    values above the budget's current defaults (a re-run never gets less than a fresh run). LimitError
    for a value above RERUN_CEILING."""
    if not recorded:
        return None
    base = BUDGET_LIMITS.get(budget, BUDGET_LIMITS["default"])
    out = {}
    for name, text in parse_overrides(recorded.split()).items():
        if name in asdict(base) and _parse(name, text) > getattr(base, name):
            if _parse(name, text) > getattr(RERUN_CEILING, name):
                raise LimitError(f"{name}={text} is above the {describe(name, getattr(RERUN_CEILING, name))} a re-run "
                                 "takes from an entry")
            out[name] = text
    return out or None


def parse_overrides(items: list[str]) -> dict[str, str]:
    """['memory=64GiB', 'wall=24h'] -> {'memory': '64GiB', 'wall': '24h'} (values checked by Limits.raised)."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise LimitError(f"--limit {item}: use NAME=VALUE (e.g. memory=64GiB, wall=24h)")
        out[name.strip()] = value.strip()
    return out


def _parse(name: str, text: str) -> int:
    found = re.fullmatch(r"(\d{1,15})\s*([a-zA-Z]*)", text.strip())
    units = UNITS if name in SIZE_FIELDS else TIME_UNITS if name in TIME_FIELDS else {"": 1}
    if not found or found.group(2).lower() not in units:
        raise LimitError(f"--limit {name}={text}: not a {'size' if name in SIZE_FIELDS else 'duration' if name in TIME_FIELDS else 'count'}"
                         f" (units: {', '.join(u for u in units if u) or 'none'})")
    return int(found.group(1)) * units[found.group(2).lower()]


def describe(name: str, value: int) -> str:
    if name in SIZE_FIELDS:
        for unit, size in (("GiB", GiB), ("MiB", MiB)):
            if value % size == 0:
                return f"{value // size}{unit}"
        return str(value)
    return f"{value}s" if name in TIME_FIELDS else str(value)


def line(name: str, limits: Limits, how: str = "") -> str:
    """The one line for a limit that was hit."""
    what = {"memory": "memory", "pids": "task (pids)", "cpu": "CPU-time", "wall": "wall-time", "tmp": "/tmp size",
            "shm": "/dev/shm size"}[name]
    return (f"the {what} limit of {describe(name, getattr(limits, name))} was hit{f' ({how})' if how else ''}; "
            f"the run was stopped (raise it with --limit {name}=VALUE where the budget needs more)")


def rlimits(limits: Limits) -> dict[int, int]:
    """The per-process limits every process of the attack inherits (set on bubblewrap before it starts).
    Not RLIMIT_NPROC: outside the sandbox's user namespace it counts all of the user's processes, so
    the attack's process sets it on itself, inside (`limit_tasks`)."""
    return {resource.RLIMIT_DATA: limits.memory, resource.RLIMIT_CPU: limits.cpu + 5, resource.RLIMIT_CORE: 0}


def apply_rlimits(values: dict[int, int]) -> None:
    for which, value in values.items():
        hard = resource.getrlimit(which)[1]
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))


def limit_tasks(pids: int) -> None:
    """In the attack's process, inside the sandbox's user namespace: RLIMIT_NPROC counts that
    namespace's processes of this uid only (Linux 5.14+), so it bounds the run's tasks; uid 0 is
    exempt (a root evaluator relies on the cgroup or the Monitor)."""
    with contextlib.suppress(OSError, ValueError):
        resource.setrlimit(resource.RLIMIT_NPROC, (pids, pids))


class Cgroup:
    """A cgroup of the attack's own with memory and pids limits, or nothing where none can be made."""

    def __init__(self, limits: Limits):
        self.kind = "none"
        self.paths: list[Path] = []
        name = f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
        with contextlib.suppress(OSError):
            if (CGROUP_ROOT / "cgroup.controllers").is_file():
                self._v2(name, limits)
            else:
                self._v1(name, limits)
        if self.kind == "none":
            self.remove()

    def _v2(self, name: str, limits: Limits) -> None:
        own = _own_cgroup("")
        if own is None:
            return
        # The leaf a process lives in cannot have controllers enabled below it (no internal processes
        # rule); a delegated cgroup (systemd-run --user --scope, a container's own) has them enabled.
        parent = CGROUP_ROOT / own.lstrip("/")
        enabled = (parent / "cgroup.subtree_control").read_text().split()
        if not {"memory", "pids"} <= set(enabled):
            return
        _sweep(parent)
        path = parent / name
        path.mkdir()
        self.paths = [path]
        (path / "memory.max").write_text(str(limits.memory))
        if (path / "memory.swap.max").exists():
            (path / "memory.swap.max").write_text("0")
        (path / "pids.max").write_text(str(limits.pids))
        self.kind = "cgroup2"

    def _v1(self, name: str, limits: Limits) -> None:
        made = []
        for controller, files in (("memory", {"memory.limit_in_bytes": limits.memory}), ("pids", {"pids.max": limits.pids})):
            own = _own_cgroup(controller)
            if own is None:
                return
            _sweep(CGROUP_ROOT / controller / own.lstrip("/"))
            path = CGROUP_ROOT / controller / own.lstrip("/") / name
            path.mkdir()
            made.append(path)
            self.paths = made
            for file, value in files.items():
                (path / file).write_text(str(value))
        self.kind = "cgroup1"

    def join(self) -> None:
        """In the child between fork and exec: move this process into the cgroup(s). A refusal (a v2
        hierarchy that does not let this process move) is not fatal: `verify` sees it afterwards."""
        for path in self.paths:
            try:
                fd = os.open(path / "cgroup.procs", os.O_WRONLY)
                try:
                    os.write(fd, b"0")
                finally:
                    os.close(fd)
            except OSError:
                return

    def verify(self, pid: int) -> None:
        """After the start: if the attack's first process is not in every cgroup, say there is none
        (the per-process limits and the Monitor's count still hold) rather than trust an empty one."""
        with contextlib.suppress(OSError):
            members = [(path / "cgroup.procs").read_text().split() for path in self.paths]
            if all(str(pid) in m for m in members):
                return
        self.remove()
        self.kind = "none"

    def hit(self) -> str | None:
        """'memory' or 'pids' when the kernel killed or refused a task of the tree for that limit, else None."""
        for path in self.paths:
            for file, key, what in EVENTS:
                with contextlib.suppress(OSError, ValueError):
                    counts = dict(ln.split()[:2] for ln in (path / file).read_text().splitlines() if ln.strip())
                    if int(counts.get(key, 0)) > 0:
                        return what
        return None

    def kill_all(self) -> None:
        """SIGKILL every task still in the cgroup (what escaped the tree: a double fork, setsid)."""
        import signal

        for path in self.paths:
            with contextlib.suppress(OSError):
                if (path / "cgroup.kill").exists():  # cgroup v2, Linux 5.14+
                    (path / "cgroup.kill").write_text("1")
                    continue
                for _ in range(3):  # v1: a task may fork while it is being killed
                    for pid in (path / "cgroup.procs").read_text().split():
                        with contextlib.suppress(OSError, ValueError):
                            os.kill(int(pid), signal.SIGKILL)

    def remove(self) -> None:
        """Once the tree is gone (its last tasks may take a moment to leave the cgroup after dying)."""
        for path in reversed(self.paths):
            for _ in range(100):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)
        self.paths = []


def _sweep(parent: Path) -> None:
    """Remove the empty cgroups of evaluators that died without removing theirs (killed, say)."""
    for path in parent.glob(PREFIX + "*"):
        pid = path.name[len(PREFIX):].split("-")[0]
        with contextlib.suppress(OSError):  # an hour old at least: never one being set up by another evaluator
            if pid.isdigit() and not Path(f"/proc/{pid}").exists() and time.time() - path.stat().st_mtime > 3600:
                path.rmdir()  # refused while a task is still in it


def _own_cgroup(controller: str) -> str | None:
    """This process's cgroup path in the hierarchy of `controller` ('' for cgroup v2)."""
    for entry in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = entry.split(":", 2)
        if (controller == "" and names == "") or controller in names.split(","):
            return path
    return None


def tree(pid: int) -> list[int]:
    """`pid` and all its descendants (Linux: /proc/PID/task/*/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{p}/task"):
                with contextlib.suppress(OSError):
                    todo += [int(c) for c in Path(f"/proc/{p}/task/{task}/children").read_text().split()]
    return out


def _usage(pids: list[int]) -> tuple[int, float]:
    """(tasks, CPU seconds) of these processes: threads counted, and the CPU of children they reaped."""
    tasks, ticks = 0, 0
    for p in pids:
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
            tasks += int(fields[17])  # num_threads
    return tasks, ticks / os.sysconf("SC_CLK_TCK")


class Monitor:
    """The evaluator's watch over the tree: `check()` raises LimitExceeded for the limit that was hit."""

    def __init__(self, limits: Limits, pid: int, cgroup: Cgroup | None, *, clock=time.monotonic):
        self.limits, self.pid, self.cgroup, self.clock = limits, pid, cgroup, clock
        self.started = clock()
        self.peak_tasks = 0

    def check(self) -> None:
        if self.clock() - self.started > self.limits.wall:
            raise LimitExceeded(line("wall", self.limits))
        hit = self.cgroup.hit() if self.cgroup is not None else None
        if hit:
            raise LimitExceeded(line(hit, self.limits, f"{self.cgroup.kind}"))
        tasks, cpu = _usage(tree(self.pid))
        self.peak_tasks = max(self.peak_tasks, tasks)
        if tasks >= self.limits.pids:
            raise LimitExceeded(line("pids", self.limits, f"{tasks} tasks at once"))
        if cpu > self.limits.cpu:
            raise LimitExceeded(line("cpu", self.limits))

    def after_exit(self, signal_number: int | None) -> None:
        """After the tree died without a result: name the limit that killed it, if one did."""
        hit = self.cgroup.hit() if self.cgroup is not None else None
        if hit:
            raise LimitExceeded(line(hit, self.limits, f"{self.cgroup.kind}"))
        import signal

        if signal_number in (signal.SIGXCPU,):
            raise LimitExceeded(line("cpu", self.limits, "RLIMIT_CPU"))
