"""The evaluator's side of the boundary: start the attack's process, hand it its view, answer its
queries, draw its progress bars, and take back its reconstructions.

The attack's process is a fresh interpreter (`python -m reconbench.pipeline.isolation.child`), so it
inherits none of this process's memory: like multiprocessing's "spawn", and unlike "fork", which
would copy the target model. A plain subprocess is used rather than multiprocessing's spawn because
spawn re-imports the parent's __main__ (for `recon-submit`, the CLI and with it the registry) in
the child before any guard could be installed.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import pickle
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np
import torch

from reconbench.image.attacks.base import AttackError, Progress
from reconbench.image.attacks.checks import check_declaration
from reconbench.core import untrusted
from reconbench.core.attack_source import attack_source, copy_source
from reconbench.pipeline.isolation import limits as run_limits
from reconbench.pipeline.isolation import protocol, sandbox, seccomp
from reconbench.pipeline.isolation.relay import Relay
from reconbench.pipeline.isolation.child import to_device
from reconbench.image.knowledge import Knowledge
from reconbench.core.queries import (KnowledgeError, LinkedQueryFunction, QueryBudgetExceeded, QueryFunction,
                                     check_query_shape)

MAX_BARS = 32  # progress bars one attack may have open at once
# Progress bars drawn in one run (registered attacks start one or two); later ones are followed but not
# drawn: each drawn bar writes lines to the evaluator's log and is held until the run ends, so an
# attack starting and ending bars at the allowed message rate would grow both for as long as it runs.
MAX_BARS_SHOWN = 256
# Progress messages: a bucket of PROGRESS_BURST, refilled at PROGRESS_RATE a second (the attack's
# process sends at most 10 advances a second per bar, plus a start and an end per bar).
PROGRESS_RATE, PROGRESS_BURST = 200, 2000
QUERY_CHUNK = 1024  # images the evaluator's model sees at once, whatever the query's size
CHECK_EVERY_S = 0.2  # how often the evaluator checks the attack's tree against its limits
EXIT_GRACE_S = 5  # after its result, how long the attack's process may take to exit before it is killed
CHILD_ERRORS = {"KnowledgeError": KnowledgeError, "QueryBudgetExceeded": QueryBudgetExceeded, "AttackError": AttackError}


@dataclass(frozen=True)
class AttackMeta:
    """What the attack declared (class attributes), as reported by its process."""

    name: str
    paper: str
    family: str
    scenarios: tuple[str, ...]
    version: str
    code: str


def attack_spec(attack: str | type) -> str:
    """A registered name or `file.py:Class` for an Attack class (the child imports it by that)."""
    if isinstance(attack, str):
        return attack
    from reconbench.image.attacks import ATTACKS

    if ATTACKS.get(getattr(attack, "name", None)) is attack:
        return attack.name
    module = sys.modules.get(attack.__module__)
    file = getattr(module, "__file__", None)
    if not file:
        raise AttackError(f"attack class {attack.__qualname__} has no source file; pass path/to/file.py:ClassName")
    return f"{file}:{attack.__qualname__}"


def _hub_paths() -> list[str]:
    """The evaluator's Hub cache folders, which the attack's process may not open."""
    paths = [os.environ.get(v, "") for v in ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE")]
    if os.environ.get("XDG_CACHE_HOME"):
        paths.append(os.path.join(os.environ["XDG_CACHE_HOME"], "huggingface"))
    if "huggingface_hub" in sys.modules:
        paths.append(sys.modules["huggingface_hub"].constants.HF_HUB_CACHE)
    return [p for p in paths if p]


def _filter_pipe() -> tuple[int | None, int | None]:
    """A pipe holding the seccomp program for bubblewrap to read (None, None where there is none)."""
    code = seccomp.program()
    if code is None:
        return None, None
    r, w = os.pipe()
    os.write(w, code)  # a few hundred bytes: well within a pipe's buffer
    os.close(w)
    return r, None


def _secret_paths() -> list[str]:
    """Folders of the evaluator's that the sandbox hides even where they lie inside a bound folder."""
    from reconbench.core.cache import cache_root

    names = ("RECONBENCH_HOME", "RECONBENCH_CACHE", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "TORCH_HOME", "HF_HOME")
    return [str(cache_root())] + [os.environ[n] for n in names if os.environ.get(n)] + _hub_paths() + sandbox.hidden()


def _child_env(scratch: Path, threads: int, *, sandboxed: bool = False, cache: Path | None = None) -> dict[str, str]:
    """The attack's environment: an allowlist of the evaluator's (sandbox.environment), then the
    toolkit's own settings. `scratch`: the attack's writable folder (/tmp inside the sandbox);
    `cache`: the toolkit cache it may use (registered attacks: the user's, for GAN priors), else one
    in scratch that ends with the run."""
    env = sandbox.environment(dict(os.environ), sandboxed=sandboxed)
    # the same toolkit as this process: toolkit/ above reconbench/pipeline/isolation/parent.py (no `import
    # reconbench`: the package's top level holds the API, which imports this module)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[3])  # toolkit/
    env.update({
        "HF_HUB_OFFLINE": "1", "HF_HOME": str(scratch / "hf"), "HF_HUB_CACHE": str(scratch / "hf" / "hub"),
        "RECONBENCH_CACHE": str(cache or scratch / "cache"),
        "RECONBENCH_REGISTRY": str(scratch / "no-registry.json"), "RECONBENCH_ATTACK_PROCESS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",  # no __pycache__ written into an entry's attack/ folder
    })
    # The attack gets the evaluator's thread count (reconbench/core/threads.py). Said to OpenMP and loky too:
    # otherwise scikit-learn (KMeans in Updates-Leak) asks loky for the physical core count, which starts
    # `lscpu`; the guards refuse the subprocess and loky prints a warning with a traceback.
    env["OMP_NUM_THREADS"] = str(threads)
    env["LOKY_MAX_CPU_COUNT"] = str(threads)
    return env


@contextlib.contextmanager
def sigint_blocked():
    """SIGINT blocked in this thread while the attack's process is started: the process inherits the
    blocked mask through fork and exec, so Ctrl-C (sent by a terminal to the whole foreground process
    group) reaches only the evaluator, which stops the attack and prints the one "interrupted" line;
    the attack's process can never end with an error of its own, even during its start-up. A Ctrl-C
    in this window stays pending and is delivered here on unblocking."""
    if not hasattr(signal, "pthread_sigmask"):  # not POSIX: the error mapping in _child_error remains
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


@contextlib.contextmanager
def not_dumpable():
    """Linux: while the attack runs, processes of the same user cannot ptrace this one or read its
    /proc/<pid>/mem (prctl PR_SET_DUMPABLE 0); restored afterwards."""
    libc = None
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
    before = libc.prctl(3, 0, 0, 0, 0) if libc else -1  # PR_GET_DUMPABLE
    if before > 0:
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    try:
        yield
    finally:
        if before > 0:
            libc.prctl(4, before, 0, 0, 0)


class RemoteTraceback(Exception):
    """The attack process's traceback, chained to the error it raised (shown by `--debug`)."""

    def __str__(self) -> str:
        return "\n\n" + str(self.args[0]) if self.args else ""


def _child_error(header: dict, name: str, source_root: Path | None = None,
                 limits: run_limits.Limits | None = None) -> BaseException:
    """The one-line error for the attack process's report; its traceback rides along as the cause.
    Paths inside the sandbox's attack folder are shown as the user's own files (source_root)."""
    # A "KeyboardInterrupt" is the attack's own report (SIGINT is blocked in its process: sigint_blocked):
    # an AttackError like any other, never an interrupt of this process (which would stop a whole sweep).
    kind = protocol.text(header.get("type"), 100)
    hit = header.get("limit")  # the child's own diagnosis of its failure: out of memory, a full tmpfs
    if limits is not None and hit in ("memory", "tmp", "shm"):
        exc = AttackError(f"attack '{name}': " + run_limits.line(hit, limits, protocol.text(header.get("message"), 160)))
        exc.__cause__ = RemoteTraceback(protocol.text(header.get("traceback", ""), 20000, lines=True))
        return exc
    line = header.get("line") or f"the attack '{name}' failed: {kind}: {protocol.text(header.get('message'))}"
    # one line: the message's first (the rest is in the traceback, --debug), every control character escaped
    line = protocol.text(line.strip().split("\n", 1)[0] if isinstance(line, str) else line)
    trace = protocol.text(header.get("traceback", ""), 20000, lines=True)
    if source_root is not None:
        line, trace = (text.replace(f"{sandbox.ATTACK_ROOT}/", f"{source_root}{os.sep}") for text in (line, trace))
    exc = CHILD_ERRORS.get(kind, AttackError)(line)
    exc.__cause__ = RemoteTraceback(trace)
    return exc


def _declared(info: dict, spec: str) -> AttackMeta:
    """The attack's declaration as its process reported it: untrusted data, so every field is
    checked for type and length, free text for control characters, and name, family, paper and cells
    by the same rules as an attack class loaded here (a process may report what its class does not
    declare: a built-in attack's name, a name that is no slug)."""
    fields = {"name": 80, "paper": 2000, "family": 40, "version": 40, "code": 400}
    scenarios = info.get("scenarios")
    where = f"attack '{protocol.text(spec, 200)}'"
    if (not all(isinstance(info.get(k), str) and len(info[k]) <= n and untrusted.line(info[k]) == info[k]
                for k, n in fields.items())
            or not isinstance(scenarios, list) or not 0 < len(scenarios) <= 18
            or not all(isinstance(c, str) and len(c) <= 40 for c in scenarios)):
        raise AttackError(f"{where}: its process sent an invalid declaration (strings of bounded length without "
                          f"control characters for {', '.join(fields)}; 1 to 18 scenarios)")
    from reconbench.core.catalogue import BY_NAME

    check_declaration(info["name"], info["family"], info["paper"], scenarios, f"{where}: its process declared",
                      BY_NAME[spec].target if spec in BY_NAME else None)
    return AttackMeta(name=info["name"], paper=info["paper"], family=info["family"], scenarios=tuple(scenarios),
                      version=info["version"], code=info["code"])


@functools.cache
def _config_rule():
    """The rule of a result's attack.config (reconbench.core.envelope.AttackInfo), as a validator."""
    from typing import Annotated

    from pydantic import TypeAdapter

    from reconbench.core.envelope import AttackInfo

    field = AttackInfo.model_fields["config"]
    return TypeAdapter(Annotated[field.annotation, *field.metadata])


def _reported_config(config: object, name: str) -> dict:
    """The configuration an attack's process reported (with 'ready' and with its result): refused
    here, in one line, if the signed result could not record it; not after the scoring, as a
    schema's dump of errors."""
    from pydantic import ValidationError

    try:
        _config_rule().validate_python(config)
    except ValidationError as exc:
        loc = exc.errors()[0]["loc"]
        where = f" (option {untrusted.line(repr(loc[0]))[:100]})" if loc else ""
        raise AttackError(f"attack '{name}': its process reported a configuration that a result cannot record{where}: "
                          "at most 200 options, names up to 80 characters, each value a number, a string of up to "
                          "2000 characters, true, false or null") from None
    return dict(config)  # type: ignore[call-overload]


def _options(config: dict, spec: str) -> dict:
    """The options the evaluator hands the attack's process (`--set`, an entry's signed config): each
    must cross the protocol, which the attack's process reads as strictly as the evaluator does; refused
    here, naming the option (it was the attack's process's protocol error, reported as a bug)."""
    for key, value in config.items():
        try:
            protocol.loads(json.dumps({key: value}))
        except (ValueError, TypeError) as exc:
            raise AttackError(f"attack '{protocol.text(spec, 200)}': option {untrusted.line(key)[:80]}="
                              f"{untrusted.line(repr(value))[:80]} cannot be passed to its process ({exc}): numbers "
                              "must be finite and integers within 64 bits") from None
    return config  # its types: the attack's own options (its process says which it expects; 'ready' is checked)


class AttackProcess:
    """One attack run in its own process. Use as a context manager; `meta()`, then `run()`.

    The process runs in the OS sandbox of reconbench.pipeline.isolation.sandbox where there is one
    (`sandbox`: its label for provenance.sandbox, "none" without one). `device`: where the attack
    will run (a CUDA run gets the GPU's device nodes inside the sandbox)."""

    def __init__(self, spec: str, config: dict[str, Any], budget: str = "default", *, device: str | torch.device = "cpu",
                 limits: run_limits.Limits | None = None, describe: bool = False):
        self.spec = spec
        self.describe = describe  # only describe the attack class (`described`), run nothing
        self.limits = limits or run_limits.for_budget(budget)  # recorded as provenance.limits
        self.config = _options(dict(config), spec)
        self.budget = budget
        self.device = torch.device(device)
        self.facts: dict[str, Any] = {}  # what the attack reported about its run (checked by the result schema)
        self.sandbox = sandbox.NONE
        self._meta: AttackMeta | None = None
        self._proc: subprocess.Popen | None = None
        self._conn: Connection | None = None
        self._scratch: tempfile.TemporaryDirectory | None = None
        self._status: int | None = None  # bubblewrap's --json-status-fd (read end)
        self._status_text = ""
        self._init_pidfd: int | None = None  # the sandbox's first process: all others die with it
        self._source_root: Path | None = None  # the user's folder of a bring-your-own attack's files
        self._returned = False  # the attack's result has arrived
        self._stack = contextlib.ExitStack()
        self._relay: Relay | None = None  # the attack's stdout and stderr, relayed
        self._cgroup: run_limits.Cgroup | None = None
        self._monitor: run_limits.Monitor | None = None
        self._tokens, self._refilled = float(PROGRESS_BURST), time.monotonic()
        self._bars_shown = 0
        self._result_bytes = 0  # the most array bytes a result may hold (set by run())
        self._hit: run_limits.LimitExceeded | None = None  # the limit the watch found hit (it then ended the tree)
        self._stop = threading.Event()  # set: the watch stops
        self._watch: threading.Thread | None = None

    def __enter__(self) -> AttackProcess:
        try:
            return self._start()
        except BaseException:
            self.__exit__(None, None, None)  # no half-started process, dumpable restored
            raise

    def _start(self) -> AttackProcess:
        from reconbench.image.attacks import ATTACKS
        from reconbench.core.cache import cache_root

        box = sandbox.choose()
        self._stack.enter_context(not_dumpable())
        self._scratch = tempfile.TemporaryDirectory(prefix="reconbench-attack-")
        scratch, spec, attack_dir = Path(self._scratch.name), self.spec, None
        # A registered attack runs only toolkit code: it may keep its GAN priors in the user's cache.
        cache = cache_root() if spec in ATTACKS else None
        if box is not None and ":" in spec and (source := attack_source(spec)) is not None:
            attack_dir = scratch / "attack"  # exactly the files whose hash the result signs
            copy_source(source.files, attack_dir)
            self._source_root = source.root
            spec = f"{sandbox.ATTACK_ROOT}/{source.entry_file}:{spec.rsplit(':', 1)[1]}"
        ours, theirs = socket.socketpair()
        fd = theirs.detach()
        argv = [sys.executable, "-m", "reconbench.pipeline.isolation.child", str(fd), "0" if box else str(os.getpid()), *_hub_paths()]
        env = _child_env(Path("/tmp") if box else scratch, torch.get_num_threads(), sandboxed=box is not None, cache=cache)
        env["RECONBENCH_ATTACK_PIDS"] = str(self.limits.pids)
        self._cgroup = run_limits.Cgroup(self.limits)
        out_r, out_w = os.pipe()  # the attack's stdout and stderr: relayed, never this process's own
        self._relay = Relay(out_r)
        try:
            with sigint_blocked():
                if box is None:
                    self._proc = subprocess.Popen(argv, pass_fds=(fd,), env=env, stdin=subprocess.DEVNULL, stdout=out_w,
                                                  stderr=out_w, cwd=os.getcwd(), preexec_fn=self._limit_child)
                else:
                    self._proc = self._start_sandboxed(box, argv, fd, env, attack_dir, cache, out_w)
        finally:
            os.close(fd)
            os.close(out_w)
        self._cgroup.verify(self._proc.pid)
        self._monitor = run_limits.Monitor(self.limits, self._proc.pid, self._cgroup)
        self._watch = threading.Thread(target=self._watch_limits, name="attack-limits", daemon=True)
        self._watch.start()
        self._conn = Connection(ours.detach())
        # (an error here: it ended already, e.g. its sandbox could not be set up)
        self._send({"op": "start", "spec": spec, "config": self.config, "budget": self.budget,
                    "threads": torch.get_num_threads(), "describe": self.describe})
        return self

    def _send(self, header: dict, *arrays: np.ndarray, raw: bytes | None = None) -> None:
        """One message to the attack's process (or `raw` bytes: the view). If it is gone, or the watch
        ended it while this waited for the process to read, the error says how it ended."""
        assert self._conn is not None
        try:
            if raw is not None:
                self._conn.send_bytes(raw)
            else:
                protocol.send(self._conn, header, *arrays)
        except OSError:  # a broken pipe, a reset connection
            raise self._gone() from None

    def _limit_child(self) -> None:
        """Between fork and exec of the attack's first process: its cgroup and per-process limits."""
        assert self._cgroup is not None
        self._cgroup.join()
        run_limits.apply_rlimits(run_limits.rlimits(self.limits))

    def _start_sandboxed(self, box: sandbox.Bubblewrap, argv: list[str], fd: int, env: dict, attack_dir: Path | None,
                         cache: Path | None, out_w: int) -> subprocess.Popen:
        writable = []
        if cache is not None:
            (cache / "gan-priors").mkdir(parents=True, exist_ok=True)
            writable.append(str(cache / "gan-priors"))
        self._status, status_w = os.pipe()
        filter_r, filter_w = _filter_pipe()
        try:
            command = box.command(argv, package=Path(__file__).resolve().parents[2], env=env, attack_dir=attack_dir,
                                  devices=sandbox.gpu_devices() if self.device.type == "cuda" else [],
                                  secrets=_secret_paths(), writable=writable, status_fd=status_w, seccomp_fd=filter_r,
                                  tmp_bytes=self.limits.tmp, shm_bytes=self.limits.shm)
            # The child's stdout is the relayed pipe (the child points its own stderr there first
            # thing); bubblewrap's stderr is a pipe read only when the sandbox fails to start.
            proc = subprocess.Popen(command, pass_fds=tuple(f for f in (fd, status_w, filter_r) if f is not None), env={},
                                    stdin=subprocess.DEVNULL, stdout=out_w, stderr=subprocess.PIPE,
                                    preexec_fn=self._limit_child)
        finally:
            for f in (status_w, filter_r, filter_w):
                if f is not None:
                    os.close(f)
        self.sandbox = box.label
        self._proc = proc
        pid = self._status_record("child-pid", timeout=60)
        if pid is None:
            raise sandbox.start_failure(self._stderr())
        with contextlib.suppress(OSError, AttributeError):  # pidfd: Linux 5.3+
            self._init_pidfd = os.pidfd_open(pid)
        return proc

    def _status_record(self, key: str, timeout: float) -> Any:
        """A value from bubblewrap's status stream (JSON objects, one per event); None at its end."""
        assert self._status is not None
        deadline = time.monotonic() + timeout
        while True:
            decoder, text = json.JSONDecoder(), self._status_text.strip()
            while text:
                try:
                    record, end = decoder.raw_decode(text)
                except ValueError:
                    break
                if isinstance(record, dict) and key in record:
                    return record[key]
                text = text[end:].strip()
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._status], [], [], left)[0]:
                return None
            chunk = os.read(self._status, 4096)
            if not chunk:
                return None
            self._status_text += chunk.decode("utf-8", "replace")
            if len(self._status_text) > 65536:
                return None

    def _stderr(self) -> str:
        """What bubblewrap (or the child before it took over the evaluator's stderr) printed."""
        if self._proc is None or self._proc.stderr is None:
            return ""
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self._proc.wait(timeout=10)
            os.set_blocking(self._proc.stderr.fileno(), False)
            return (self._proc.stderr.read(65536) or b"").decode("utf-8", "replace")
        return ""

    def _watch_limits(self) -> None:
        """The limits, checked on a thread of their own every CHECK_EVERY_S, whatever this process is
        doing meanwhile: waiting for a message, reading one the attack sends a byte a minute, sending an
        answer the attack never reads. A limit hit ends the attack's tree, which ends that wait (end of
        file, a broken pipe); the error then names the limit (_gone)."""
        assert self._monitor is not None
        while not self._stop.wait(CHECK_EVERY_S) and not self._returned:
            try:
                self._monitor.check()
            except run_limits.LimitExceeded as exc:
                self._hit = exc
                self._end_tree()
                return

    def _end_tree(self) -> None:
        """Kill the attack's process tree: bubblewrap (its init dies with it, --die-with-parent, and with it
        every process inside); without a sandbox, each process the attack's process started."""
        assert self._proc is not None
        # No sandbox: what the attack's process started goes with it (listed before it dies: then they are
        # orphans, which only the cgroup, where there is one, still holds).
        started = run_limits.tree(self._proc.pid)[1:] if self._init_pidfd is None else []
        if self._proc.poll() is None:
            self._proc.kill()
        for pid in started:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if self._cgroup is not None:
            self._cgroup.kill_all()

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._watch is not None:
            self._watch.join()
        if self._conn is not None:
            self._conn.close()
        if self._proc is not None:
            if self._returned:  # a result came back: its process is exiting; let it (and bubblewrap) end in order
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._proc.wait(timeout=EXIT_GRACE_S)
            self._end_tree()
            self._proc.wait()
            if self._proc.stderr is not None:
                self._proc.stderr.close()
        if self._init_pidfd is not None:  # wait until the sandbox's last process is gone
            select.select([self._init_pidfd], [], [], 30)
            os.close(self._init_pidfd)
            self._init_pidfd = None
        if self._status is not None:
            os.close(self._status)
            self._status = None
        if self._relay is not None:  # every writer is gone with the tree: relay what is left
            self._relay.join()
        if self._cgroup is not None:
            self._cgroup.remove()
        if self._scratch is not None:
            self._scratch.cleanup()
        self._stack.close()

    def _gone(self) -> BaseException:
        """The error for an attack process that ended without a result (or a sandbox that never started)."""
        assert self._proc is not None
        # A process that closed its end of the channel may live on: the watch ends it at a limit.
        code = self._proc.wait()  # 130 or -SIGINT too: the attack's doing (a Ctrl-C interrupts this process itself)
        if self._hit is not None:  # the watch ended the tree
            return AttackError(f"attack '{self._name()}': {self._hit}")
        if self._monitor is not None:
            exit_code = self._status_record("exit-code", timeout=1) if self._status is not None else code
            killed = -exit_code if isinstance(exit_code, int) and exit_code < 0 else (
                exit_code - 128 if isinstance(exit_code, int) and exit_code > 128 else None)
            try:
                self._monitor.after_exit(killed)
            except run_limits.LimitExceeded as exc:
                return AttackError(f"attack '{self._name()}': {exc}")
        said = ""
        if self._status is not None:
            if self._status_record("exit-code", timeout=5) is None:  # the attack's command never ran
                return sandbox.start_failure(self._stderr())
            said = " ".join(self._stderr().split())[-1000:]  # e.g. the interpreter failing before the child's main
        return AttackError(f"attack '{self._name()}': its process exited (code {code}) without a result"
                           + (f": {said}" if said else ""))

    def _name(self) -> str:
        # before its declaration: the spec, whose class name may come from an entry's signed payload (reproduce)
        return self._meta.name if self._meta else protocol.text(self.spec, 200)

    def _recv(self) -> tuple[dict, list[np.ndarray]]:
        assert self._conn is not None and self._proc is not None
        try:
            while not self._conn.poll(CHECK_EVERY_S):
                if self._hit is not None or self._proc.poll() is not None and not self._conn.poll(0):
                    raise EOFError
            if self._hit is not None:  # a stream of messages cannot outrun the watch
                raise EOFError
            header, arrays = protocol.recv(self._conn, 0, limits={"query": protocol.QUERY_BATCH_BYTES,
                                                                  "result": self._result_bytes})
        except (EOFError, ConnectionError):
            raise self._gone() from None
        except protocol.ProtocolError as exc:  # a message cut short because the watch ended the tree: the limit
            raise (self._gone() if self._hit is not None else
                   AttackError(f"attack '{self._name()}': its process broke the protocol: {exc}")) from None
        if header["op"] == "error":
            raise _child_error(header, self._name(), self._source_root, self.limits)
        return header, arrays

    def meta(self) -> AttackMeta:
        """The attack's declared name, paper, family and cells (waits for its process to load it)."""
        if self._meta is None:
            header, _ = self._recv()
            info = header.get("attack")
            if header["op"] != "ready" or not isinstance(info, dict) or not isinstance(header.get("config"), dict):
                raise AttackError(f"attack '{self._name()}': its process broke the protocol (expected 'ready')")
            self._meta = _declared(info, self.spec)
            self.config = _reported_config(header["config"], self._meta.name)
        return self._meta

    def run(self, knowledge: Knowledge, *, seed: int, progress: Progress) -> tuple[np.ndarray, np.ndarray]:
        """Send the view, serve queries and progress until the attack returns (images, labels)."""
        self.meta()
        assert self._conn is not None
        n, shape = knowledge.target_size, tuple(knowledge.input_shape)
        self._result_bytes = n * int(np.prod(shape)) * 4 + n * 8  # images (float32) and labels (int64)
        self._send({}, raw=pickle.dumps(_view(knowledge, seed)))
        remote = _remote_queries(knowledge)
        with contextlib.ExitStack() as bars_stack:
            bars: dict[int, tuple[contextlib.ExitStack, Any]] = {}
            while True:
                header, arrays = self._recv()
                op = header["op"]
                if op == "query":
                    self._answer(remote, header, arrays, knowledge.input_shape)
                elif op == "progress":
                    self._progress(progress, bars, bars_stack, header)
                elif (op == "result" and len(arrays) == 2 and isinstance(header.get("config"), dict)
                      and arrays[0].dtype == np.float32 and arrays[1].dtype == np.int64):
                    self.config = _reported_config(header["config"], self._name())
                    facts = header.get("facts") or {}
                    if not (isinstance(facts, dict) and len(facts) <= 32 and all(
                            isinstance(k, str) and len(k) <= 80 and (v is None or isinstance(v, (bool, int, float)) or
                                                                    (isinstance(v, str) and len(v) <= 2000))
                            for k, v in facts.items())):
                        raise AttackError(f"attack '{self._name()}': its provenance facts must be at most 32 "
                                          "name -> scalar pairs (names up to 80, texts up to 2000 characters)")
                    self.facts = facts
                    self._returned = True
                    return arrays[0], arrays[1]
                else:
                    raise AttackError(f"attack '{self._name()}': unexpected message '{protocol.text(op, 40)}' from its process")

    def _answer(self, remote: dict[str, QueryFunction], header: dict, arrays: list[np.ndarray], shape) -> None:
        assert self._conn is not None
        view = header.get("view")
        if not isinstance(view, str) or view not in remote or len(arrays) != 1 or arrays[0].dtype != np.float32:
            self._send({"op": "refused", "kind": "access",
                        "message": f"scenario gives no black-box query function '{protocol.text(view, 40)}'"})
            return
        try:
            probs = _answer_in_chunks(remote[view], arrays[0])
        except QueryBudgetExceeded as exc:
            self._send({"op": "refused", "kind": "budget", "message": str(exc)})
            return
        except ValueError as exc:
            self._send({"op": "refused", "kind": "shape", "message": str(exc)})
            return
        self._send({"op": "probs", "queries": remote[view].queries}, probs)

    def _progress(self, progress: Progress, bars: dict, stack: contextlib.ExitStack, header: dict) -> None:
        now = time.monotonic()
        self._tokens = min(PROGRESS_BURST, self._tokens + (now - self._refilled) * PROGRESS_RATE)
        self._refilled = now
        self._tokens -= 1
        if self._tokens < 0:
            raise AttackError(f"attack '{self._name()}': its process broke the protocol: more than {PROGRESS_RATE} "
                              f"progress messages a second (bursts of up to {PROGRESS_BURST})")
        ident, event = header.get("id"), header.get("event")
        total, steps = header.get("total", 0), header.get("steps", 0)
        if (type(ident) is not int or event not in ("start", "advance", "end") or type(total) is not int or total < 0
                or type(steps) is not int or steps < 0 or (event == "start") == (ident in bars) or len(bars) >= MAX_BARS
                and event == "start"):
            raise AttackError(f"attack '{self._name()}': its process broke the protocol: bad progress message "
                              f"({protocol.text(json.dumps(header, default=str), 160)})")
        if event == "start" and self._bars_shown >= MAX_BARS_SHOWN:
            bars[ident] = (contextlib.ExitStack(), lambda steps: None)
        elif event == "start":
            self._bars_shown += 1
            bar = contextlib.ExitStack()
            advance = bar.enter_context(progress.task(protocol.text(header.get("description"), 120), total))
            bars[ident] = (stack.enter_context(bar), advance)
        elif event == "advance":
            bars[ident][1](steps)
        else:
            bars.pop(ident)[0].close()


def described(spec: str) -> dict:
    """What `recon-submit attacks file.py:Class` prints, as the attack's own process reports it from the
    sandbox (nothing of the file runs here): every string inert, the shape checked."""
    with AttackProcess(spec, {}, describe=True) as process:
        header, _ = process._recv()
    info = _inert(header.get("details")) if header["op"] == "described" else None
    scalar = (str, int, float, bool, type(None))
    if not (isinstance(info, dict) and all(isinstance(info.get(k), str) for k in ("name", "paper", "family", "variant"))
            and isinstance(info.get("scenarios"), list) and all(isinstance(c, str) for c in info["scenarios"])
            and isinstance(info.get("options"), list) and all(
                isinstance(o, dict) and all(isinstance(o.get(k), str) for k in ("name", "type", "description"))
                and isinstance(o.get("default"), scalar) for o in info["options"])
            and isinstance(info.get("presets"), dict) and all(
                isinstance(v, dict) and all(isinstance(x, scalar) for x in v.values()) for v in info["presets"].values())):
        raise AttackError(f"attack '{protocol.text(spec, 200)}': its process broke the protocol (expected its description)")
    return info


def _inert(value: Any) -> Any:
    """A JSON value from the attack's process with every string (keys too) inert and capped."""
    if isinstance(value, str):
        return protocol.text(value, 2000)
    if isinstance(value, list):
        return [_inert(v) for v in value]
    if isinstance(value, dict):
        return {protocol.text(k, 200): _inert(v) for k, v in value.items()}
    return value


def _answer_in_chunks(query: QueryFunction, images: np.ndarray) -> np.ndarray:
    """The probabilities for one query message, QUERY_CHUNK images at a time into one output array,
    so the evaluator's memory does not grow with the query; the whole message is charged or refused."""
    check_query_shape(tuple(images.shape), query._input_shape)
    n = int(images.shape[0])
    query._charge(n)
    if isinstance(query, LinkedQueryFunction):
        query._shared._charge(n)
    out: np.ndarray | None = None
    for start in range(0, n, QUERY_CHUNK):
        probs = query(torch.from_numpy(images[start:start + QUERY_CHUNK].copy())).float().cpu().numpy()
        if out is None:
            out = np.empty((n, *probs.shape[1:]), np.float32)
        out[start:start + len(probs)] = probs
    return out if out is not None else query(torch.from_numpy(images.copy())).float().cpu().numpy()


def _remote_queries(knowledge: Knowledge) -> dict[str, QueryFunction]:
    """The query functions the attack's process may call: black-box cells only."""
    if knowledge.scenario.access != "black-box":
        return {}
    out = {"query": knowledge.query}
    out.update({k: v for k, v in knowledge.extras.items() if isinstance(v, QueryFunction)})
    return out


def _view(knowledge: Knowledge, seed: int) -> dict:
    """What crosses to the attack's process: public facts, aux data, and in white-box cells the
    module (a copy); black-box query functions cross only as their names."""
    white = knowledge.scenario.access == "white-box"
    model = knowledge.model.cpu() if white else None
    extras: dict[str, object] = {}
    for name, value in knowledge.extras.items():
        if isinstance(value, QueryFunction):
            extras[name] = "remote-query"
        elif white and value is knowledge.model:
            extras[name] = "model"
        elif white:
            extras[name] = to_device(value, "cpu")
        else:
            raise KnowledgeError(f"black-box view holds '{name}', which cannot cross to the attack's process")
    return {
        "track_id": knowledge.track_id, "scenario": str(knowledge.scenario), "num_classes": knowledge.num_classes,
        "input_shape": tuple(knowledge.input_shape), "target_size": knowledge.target_size, "device": str(knowledge.device),
        "budget": knowledge.query.budget, "public": knowledge.public, "model": model,
        "aux": knowledge._aux, "extras": extras, "seed": seed,
    }
