"""The hostile-attack suite (issue 23): attacks written to escape, run in the bubblewrap sandbox.

Each case starts one sandboxed attack process. The attacks (tests/attacks/hostile.py, probe.py)
try every family from inside: reading weights, data sets, keys and canary files through native
loaders, openat, links and /proc; starting programs and fresh interpreters without guards; writing
where the evaluator imports from; signalling and tracing the evaluator; the network (a TCP
listener, a UDP socket, unix sockets of this process); the kernel keyring; malformed messages;
processes and threads that outlive the run. They print what they obtained to their stderr (the
evaluator's: read here with capfd). Every case ends with the attack having obtained nothing and the
result refused or honest.

Runs where bubblewrap is installed on Linux; with RECONBENCH_SANDBOX=bubblewrap (set by .ci/run)
a missing or broken bubblewrap fails the suite instead of skipping it.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import socket
import sys
import threading
import time
import uuid
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import torch

from reconbench.image.attacks import AttackError, Progress
from reconbench.image.evaluation import attack_run, evaluate
from reconbench.pipeline.isolation import mounts, sandbox
from reconbench.pipeline.isolation.sandbox import SandboxError
from reconbench.image.results import verify_result_dir
from reconbench.core.tracks import get_track

ATTACKS = Path(__file__).parent / "attacks"
HOSTILE = ATTACKS / "hostile.py"
REQUIRED = os.environ.get(sandbox.ENV_VAR) == "bubblewrap"
pytestmark = pytest.mark.skipif(
    not REQUIRED and (not sys.platform.startswith("linux") or shutil.which("bwrap") is None),
    reason="bubblewrap is not installed (Linux: apt-get install bubblewrap; .ci/run installs it)")


@pytest.fixture(autouse=True)
def _sandbox_required(monkeypatch):
    monkeypatch.setenv(sandbox.ENV_VAR, "bubblewrap")  # a sandbox that cannot start fails the case


@pytest.fixture(scope="module")
def track():
    return get_track("digits")


def _run(track, attack: str, config: dict):
    return attack_run(track, f"{HOSTILE}:{attack}", None, config=config, seed=0, device=torch.device("cpu"),
                      progress=Progress())


def _reports(capfd) -> list[dict]:
    err = capfd.readouterr().err
    return [json.loads(line.split(" ", 1)[1]) for line in err.splitlines() if line.startswith("HOSTILE-REPORT ")]


class Host:
    """What the test plants and listens on: canaries, sockets, a signal handler."""

    def __init__(self, tmp_path: Path, monkeypatch):
        self.canary = f"canary-{uuid.uuid4().hex}"  # planted where the attack must not reach
        self.marker = uuid.uuid4().hex  # names the attack's own attempts (files, sockets): not a secret
        self.connections: list[str] = []
        self.signals: list[int] = []
        home = tmp_path / "home"
        (home / ".ssh").mkdir(parents=True)
        monkeypatch.setenv("HOME", str(home))
        files = {home / ".ssh" / "id_ed25519": self.canary}
        for name in ("HF_TOKEN", "OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "RECONBENCH_JUDGE_PASSWORD",
                     "MY_SETTING"):  # the last is not secret-looking: the allowlist drops it all the same
            monkeypatch.setenv(name, self.canary)
        for var, rel in (("RECONBENCH_HOME", "keys/ed25519.pem"), ("HF_HOME", "hub/models--x--target/blobs/abc"),
                         ("RECONBENCH_CACHE", "features/target.npy")):
            # This test's own folders: a canary at the session's default key path would be read as
            # the signing key by every later test in the same process.
            monkeypatch.setenv(var, str(tmp_path / var.lower()))
            files[Path(os.environ[var]) / rel] = self.canary
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        self.canary_files = [str(p) for p in files]
        self._keyring()
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.udp.settimeout(0.2)
        self.unix_path = str(tmp_path / "s.sock")
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind(self.unix_path)
        self.unix.listen()
        self.abstract_name = f"reconbench-{self.marker}"
        self.abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.abstract.bind("\0" + self.abstract_name)
        self.abstract.listen()
        for s in (self.tcp, self.unix, self.abstract):
            threading.Thread(target=self._accept, args=(s,), daemon=True).start()
        self._old = signal.signal(signal.SIGUSR1, lambda sig, frame: self.signals.append(sig))

    def _keyring(self) -> None:
        """A fresh session keyring for this process, holding a canary key (inherited by children)."""
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.syscall(250, 1, None) > 0  # KEYCTL_JOIN_SESSION_KEYRING, anonymous
        assert libc.syscall(248, b"user", b"reconbench-canary", self.canary.encode(), len(self.canary), -3) > 0

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            self.connections.append(repr(server.getsockname()))
            conn.close()

    def datagrams(self) -> list[bytes]:
        got = []
        while True:
            try:
                got.append(self.udp.recv(100))
            except OSError:
                return got

    def close(self) -> None:
        signal.signal(signal.SIGUSR1, self._old)
        for s in (self.tcp, self.udp, self.unix, self.abstract):
            s.close()


@pytest.fixture
def host(tmp_path, monkeypatch):
    h = Host(tmp_path, monkeypatch)
    yield h
    h.close()


def _protected_paths(host: Host) -> list[str]:
    package = Path(str(resources.files("reconbench")))
    import gensim.test.utils
    import sklearn

    paths = [package / "data/digits/cnn.safetensors", package / "data/lee-news/embedder-bitfit.safetensors",
             package / "registry/tracks.json", Path(sklearn.__file__).parent / "datasets/data/digits.csv.gz",
             Path(gensim.test.utils.datapath("lee_background.cor")), Path(__file__).parent / "conftest.py"]
    paths += [p for p in Path("/usr/share/datasets").glob("*/*")][:2]
    return [str(p) for p in paths if p.exists()] + host.canary_files


def test_escape_by_every_route_gets_nothing(track, host, tmp_path, capfd):
    import numpy

    package = Path(str(resources.files("reconbench")))
    site = Path(numpy.__file__).parents[1]
    plan = {
        "paths": _protected_paths(host), "marker": host.marker, "evaluator_pid": os.getpid(),
        "write_dirs": [str(site), str(package), str(package / "__pycache__"), str(package / "image" / "metrics"),
                       str(Path(os.__file__).parent), str(tmp_path), os.getcwd()],
        "append_to": [str(package / "core" / "signing.py"), str(package / "image" / "metrics" / "__init__.py"), numpy.__file__, os.__file__],
        "tcp_port": host.tcp.getsockname()[1], "udp_port": host.udp.getsockname()[1],
        "unix_path": host.unix_path, "abstract_name": host.abstract_name,
    }
    try:
        run = _run(track, "EscapeAll", {"plan": json.dumps(plan)})
    finally:  # were the sandbox broken, leave no marker file in the shared folders (the asserts below still fail)
        planted = [p for folder in plan["write_dirs"] + ["/tmp"] for p in Path(folder).glob(f"reconbench-hostile-{host.marker}*")]
        for path in planted:
            path.unlink()
    assert planted == []
    (report,) = _reports(capfd)
    probes = report["probes"]
    # The routes the guards refuse were refused; two fresh interpreters without guards did start.
    for route in ("subprocess.run", "os.system", "os.posix_spawn", "ctypes libc system"):
        assert report["started"][route].startswith("refused: GuardError"), (route, report["started"][route])
    assert set(probes) == {"in-process", "fresh interpreter", "multiprocessing spawn"}, report["started"].get("fresh interpreter")
    for where, probe in probes.items():
        # Nothing obtained by any route but a listing of the sandbox's own empty working folder.
        assert set(probe["got"]) <= {"cwd listing"}, (where, probe["got"])
        listing = probe["got"].get("cwd listing", "")
        assert "pyproject.toml" not in listing and "tests" not in listing, listing
        assert "part reads" not in probe["refused"] and "part network" not in probe["refused"], probe["refused"]
        if where != "in-process":  # no guards there: what stopped each route is the OS
            refused = probe["refused"]
            assert "Operation not permitted" in refused["keyctl read session keyring"]  # seccomp
            assert "Operation not permitted" in refused["ptrace attach evaluator"]  # seccomp
            assert "Operation not permitted" in refused["unshare user namespace"]  # seccomp
            assert "No such process" in refused["kill evaluator SIGUSR1"]  # PID namespace
            assert "Connection refused" in refused["tcp 127.0.0.1 (the test's listener)"]  # network namespace
            assert "Network is unreachable" in refused["tcp 1.1.1.1:443"]
            assert "No such file" in refused["unix socket file"] and "Connection refused" in refused["abstract unix socket"]
            weights = str(Path(str(resources.files("reconbench"))) / "data/digits/cnn.safetensors")
            assert "No such file" in refused[f"torch.from_file {weights}"]  # mount view
            assert "Read-only file system" in refused[f"create in {site}"]
            assert "Read-only file system" in refused[f"open for append {numpy.__file__}"]
            assert "No such file" in refused[f"create in {tmp_path}"]
    everything = json.dumps(report)
    assert host.canary not in everything  # no key, token, canary file or keyring entry reached the attack
    assert host.connections == [] and host.datagrams() == [] and host.signals == []
    assert run.sandbox == f"bubblewrap {sandbox.bwrap_version(shutil.which('bwrap'))}"
    assert run.knowledge.query.queries == 0 and torch.count_nonzero(run.reconstruction.images) == 0


def test_processes_and_threads_left_behind_die_with_the_run_and_queries_are_the_evaluators(track, tmp_path, capfd,
                                                                                          signing_key):
    marker = f"linger-{uuid.uuid4().hex}"
    out = tmp_path / "out"
    result = evaluate(track_id="digits", attack_spec=f"{HOSTILE}:Outlive", out=out, key_path=signing_key,
                      config={"out_dir": str(out), "marker": marker, "queries": 30, "claimed": 7}, command="test")
    (report,) = _reports(capfd)
    assert report["queries_seen"] == 30

    def lingering() -> list[str]:
        found = []
        for pid in (p for p in os.listdir("/proc") if p.isdigit()):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(pid)
        return found

    assert lingering() == []  # gone when evaluate returned: the sandbox was ended, not just its first process
    time.sleep(1.0)  # had anything survived, it would have edited the files by now
    verified = verify_result_dir(out)  # signature and reconstructions' hash still hold
    assert not (out / marker).exists()
    payload = verified.payload
    assert payload.provenance.queries == 30  # counted by the evaluator, whatever the attack claims
    assert payload.provenance.attack_facts == {"queries": 7}  # the attack's claim, recorded as its own
    assert payload.provenance.sandbox == result.result.payload.provenance.sandbox != "none"


@pytest.mark.parametrize("case, message", [
    ("pickle", "malformed message header"),
    pytest.param("huge-header", "malformed message header", marks=pytest.mark.slow),
    pytest.param("nested", "malformed message header", marks=pytest.mark.slow),
    pytest.param("nan", "malformed message header", marks=pytest.mark.slow),
    pytest.param("many-arrays", "3 arrays declared", marks=pytest.mark.slow),
    pytest.param("giant-array", "over the", marks=pytest.mark.slow),
    pytest.param("object-dtype", "bad array declaration", marks=pytest.mark.slow),
    pytest.param("short-array", "array of 16 bytes, declared 256", marks=pytest.mark.slow),
    pytest.param("int-images", "unexpected message 'result'", marks=pytest.mark.slow),
    ("overflow-float", r"malformed message header \(ValueError: number 1e999 is out of range\)"),
    ("long-integer", r"malformed message header \(ValueError: integer of 4000 digits\)"),
    ("huge-dim", r"malformed message header \(ValueError: integer of 22 digits\)"),  # 2**70: past 64 bits
    pytest.param("big-dim", r"bad array declaration .*each below 2147483648", marks=pytest.mark.slow),  # 0 bytes in all
    pytest.param("bad-progress", "bad progress message", marks=pytest.mark.slow),
    ("progress-flood", "more than 200 progress messages a second"),
])
def test_malformed_messages_end_the_run_with_one_clear_error(track, tmp_path, capfd, case, message):
    marker = tmp_path / "unpickled"
    t0 = time.monotonic()
    with pytest.raises(AttackError, match=message) as caught:
        _run(track, "Messages", {"case": case, "marker": str(marker)})
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 600  # one line, never the 4000 digits
    assert time.monotonic() - t0 < 55  # refused at once, not after the attack's 60 s sleep ended the run
    assert _reports(capfd) == [{"sent": case}]
    assert not marker.exists()  # nothing from the attack's process was unpickled or run here


def test_a_sandbox_that_cannot_start_is_a_clear_error_not_a_fallback(track, monkeypatch):
    real = mounts.system_args
    monkeypatch.setattr(mounts, "system_args", lambda *a: real(*a) + ["--ro-bind", "/nonexistent-reconbench", "/x"])
    monkeypatch.setenv(sandbox.ENV_VAR, "auto")  # even when not required, bwrap being there means it must work
    with pytest.raises(SandboxError, match=r"bubblewrap could not start the attack's sandbox \(bwrap: Can't find "
                                           r"source path /nonexistent-reconbench.*RECONBENCH_SANDBOX=none"):
        _run(track, "EscapeAll", {})


def test_without_bubblewrap_the_run_warns_once_and_records_none(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on the path
    monkeypatch.setenv(sandbox.ENV_VAR, "bubblewrap")
    with pytest.raises(SandboxError, match="RECONBENCH_SANDBOX=bubblewrap, but bwrap is not installed"):
        sandbox.choose()
    monkeypatch.setenv(sandbox.ENV_VAR, "auto")
    sandbox._warn_once.cache_clear()
    assert sandbox.choose() is None and sandbox.choose() is None
    err = capfd.readouterr().err.splitlines()
    assert err == ["warning: the attack runs without an OS sandbox (bubblewrap not found): it can read every file your "
                   "user can (signing keys, the validation cache's key, ~/.ssh, tokens, caches, this checkout) and reach "
                   "the network; the result records sandbox: none"]
    monkeypatch.setenv(sandbox.ENV_VAR, "sometimes")
    with pytest.raises(SandboxError, match="use one of auto, bubblewrap, none"):
        sandbox.choose()


def test_the_environment_is_an_allowlist():
    env = {"PATH": "/x", "HOME": "/home/u", "HF_TOKEN": "t", "OPENAI_API_KEY": "k", "MY_SETTING": "s", "LANG": "C.UTF-8",
           "OMP_NUM_THREADS": "2", "CUBLAS_WORKSPACE_CONFIG": ":4096:8", "OMP_SECRET_KEY": "s", "LD_PRELOAD": "/evil.so",
           "PYTHONPATH": "/elsewhere", "PYTHONSTARTUP": "/evil.py", "RECONBENCH_HOME": "/keys"}
    inside = sandbox.environment(env, sandboxed=True)
    assert inside == {"LANG": "C.UTF-8", "OMP_NUM_THREADS": "2", "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
                      "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": sandbox.HOME, "TMPDIR": "/tmp", "USER": "attack",
                      "LOGNAME": "attack"}
    outside = sandbox.environment(env, sandboxed=False)
    assert outside == {"PATH": "/x", "HOME": "/home/u", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "2",
                       "CUBLAS_WORKSPACE_CONFIG": ":4096:8"}


def test_the_mount_view_binds_libraries_and_hides_data(tmp_path):
    import sklearn

    box = sandbox.Bubblewrap("/usr/bin/bwrap", "0.8.0")
    package = Path(str(resources.files("reconbench")))
    args = box.command(["python"], package=package, env={}, secrets=[str(Path.home())])
    pairs = {(a, b) for a, b in zip(args, args[1:])}
    binds = {b for a, b in pairs if a == "--ro-bind"}
    tmpfs = {b for a, b in pairs if a == "--tmpfs"}
    nulled = {args[i + 2] for i, a in enumerate(args) if a == "--ro-bind" and args[i + 1] == "/dev/null"}
    for flag in ("--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
                 "--new-session", "--clearenv"):
        assert flag in args
    assert {"/usr", str(package.resolve()), os.path.realpath(sys.prefix)} <= binds
    assert {str(package / "data"), str(package / "registry"), "/tmp"} <= tmpfs
    assert str(Path(sklearn.__file__).parent / "datasets" / "data" / "digits.csv.gz") in nulled
    if os.path.isdir("/usr/share/datasets"):
        assert "/usr/share/datasets" in tmpfs
    bound = binds | {b for a, b in pairs if a in ("--bind", "--dev-bind")}
    for never in ("/", "/etc", "/home", "/root", "/var", "/run", os.getcwd(), str(Path.home())):
        assert never not in bound, never
    assert all(not b.startswith(os.getcwd() + "/tests") for b in bound)


def test_a_checkout_under_tmp_is_a_read_only_skeleton_in_the_sandbox(tmp_path):
    """A venv and toolkit bound from under /tmp (a checkout cloned there): their parents in the
    sandbox's private /tmp are read-only, and the checkout's other files are not there. Real bwrap."""
    assert str(tmp_path).startswith("/tmp/"), tmp_path  # pytest's basetemp on Linux
    checkout = tmp_path / "clone"
    (checkout / "venv").mkdir(parents=True)
    (checkout / "venv" / "lib.py").write_text("x = 1\n")
    (checkout / "secret.txt").write_text("not for the attack\n")
    before, after = mounts.tmp_skeletons([str(checkout / "venv")], [])
    top = "/tmp/" + os.path.relpath(checkout, "/tmp").split("/")[0]
    assert (before, after) == (["--tmpfs", top], ["--remount-ro", top])
    assert mounts.tmp_skeletons([str(checkout / "venv")], [top]) == ([], [])  # a writable top stays writable
    assert mounts.tmp_skeletons(["/root/.pyenv", "/usr/lib/python3"], []) == ([], [])

    script = (f"import os\nprint(open({str(checkout / 'venv' / 'lib.py')!r}).read().strip())\n"
              f"print(os.path.exists({str(checkout / 'secret.txt')!r}))\n"
              f"for d in ({str(checkout)!r}, {top!r}):\n"
              "    try:\n        open(os.path.join(d, 'planted'), 'w'); print('written')\n"
              "    except OSError as e:\n        print(e.strerror)\n"
              "open('/tmp/scratch', 'w'); print('tmp writable')\n")
    args = [shutil.which("bwrap"), "--unshare-all", "--die-with-parent", *mounts.system_args(1 << 24, 1 << 20), *before]
    for root in mounts.python_roots():
        args += ["--ro-bind", root, root]
    args += ["--ro-bind", str(checkout / "venv"), str(checkout / "venv"), *after, "--", sys.executable, "-c", script]
    import subprocess

    out = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:5] == ["x = 1", "False", "Read-only file system", "Read-only file system", "tmp writable"]
    assert not (checkout / "planted").exists() and not (tmp_path / "planted").exists()
