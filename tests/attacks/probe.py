"""What a hostile attack tries from inside the sandbox, by routes that the Python guards do not see
(native readers, openat, /proc, raw syscalls, sockets), so that only the OS boundary stands between
it and the host. Run in the attack's process (hostile.py) and, as a script, in fresh interpreters
the attack starts itself (`python probe.py '<json plan>'` prints its JSON report), which have no
guards at all.

The plan (from the test): `paths` to read (weights, data sets, keys, canary files), `write_dirs` to
create files in, `evaluator_pid`, `tcp_port`, `udp_port`, `unix_path`, `abstract_name`, `marker`.
The report: for every attempt, what it got: `got` (bytes or data obtained; must stay empty) and
`refused` (the error), plus `seen`: texts the probe could read that the test searches for canaries.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import sys


def _syscall():
    """libc's syscall(), found without dlsym of a guarded name (the guards watch ctypes lookups of
    'syscall'; a fresh interpreter has no guards, and in-process this route is refused by them)."""
    return ctypes.CDLL(None, use_errno=True).syscall


class Probe:
    def __init__(self, plan: dict):
        self.plan = plan
        self.got: dict[str, str] = {}
        self.refused: dict[str, str] = {}
        self.seen: list[str] = []

    def attempt(self, route: str, fn) -> None:
        try:
            out = fn()
        except BaseException as exc:  # noqa: BLE001 - every refusal is the result
            self.refused[route] = f"{type(exc).__name__}: {exc}"[:200]
            return
        if out:
            self.got[route] = repr(out)[:200]
            self.seen.append(repr(out)[:4000])

    # reading ---------------------------------------------------------------------------------
    def reads(self) -> None:
        import numpy as np

        for path in self.plan["paths"]:
            self.attempt(f"open {path}", lambda p=path: open(p, "rb").read(4096))
            self.attempt(f"numpy.fromfile {path}", lambda p=path: np.fromfile(p, dtype=np.uint8, count=4096).tobytes())
            self.attempt(f"torch.from_file {path}", lambda p=path: _torch_read(p))
            self.attempt(f"safetensors {path}", lambda p=path: _safetensors_read(p))
            rel = path.lstrip("/")
            self.attempt(f"openat(/) {path}", lambda r=rel: _read_at("/", r))
            self.attempt(f"/proc/self/root {path}", lambda p=path: open(f"/proc/self/root{p}", "rb").read(4096))
            self.attempt(f"/proc/1/root {path}", lambda p=path: open(f"/proc/1/root{p}", "rb").read(4096))
            link = f"/tmp/link-{abs(hash(path))}"
            self.attempt(f"symlink {path}", lambda p=path, l=link: _via_link(p, l))
        self.attempt("sklearn load_digits", lambda: _load_digits())
        self.attempt("cwd listing", lambda: sorted(os.listdir(".")))
        pid = self.plan["evaluator_pid"]
        for what in ("environ", "mem", "maps", "cmdline", "root/etc/hostname", "fd/0"):
            self.attempt(f"/proc/evaluator/{what}", lambda w=what: open(f"/proc/{pid}/{w}", "rb").read(4096))
        for what in ("environ", "cmdline"):  # every process this one can see: none may be the evaluator
            for proc in (p for p in os.listdir("/proc") if p.isdigit()):
                try:
                    with open(f"/proc/{proc}/{what}", "rb") as f:
                        self.seen.append(f.read(8192).decode("utf-8", "replace"))
                except OSError:
                    pass
        self.seen.append(json.dumps(dict(os.environ)))
        self.attempt("keyctl read session keyring", lambda: _keyring())

    # writing where the evaluator imports from --------------------------------------------------
    def writes(self) -> None:
        name = f"reconbench-hostile-{self.plan['marker']}"
        for folder in self.plan["write_dirs"]:
            self.attempt(f"create in {folder}", lambda f=folder: _create(os.path.join(f, name + ".pth")))
        for path in self.plan["append_to"]:  # opened for appending, never written: the open is the test
            self.attempt(f"open for append {path}", lambda p=path: _open_append(p))
        self.attempt("create in /tmp (private)", lambda: not _create(f"/tmp/{name}"))  # must work; got nothing

    # signals and other processes -----------------------------------------------------------------
    def signals(self) -> None:
        pid = self.plan["evaluator_pid"]
        self.attempt("kill evaluator SIGUSR1", lambda: os.kill(pid, signal.SIGUSR1) or "sent")
        self.attempt("pidfd_open evaluator", lambda: os.pidfd_open(pid))
        self.attempt("ptrace attach evaluator", lambda: _check(_syscall()(101, 16, pid, 0, 0)))  # PTRACE_ATTACH
        buf = ctypes.create_string_buffer(16)
        self.attempt("process_vm_readv evaluator", lambda: _check(_syscall()(310, pid, 0, 1, 0, 1, 0)) or buf.raw)
        self.attempt("unshare user namespace", lambda: _check(ctypes.CDLL(None, use_errno=True).unshare(0x10000000)))

    # network ---------------------------------------------------------------------------------------
    def network(self) -> None:
        plan = self.plan
        self.attempt("tcp 127.0.0.1 (the test's listener)",
                     lambda: socket.create_connection(("127.0.0.1", plan["tcp_port"]), timeout=2).send(b"stolen"))

        def udp():
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.sendto(plan["marker"].encode(), ("127.0.0.1", plan["udp_port"]))
            return None  # a datagram "sent" into the sandbox's own loopback: the test checks none arrived

        self.attempt("udp 127.0.0.1", udp)
        self.attempt("unix socket file", lambda: _unix(plan["unix_path"]))
        self.attempt("abstract unix socket", lambda: _unix("\0" + plan["abstract_name"]))
        self.attempt("tcp 1.1.1.1:443", lambda: socket.create_connection(("1.1.1.1", 443), timeout=2).send(b"x"))
        self.attempt("dns", lambda: socket.getaddrinfo("example.org", 443))

    def report(self) -> dict:
        return {"got": self.got, "refused": self.refused, "seen": self.seen}


def _check(result: int):
    if result == -1:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return f"returned {result}"


def _torch_read(path: str) -> bytes:
    import torch

    size = os.path.getsize(path)
    return bytes(torch.from_file(path, size=min(size, 4096), dtype=torch.uint8).tolist()) if size else b""


def _safetensors_read(path: str):
    from safetensors import safe_open

    with safe_open(path, framework="np") as f:
        return {k: f.get_tensor(k).tobytes()[:64] for k in list(f.keys())[:2]}


def _read_at(directory: str, relative: str) -> bytes:
    dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fd = os.open(relative, os.O_RDONLY, dir_fd=dfd)
        try:
            return os.read(fd, 4096)
        finally:
            os.close(fd)
    finally:
        os.close(dfd)


def _via_link(path: str, link: str) -> bytes:
    if not os.path.lexists(link):
        os.symlink(path, link)
    with open(link, "rb") as f:
        return f.read(4096)


def _load_digits():
    from sklearn.datasets import load_digits

    return load_digits().data[:2].tolist()


def _keyring():
    """KEYCTL_READ of the session keyring, then of each key in it (what a stolen credential is)."""
    sc, buf = _syscall(), ctypes.create_string_buffer(4096)
    n = sc(250, 11, -3, buf, 4096)  # keyctl(KEYCTL_READ, KEY_SPEC_SESSION_KEYRING)
    _check(n)
    out = []
    for i in range(0, min(n, 4096), 4):
        key = int.from_bytes(buf.raw[i:i + 4], "little")
        data = ctypes.create_string_buffer(4096)
        m = sc(250, 11, key, data, 4096)
        if m > 0:
            out.append(data.raw[:m].decode("utf-8", "replace"))
    return out


def _create(path: str) -> bool:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    # Inert on purpose: were the sandbox broken, this file would land in a real site-packages folder,
    # where a .pth line starting with "import" runs at every interpreter start. A comment does nothing.
    os.write(fd, b"# reconbench hostile-suite marker (harmless; delete me)\n")
    os.close(fd)
    return True


def _open_append(path: str) -> str:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.close(fd)
    return f"{path} is writable"


def _unix(address: str) -> str:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(address)
    s.send(b"stolen")
    return f"connected to {address!r}"


def run(plan: dict) -> dict:
    probe = Probe(plan)
    for part in (probe.reads, probe.writes, probe.signals, probe.network):
        probe.attempt(f"part {part.__name__}", part)
    return probe.report()


def run_into(plan: dict, conn) -> None:
    """multiprocessing's target: the report back over its pipe."""
    conn.send(run(plan))


if __name__ == "__main__":  # a fresh interpreter started by the attack: no guards, no audit hooks
    with os.fdopen(int(sys.argv[2]), "w") as out:
        out.write(json.dumps(run(json.loads(sys.argv[1]))))
