"""The attack's process: `python -m reconbench.pipeline.isolation.child FD` (started by isolation.parent).

It installs the guards, loads the attack, reports the attack's declared cells, receives the view
its scenario allows, runs the attack and sends the reconstructions back. Black-box access is a
`RemoteQuery`: images go to the evaluator's process, probabilities come back, and the evaluator
counts them against the budget.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from multiprocessing.connection import Connection

from reconbench.pipeline.isolation import guards, protocol


class RemoteQuery:
    """Black-box access from the attack's process: only a pipe to the evaluator, no model."""

    def __init__(self, conn: Connection, view: str, input_shape: tuple[int, ...], budget: int):
        self._conn = conn
        self._view = view
        self._input_shape = tuple(input_shape)
        self.budget = budget
        self.queries = 0  # the evaluator's count for this view, as of the last answer

    def __call__(self, x):
        import numpy as np
        import torch

        from reconbench.core.queries import QueryBudgetExceeded, check_query_shape

        check_query_shape(tuple(x.shape), self._input_shape)
        images = np.asarray(x.detach().float().cpu().numpy(), np.float32)
        # One message holds at most protocol.QUERY_BATCH_BYTES of images: a larger query goes in
        # batches (checked against the budget first, so that it is refused whole, as the evaluator would).
        step = max(1, protocol.QUERY_BATCH_BYTES // max(1, images[0].nbytes if len(images) else 1))
        if len(images) > step and self.queries + len(images) > self.budget:
            raise QueryBudgetExceeded(f"query budget of {self.budget} images exhausted ({self.queries} used, "
                                      f"{len(images)} asked)")
        answers = [self._ask(images[i:i + step]) for i in range(0, max(len(images), 1), step)]
        probs = answers[0] if len(answers) == 1 else np.concatenate(answers)
        return torch.from_numpy(probs).to(x.device if x.device.type != "meta" else "cpu")

    def _ask(self, images):
        from reconbench.core.queries import KnowledgeError, QueryBudgetExceeded

        protocol.send(self._conn, {"op": "query", "view": self._view}, images)
        header, arrays = protocol.recv(self._conn)
        if header["op"] == "refused":
            kind = {"budget": QueryBudgetExceeded, "shape": ValueError}.get(header.get("kind"), KnowledgeError)
            raise kind(protocol.text(header.get("message")))
        self.queries = int(header["queries"])
        return arrays[0].copy()

    def __getattr__(self, name: str):
        from reconbench.core.queries import KnowledgeError

        raise KnowledgeError(f"black-box access gives output probabilities only, not '{name}'")


class RemoteProgress:
    """A Progress whose bars are drawn by the evaluator (advances sent at most every 0.1 s)."""

    def __init__(self, conn: Connection):
        self._conn = conn
        self._next = 0

    def task(self, description: str, total: int):
        from contextlib import contextmanager

        @contextmanager
        def bar():
            ident, self._next = self._next, self._next + 1
            protocol.send(self._conn, {"op": "progress", "event": "start", "id": ident, "description": str(description),
                                       "total": int(total)})
            pending, last = [0], [time.monotonic()]

            def advance(steps: int = 1) -> None:
                pending[0] += int(steps)
                if time.monotonic() - last[0] >= 0.1:
                    protocol.send(self._conn, {"op": "progress", "event": "advance", "id": ident, "steps": pending[0]})
                    pending[0], last[0] = 0, time.monotonic()

            try:
                yield advance
            finally:
                if pending[0]:
                    protocol.send(self._conn, {"op": "progress", "event": "advance", "id": ident, "steps": pending[0]})
                protocol.send(self._conn, {"op": "progress", "event": "end", "id": ident})

        return bar()


def _limit_hit(exc: BaseException) -> str | None:
    """Which of the run's limits an error shows was hit: memory (RLIMIT_DATA or the cgroup refused an
    allocation), or a full /tmp or /dev/shm (bubblewrap's --size)."""
    import errno

    seen = exc
    while seen is not None:
        if isinstance(seen, MemoryError) or "can't allocate memory" in str(seen) or type(seen).__name__ == "OutOfMemoryError":
            return "memory"
        if isinstance(seen, OSError) and seen.errno == errno.ENOSPC:
            full = [name for name, path in (("shm", "/dev/shm"), ("tmp", "/tmp")) if _full(path)]
            return full[0] if full else "tmp"
        seen = seen.__cause__ or seen.__context__
    return None


def _full(path: str) -> bool:
    try:
        st = os.statvfs(path)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 1 << 20


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    return f"{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""


def to_device(value, device):
    """Tensors of a white-box view (e.g. ObservedGradients) onto the attack's device."""
    import dataclasses

    import torch

    if isinstance(value, torch.Tensor | torch.nn.Module):
        return value.to(device)
    if isinstance(value, tuple | list):
        return type(value)(to_device(v, device) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: to_device(getattr(value, f.name), device)
                                             for f in dataclasses.fields(value) if f.init})
    return value


def _build_view(conn: Connection, view: dict):
    import torch

    from reconbench.image.knowledge import Knowledge, QueryFunction
    from reconbench.core.scenario import Scenario

    device = torch.device(view["device"])
    shape = tuple(view["input_shape"])
    model = view["model"].to(device).eval() if view["model"] is not None else None
    if model is not None:  # white-box: the module itself is given, so queries are local
        query = QueryFunction(model, shape, view["budget"], device)
    else:
        query = RemoteQuery(conn, "query", shape, view["budget"])
    extras: dict[str, object] = {}
    for name, value in view["extras"].items():
        if value == "remote-query":
            extras[name] = RemoteQuery(conn, name, shape, view["budget"])
        elif value == "model":
            extras[name] = model
        else:
            extras[name] = to_device(value, device)
    return Knowledge(track_id=view["track_id"], scenario=Scenario.parse(view["scenario"]), num_classes=view["num_classes"],
                     input_shape=shape, target_size=view["target_size"], device=device, query=query, public=view["public"],
                     _model=model, _aux=view["aux"], extras=extras)


def serve(conn: Connection) -> None:
    import pickle

    start, _ = protocol.recv(conn)
    import torch

    torch.set_num_threads(int(start["threads"]))
    from reconbench.image.attacks import enforce_size, load_attack

    if ":" in start["spec"]:  # a bring-your-own attack may import the modules beside it
        sys.path.insert(0, os.path.dirname(os.path.abspath(start["spec"].rsplit(":", 1)[0])))
    cls = load_attack(start["spec"])
    if start.get("describe"):  # `recon-submit attacks file.py:Class`: the class described, nothing run
        from reconbench.core.attack_options import details

        protocol.send(conn, {"op": "described", "details": details(cls)})
        return
    attack = cls(budget=start["budget"], **start["config"])
    meta = {"name": cls.name, "paper": cls.paper, "family": cls.family, "scenarios": list(cls.scenarios),
            "version": cls.version, "code": cls.code_reference()}
    protocol.send(conn, {"op": "ready", "attack": meta, "config": dict(attack.config)})
    view = pickle.loads(conn.recv_bytes())  # from the evaluator: trusted
    knowledge = _build_view(conn, view)
    torch.manual_seed(view["seed"])
    rec = attack.run(knowledge, seed=view["seed"], progress=RemoteProgress(conn))
    # The same checks as the evaluator's (which repeats them on what arrives): clear messages from here.
    rec = enforce_size(rec, knowledge.target_size, knowledge.input_shape)
    images = rec.images.detach().float().cpu().numpy()
    labels = rec.labels.detach().cpu().numpy().astype("int64")
    facts = dict(getattr(rec, "provenance", None) or {})  # e.g. a cached GAN prior's key (JSON scalars)
    protocol.send(conn, {"op": "result", "config": dict(attack.config), "facts": facts}, images, labels)


def main() -> None:
    # stdout is the evaluator's stderr; stderr may be bubblewrap's pipe, read only if the sandbox fails
    # to start: from here on the attack's warnings and prints reach the user's terminal.
    os.dup2(1, 2)
    fd, parent_pid = int(sys.argv[1]), int(sys.argv[2])  # parent_pid 0: in the sandbox (another PID namespace)
    hub_paths = sys.argv[3:]
    if not parent_pid and os.environ.get("RECONBENCH_ATTACK_PIDS", "").isdigit():  # in the sandbox: see limits.limit_tasks
        from reconbench.pipeline.isolation.limits import limit_tasks

        limit_tasks(int(os.environ["RECONBENCH_ATTACK_PIDS"]))
    guards.install(parent_pid, hub_paths)
    conn = Connection(fd)
    try:
        serve(conn)
    except BaseException as exc:  # one clear message back to the evaluator, whatever happened
        from reconbench.core.errors import describe  # the CLI's one-line form: "the attack 'x' failed at file:line: ..."

        try:
            protocol.send(conn, {"op": "error", "type": type(exc).__name__, "message": protocol.text(str(exc)),
                                 "limit": _limit_hit(exc),
                                 "where": _where(exc), "line": protocol.text(describe(exc).split("\n", 1)[0]),
                                 "traceback": protocol.text("".join(traceback.format_exception(exc)), 20000, lines=True)})
        except Exception:
            pass
        sys.exit(1)
    finally:
        conn.close()


if __name__ == "__main__":
    main()
