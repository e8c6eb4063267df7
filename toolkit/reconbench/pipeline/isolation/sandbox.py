"""The OS sandbox around the attack's process: bubblewrap (Linux), or none where it cannot run.

`choose()` decides once per run, from RECONBENCH_SANDBOX:
- unset or "auto": bubblewrap where `bwrap` is installed on Linux; elsewhere (macOS, Windows, a Linux
  without the package) the run goes on without it, with one warning line, and the result records
  `provenance.sandbox: "none"`;
- "bubblewrap": bubblewrap or a clear error (CI and reproduction set this);
- "none": no sandbox, on purpose (a container without user namespaces), with the same warning line.
Where bwrap exists but cannot start the sandbox (user namespaces off, AppArmor's
kernel.apparmor_restrict_unprivileged_userns=1), the run stops with bubblewrap's own message and
what to do: it never falls back silently.

The sandbox (`Bubblewrap.command`): new user, mount, PID, IPC, UTS, network and (where the kernel
has them) cgroup namespaces; --die-with-parent; --new-session (no terminal to inject keystrokes
into); no capabilities; the mount view of reconbench.pipeline.isolation.mounts; an environment rebuilt from
an allowlist (`environment`); the one socket to the evaluator, passed as an inherited descriptor,
is the only channel out (the network namespace has only its own loopback). Every process the
attack starts is in the PID namespace, and all of them die when its first process (bubblewrap's
init) does: the evaluator kills bubblewrap at the end of every run.
A seccomp filter (reconbench.pipeline.isolation.seccomp) refuses what namespaces do not isolate.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from reconbench.pipeline.isolation import mounts

ENV_VAR = "RECONBENCH_SANDBOX"
MODES = ("auto", "bubblewrap", "none")
NONE = "none"
ATTACK_ROOT = "/attack"  # where a bring-your-own attack's signed source appears, read-only
HOME = "/tmp/home"  # the attack's $HOME: inside its private /tmp
# Variables the attack's process may inherit (exact names, then prefixes): locale, terminal width,
# and the thread, kernel (ATen's instruction set, oneDNN's, MKL's), BLAS and CUDA settings that make a
# run reproducible: an evaluator held to other kernels gets the same bytes in the sandbox as in-process. Never a name that says
# token, secret, password or key, whatever its prefix.
ENV_NAMES = {"LANG", "LANGUAGE", "TZ", "TERM", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "PYTHONHASHSEED",
             "PYTHONWARNINGS", "PYTHONUNBUFFERED", "PYTHONFAULTHANDLER", "PYTHONIOENCODING", "PYTHONUTF8",
             "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUBLAS_WORKSPACE_CONFIG", "LOKY_MAX_CPU_COUNT",
             "TOKENIZERS_PARALLELISM", "SYSTEMROOT", "PATHEXT", "WINDIR", "LD_LIBRARY_PATH", "ATEN_CPU_CAPABILITY"}
ENV_PREFIXES = ("LC_", "OMP_", "MKL_", "ONEDNN_", "DNNL_", "OPENBLAS_", "KMP_", "GOMP_", "NUMEXPR_", "VECLIB_", "PYTORCH_CUDA_",
                "NVIDIA_", "CUDA_LAUNCH_", "RECONBENCH_ATTACK_")
ENV_NEVER = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL", "AUTH")
# Outside the sandbox the attack keeps the host's search path and home (it has them anyway).
ENV_UNSANDBOXED = {"PATH", "HOME", "TMPDIR", "TEMP", "TMP", "USERPROFILE", "DYLD_LIBRARY_PATH"}


class SandboxError(RuntimeError):
    """The sandbox was asked for and cannot run here; the message says why and what to do."""


def environment(env: dict[str, str], *, sandboxed: bool) -> dict[str, str]:
    """The attack's environment: the allowlisted part of `env` (the evaluator's own settings for the
    child, e.g. PYTHONPATH and the thread count, are added by the caller after this)."""
    keep = ENV_NAMES | (ENV_UNSANDBOXED if not sandboxed else set())
    out = {k: v for k, v in env.items()
           if (k in keep or k.startswith(ENV_PREFIXES)) and not any(s in k.upper() for s in ENV_NEVER)}
    if sandboxed:
        out.update({"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": HOME, "TMPDIR": "/tmp", "USER": "attack",
                    "LOGNAME": "attack"})
    return out


@lru_cache(maxsize=1)
def bwrap_version(path: str) -> str:
    """'0.8.0' from `bwrap --version` ('bubblewrap 0.8.0')."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout.split()
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxError(f"{path} --version failed ({exc})") from None
    if len(out) != 2 or out[0] != "bubblewrap":
        raise SandboxError(f"{path} --version printed {' '.join(out)[:80]!r}, not 'bubblewrap <version>'")
    return out[1]


@dataclass(frozen=True)
class Bubblewrap:
    path: str
    version: str

    @property
    def label(self) -> str:
        """What provenance.sandbox records."""
        return f"bubblewrap {self.version}"

    def command(self, argv: list[str], *, package: Path, env: dict[str, str], attack_dir: Path | None = None,
                devices: list[str] = (), secrets: list[str] = (), writable: list[str] = (),
                status_fd: int | None = None, seccomp_fd: int | None = None, tmp_bytes: int = 1 << 30,
                shm_bytes: int = 256 << 20) -> list[str]:
        """bwrap's command line running `argv` (argv[0]: this interpreter) in the sandbox."""
        roots = mounts.python_roots()
        args = [self.path, "--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
                "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                "--hostname", "attack", "--clearenv"]
        for k, v in sorted(env.items()):
            args += ["--setenv", k, v]
        args += mounts.system_args(tmp_bytes, shm_bytes)
        skeletons, seal = mounts.tmp_skeletons(roots + [str(package.resolve())], list(writable))
        args += skeletons
        for root in roots:
            args += ["--ro-bind", root, root]
        args += mounts.dataset_hides(roots)
        args += mounts.package_args(package)
        args += mounts.private_hides(roots + ["/usr", str(package)], [str(Path.home()), *secrets])
        for dev in devices:  # GPUs: their device nodes only
            args += ["--dev-bind", dev, dev]
        for folder in writable:  # a registered attack's GAN-prior cache
            args += ["--bind", folder, folder]
        if attack_dir is not None:
            args += ["--ro-bind", str(attack_dir), ATTACK_ROOT]
        args += seal  # bound folders' parents under /tmp: read-only
        args += mounts.DEV_SEAL
        args += ["--dir", HOME, "--chdir", "/tmp", "--remount-ro", "/"]  # writable: /tmp, /dev/shm (and a GAN-prior cache) only
        if status_fd is not None:
            args += ["--json-status-fd", str(status_fd)]
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        return args + ["--", *argv]


def gpu_devices() -> list[str]:
    """NVIDIA's device nodes (a CUDA run needs them inside the sandbox)."""
    names = [f"/dev/{n}" for n in sorted(os.listdir("/dev")) if n.startswith("nvidia")] if os.path.isdir("/dev") else []
    return [n for n in names if os.path.exists(n)]


def choose(env: dict[str, str] | None = None) -> Bubblewrap | None:
    """The sandbox this run uses (None: none), per RECONBENCH_SANDBOX; warns once when none."""
    env = os.environ if env is None else env
    mode = env.get(ENV_VAR, "auto").strip().lower() or "auto"
    if mode not in MODES:
        raise SandboxError(f"{ENV_VAR}={env.get(ENV_VAR)!r}: use one of {', '.join(MODES)}")
    if mode == NONE:
        _warn(f"{ENV_VAR}=none")
        return None
    path = shutil.which("bwrap", path=env.get("PATH", os.defpath)) if sys.platform.startswith("linux") else None
    if path is None:
        if mode == "bubblewrap":
            raise SandboxError(f"{ENV_VAR}=bubblewrap, but bwrap is not installed here "
                               "(Debian/Ubuntu: apt-get install bubblewrap; it runs on Linux only)")
        _warn("bubblewrap not found" if sys.platform.startswith("linux") else f"no bubblewrap on {sys.platform}")
        return None
    return Bubblewrap(path, bwrap_version(path))


_QUIET = [False]
_HIDDEN: list[str] = []  # more of the evaluator's files the sandbox hides (`hiding`)


@contextlib.contextmanager
def hiding(paths):
    """Within this block, the sandbox also hides these files and folders wherever they lie inside a bound folder
    (the board's sealed run: its key file, its private output folder). Outside the bound folders nothing of the
    host is seen anyway (mounts.py)."""
    added = [str(p) for p in paths if p]
    _HIDDEN.extend(added)
    try:
        yield
    finally:
        for p in added:
            _HIDDEN.remove(p)


def hidden() -> list[str]:
    return list(_HIDDEN)



@contextlib.contextmanager
def quiet():
    """choose() without its warning (a check whose caller says what the lack of a sandbox means)."""
    _QUIET[0] = True
    try:
        yield
    finally:
        _QUIET[0] = False


def _warn(why: str) -> None:
    if not _QUIET[0]:
        _warn_once(why)


@lru_cache(maxsize=None)
def _warn_once(why: str) -> None:
    """One line per process and reason (a sweep runs many attacks)."""
    print(f"warning: the attack runs without an OS sandbox ({why}): it can read every file your user can (signing "
          "keys, the validation cache's key, ~/.ssh, tokens, caches, this checkout) and reach the network; the result "
          "records sandbox: none",
          file=sys.stderr)


def start_failure(stderr: str) -> SandboxError:
    """The clear error for a sandbox that bubblewrap could not set up."""
    said = " ".join(stderr.split())[:500] or "no message"
    hint = ("unprivileged user namespaces are off here: Ubuntu 24.04+ restricts them with AppArmor "
            "(sysctl kernel.apparmor_restrict_unprivileged_userns=0 allows them), containers may forbid them; "
            f"see docs/sandbox.md, or run without the sandbox on purpose with {ENV_VAR}=none")
    return SandboxError(f"bubblewrap could not start the attack's sandbox ({said}); {hint}")
