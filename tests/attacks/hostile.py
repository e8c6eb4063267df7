"""Hostile attacks for the sandbox suite (tests/test_sandbox_hostile.py). Each writes what it
obtained to its stderr as one line `HOSTILE-REPORT <json>` (stderr is the evaluator's: the test
reads it with capfd) and, where it returns at all, returns honest zeros."""

from __future__ import annotations

import json
import os
import pickle
import sys
import threading
import time

import torch

from reconbench.image.attacks.base import Attack, Reconstruction

HERE = os.path.dirname(os.path.abspath(__file__))


def report(payload: dict) -> None:
    print("HOSTILE-REPORT " + json.dumps(payload), file=sys.stderr, flush=True)


def zeros(knowledge) -> Reconstruction:
    n = knowledge.target_size
    return Reconstruction(torch.zeros(n, *knowledge.input_shape), torch.zeros(n, dtype=torch.long))


def _probe_in_fresh_interpreter(plan: dict) -> dict:
    """probe.py in a new interpreter started without the subprocess module (no audit event): it has
    no guards at all, only the sandbox around it."""
    return run_fresh("probe.py", json.dumps(plan))


def run_fresh(script: str, *args: str) -> dict:
    """`script` (beside this file) in a new interpreter without guards; it writes JSON to the
    descriptor given as its last argument."""
    import multiprocessing.util

    r, w = os.pipe()
    pid = multiprocessing.util.spawnv_passfds(os.fsencode(sys.executable), [sys.executable, os.path.join(HERE, script),
                                                                           *args, str(w)], (w,))
    os.close(w)
    with os.fdopen(r) as f:
        text = f.read()
    os.waitpid(pid, 0)
    return json.loads(text)


def _probe_by_multiprocessing(plan: dict) -> dict:
    import multiprocessing

    import probe

    ctx = multiprocessing.get_context("spawn")  # a new interpreter, started by _posixsubprocess
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=probe.run_into, args=(plan, theirs))
    proc.start()
    got = ours.recv()
    proc.join()
    return got


class EscapeAll(Attack):
    """Every family at once, from the attack's process (under the guards) and from two fresh
    interpreters it starts itself (no guards): reads, writes, signals, network, keys."""

    name, paper, family = "escape-all", "none", "training"
    scenarios = ("static/black-box/same",)
    defaults = {"plan": "{}"}  # JSON (options are scalars)

    def run(self, knowledge, *, seed, progress):
        import probe

        plan = json.loads(self.config["plan"])
        out: dict = {"in-process": probe.run(plan)}
        started: dict[str, str] = {}

        def start(route, fn):
            try:
                started[route] = repr(fn())[:200]
            except BaseException as exc:  # noqa: BLE001
                started[route] = f"refused: {type(exc).__name__}: {exc}"[:200]

        import ctypes
        import subprocess

        start("subprocess.run", lambda: subprocess.run(["/bin/cat", "/proc/1/environ"], capture_output=True).stdout)
        start("os.system", lambda: os.system("true"))
        start("os.posix_spawn", lambda: os.posix_spawn("/bin/true", ["true"], {}))
        start("ctypes libc system", lambda: ctypes.CDLL(None).system(b"true"))
        start("fork then exec", lambda: _fork_exec())
        for route, fn in (("fresh interpreter", _probe_in_fresh_interpreter), ("multiprocessing spawn", _probe_by_multiprocessing)):
            try:
                out[route] = fn(plan)
            except BaseException as exc:  # noqa: BLE001 - a route that could not even start gets nothing
                started[route] = f"refused: {type(exc).__name__}: {exc}"[:200]
        report({"probes": out, "started": started, "pid": os.getpid()})
        return zeros(knowledge)


def _fork_exec():
    pid = os.fork()  # not refused by the guards; exec in the child is
    if pid == 0:
        try:
            os.execv("/bin/true", ["true"])
        finally:
            os._exit(7)
    return os.waitpid(pid, 0)[1] >> 8


LINGER = r'''
import os, sys, time
os.setsid()
if os.fork():
    os._exit(0)
marker, out = sys.argv[1], sys.argv[2]
end = time.time() + 20
while time.time() < end:  # edit the signed files, drop a file beside them
    for name, mode in (("reconstructions.safetensors", "r+b"), (marker, "wb")):
        try:
            with open(os.path.join(out, name), mode) as f:
                f.write(b"tampered")
        except OSError:
            pass
    time.sleep(0.1)
'''


class Outlive(Attack):
    """Leaves processes and threads behind to edit the signed result after the run; makes
    `queries` queries and claims `claimed`."""

    name, paper, family = "outlive", "none", "training"
    scenarios = ("static/black-box/same",)
    defaults = {"out_dir": "", "marker": "", "queries": 30, "claimed": 7}

    def run(self, knowledge, *, seed, progress):
        import multiprocessing.util

        out, marker = self.config["out_dir"], self.config["marker"]
        for _ in range(self.config["queries"]):
            knowledge.query(torch.rand(1, *knowledge.input_shape))
        pid = multiprocessing.util.spawnv_passfds(os.fsencode(sys.executable), [sys.executable, "-c", LINGER, marker, out], ())
        os.waitpid(pid, 0)  # the first child exits at once; its setsid'd child lives on

        def tamper():
            end = time.time() + 20
            while time.time() < end:
                try:
                    with open(os.path.join(out, "reconstructions.safetensors"), "r+b") as f:
                        f.write(b"tampered")
                except OSError:
                    pass
                time.sleep(0.1)

        threading.Thread(target=tamper, daemon=True).start()
        threading.Thread(target=tamper, daemon=False).start()  # keeps the interpreter alive after returning
        self.config["queries"] = self.config["claimed"]  # a lie in the recorded config
        rec = zeros(knowledge)
        rec.provenance["queries"] = self.config["claimed"]  # and in the attack's facts
        report({"pid": os.getpid(), "queries_seen": knowledge.query.queries})
        return rec


class Bomb:
    """Runs a command wherever it is unpickled."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class Messages(Attack):
    """Takes over the socket to the evaluator and sends one forged message (config `case`)."""

    name, paper, family = "messages", "none", "training"
    scenarios = ("static/black-box/same",)
    defaults = {"case": "pickle", "marker": "/nonexistent"}

    def run(self, knowledge, *, seed, progress):
        conn = knowledge.query._conn  # the RemoteQuery's connection: the one channel out
        case = self.config["case"]
        n = knowledge.target_size
        shape = [n, *knowledge.input_shape]
        half = [max(1, n // 2), *knowledge.input_shape]
        header = {
            "pickle": None,
            "huge-header": None,
            "nested": None,
            "nan": b'{"op": "result", "config": {}, "facts": {"x": NaN}, "arrays": []}',
            "many-arrays": {"op": "result", "config": {}, "arrays": [{"dtype": "float32", "shape": [1]}] * 3},
            "giant-array": {"op": "query", "view": "query", "arrays": [{"dtype": "float32", "shape": [1 << 20, 1 << 20]}]},
            "object-dtype": {"op": "result", "config": {}, "arrays": [{"dtype": "object", "shape": [1]}]},
            "short-array": {"op": "query", "view": "query", "arrays": [{"dtype": "float32", "shape": [1, 1, 8, 8]}]},
            # int64 images in half the rows: the bytes a result may hold, the wrong dtype
            "int-images": {"op": "result", "config": {}, "facts": {}, "arrays": [{"dtype": "int64", "shape": half},
                                                                                 {"dtype": "int64", "shape": [n]}]},
            "overflow-float": b'{"op": "result", "config": {"lr": 1e999}, "facts": {}, "arrays": []}',
            "long-integer": b'{"op": "result", "config": {"steps": ' + b"9" * 4000 + b'}, "facts": {}, "arrays": []}',
            "huge-dim": {"op": "query", "view": "query", "arrays": [{"dtype": "float32", "shape": [0, 2 ** 70, 8, 8]}]},
            "big-dim": {"op": "query", "view": "query", "arrays": [{"dtype": "float32", "shape": [0, 2 ** 40, 8, 8]}]},
            "bad-progress": {"op": "progress", "event": "advance", "id": 99, "steps": 1},
            "progress-flood": None,
        }[case]
        # Reported before sending: the evaluator refuses a message as soon as its header is bad and kills
        # this process, which may then still be blocked in a send the evaluator never finished reading.
        report({"sent": case})
        if case == "pickle":
            conn.send_bytes(pickle.dumps(Bomb(self.config["marker"])))
        elif case == "huge-header":
            conn.send_bytes(b'{"op": "result", "pad": "' + b"x" * (1 << 22) + b'"}')
        elif case == "nested":
            conn.send_bytes(b"[" * 60000 + b"]" * 60000)
        elif case == "progress-flood":
            conn.send_bytes(json.dumps({"op": "progress", "event": "start", "id": 0, "description": "x", "total": 1}).encode())
            for _ in range(200_000):
                conn.send_bytes(b'{"op": "progress", "event": "advance", "id": 0, "steps": 1}')
        elif isinstance(header, bytes):
            conn.send_bytes(header)
        else:
            conn.send_bytes(json.dumps(header).encode())
            if case == "short-array":
                conn.send_bytes(b"\0" * 16)  # 16 bytes where 256 were declared
            if case == "int-images":
                conn.send_bytes(b"\0" * (8 * int(torch.tensor(half).prod())))
                conn.send_bytes(b"\0" * (8 * n))
        time.sleep(60)  # the evaluator must refuse, end the run and kill this process long before
        return zeros(knowledge)
