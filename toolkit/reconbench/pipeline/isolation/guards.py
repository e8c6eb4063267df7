"""Friendly errors for honest mistakes inside the attack's process (installed before any attack
code is imported). Not a security boundary: that is the OS sandbox (reconbench.pipeline.isolation.sandbox,
docs/sandbox.md). Python's own documentation says audit hooks are not a sandbox; native code and a
fresh interpreter bypass them, and the hostile suite (tests/test_sandbox_hostile.py) does.

What they do: an attack that imports the evaluator's modules (the registry, the Hub client, dataset
loaders, metrics, submissions, the evaluation itself), opens from Python the registry files, the
target weights shipped in the package, the evaluator's Hub cache, cached target features or another
process's /proc entries, starts a program, opens a network connection or looks up libc's file and
process functions through ctypes gets a GuardError naming what it did, at once and the same way on
every platform (with or without the sandbox, where the same action would fail later and less
clearly). Before the hook, the process sets no_new_privs and gives up every Linux capability.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# The evaluator's modules, as files of the package (an audit hook sees a module's file being opened,
# which is how an import of a source module shows itself): folders whole, and single modules.
BLOCKED_FOLDERS = ("zoo", "image/metrics", "submissions", "cli", "leaderboard", "reproduction", "sweep")
BLOCKED_MODULES = ("core/tracks", "core/hub", "image/evaluation", "core/signing", "image/data/digits",
                   "image/models/embedded", "image/models/memorization", "pipeline/isolation/parent")
BLOCKED_PACKAGES = ("huggingface_hub",)  # installed packages that fetch from the Hub
BLOCKED_EVENTS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.startfile",
                  "socket.connect", "socket.getaddrinfo", "pty.spawn")
BLOCKED_SYMBOLS = {"open", "open64", "openat", "openat64", "fopen", "fopen64", "creat", "syscall", "ptrace",
                   "process_vm_readv", "execve", "execv", "execvp", "execl", "system", "popen", "posix_spawn", "fork"}


PACKAGE = Path(__file__).resolve().parents[2]  # reconbench/ (this is pipeline/isolation/guards.py)


class GuardError(PermissionError):
    """Something the attack's process may not do."""


def _protected_roots(extra: list[str]) -> list[str]:
    import importlib.util

    roots = [str(PACKAGE / "registry")] + [str(PACKAGE / f) for f in BLOCKED_FOLDERS]
    for name in BLOCKED_PACKAGES:
        spec = importlib.util.find_spec(name)  # locates without importing
        if spec is not None and spec.origin:
            roots.append(str(Path(spec.origin).resolve().parent))
    # the package's data folder (the embedded tracks' weights and files; no code lives there), whether
    # or not the sandbox shows it (inside it the folder is there, empty)
    roots += [str(PACKAGE / "data")]
    home = Path.home()
    roots += [str(home / ".cache" / "huggingface")]
    # Inception features of target sets, cached by the evaluator (reconbench.image.metrics.feature_cache).
    cache = os.environ.get("RECONBENCH_CACHE")
    roots += [str((Path(cache) if cache else home / ".cache" / "reconbench") / "features")]
    roots += [os.path.realpath(p) for p in extra if p]
    return roots


def drop_privileges() -> bool:
    """no_new_privs, then empty capability sets (capset, version 3). True when both took effect."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        ok = libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
        header, data = Header(0x20080522, 0), (Data * 2)()  # _LINUX_CAPABILITY_VERSION_3, this process
        return ok and libc.capset(ctypes.byref(header), data) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent(parent_pid: int) -> None:
    """Linux: SIGKILL this process when the evaluator dies (PR_SET_PDEATHSIG), since it ignores the
    Ctrl-C that ends the evaluator (isolation.parent.sigint_blocked); exit at once if it already died."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if parent_pid and os.getppid() != parent_pid:  # 0: in the sandbox, whose --die-with-parent does this
        os._exit(1)


def install(parent_pid: int, hub_paths: list[str]) -> None:
    die_with_parent(parent_pid)
    drop_privileges()
    roots = _protected_roots(hub_paths)
    modules = {(str((PACKAGE / m).parent), Path(m).name) for m in BLOCKED_MODULES}
    own = str(os.getpid())

    def blocked_path(raw) -> str | None:
        if isinstance(raw, int):
            return None  # an fd the process already holds
        try:
            path = os.path.realpath(os.fsdecode(raw))
        except (TypeError, ValueError):
            return None
        if path.startswith("/proc/"):
            pid = path.split("/")[2]
            if pid.isdigit() and pid != own:
                return path
        for root in roots:
            if path == root or path.startswith(root.rstrip("/") + "/"):
                return path
        folder = os.path.dirname(path)
        if os.path.basename(folder) == "__pycache__":
            folder = os.path.dirname(folder)
        if (folder, os.path.basename(path).split(".")[0]) in modules:
            return path
        return None

    def hook(event: str, args: tuple) -> None:
        if event == "open" and args:
            bad = blocked_path(args[0])
            if bad:
                raise GuardError(f"the attack's process may not open {bad} (the evaluator's side)")
        elif event in BLOCKED_EVENTS or event.startswith("os.exec") or event.startswith("os.spawn"):
            raise GuardError(f"the attack's process may not do '{event}'")
        elif event == "ctypes.dlsym" and len(args) > 1 and str(args[1]) in BLOCKED_SYMBOLS:
            raise GuardError(f"the attack's process may not call '{args[1]}' through ctypes")

    loaded = [m for m in sys.modules if m.startswith(("reconbench.core.tracks", "reconbench.core.hub", "huggingface_hub"))]
    if loaded:  # the guards come too late if these are already here
        raise GuardError(f"the attack's process loaded {', '.join(loaded)} before its guards")
    sys.addaudithook(hook)
