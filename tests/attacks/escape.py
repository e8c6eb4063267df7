"""A black-box attack that tries every way we could think of to reach the target's parameters,
the private splits, or the evaluator's process, and writes what it reached to a JSON report
(tests/test_isolation.py reads it). Each route is tried in its own try block."""

import gc
import importlib
import json
import os
import pickle
import sys
import types

import torch
from torch import nn

from reconbench.image.attacks.base import Attack, Reconstruction

PACKAGE_FILES = ("data/digits/cnn.safetensors", "data/digits/mlp.safetensors", "registry/tracks.json")


def _suspicious(obj) -> str | None:
    """A module or parameter (anything with weights) that the attack did not make itself."""
    if isinstance(obj, nn.Module) and any(True for _ in obj.parameters()):
        return f"module {type(obj).__name__}"
    if isinstance(obj, nn.Parameter):
        return f"parameter {tuple(obj.shape)}"
    return None


class Escape(Attack):
    name, paper, family = "escape", "none", "training"
    scenarios = ("static/black-box/same", "dynamic/black-box/same")
    defaults = {"hub_cache": "", "package": ""}

    def run(self, knowledge, *, seed, progress):
        found: dict[str, str] = {}  # route -> what it reached (must stay empty, see the test)
        public: dict[str, str] = {}  # public files on disk read by native code (the documented limit)
        refused: dict[str, str] = {}  # route -> the error that stopped it

        def attempt(route, fn, into=found):
            try:
                got = fn()
            except BaseException as exc:  # noqa: BLE001 - every refusal is recorded
                refused[route] = f"{type(exc).__name__}: {exc}"[:300]
                return
            if got:
                into[route] = str(got)[:300]

        queries = [knowledge.query] + [knowledge.extras[k] for k in knowledge.extras]
        attempt("knowledge.model", lambda: knowledge.model)
        attempt("knowledge._model", lambda: knowledge._model)
        for i, q in enumerate(queries):
            attempt(f"query[{i}]._model", lambda q=q: q._model)
            attempt(f"query[{i}].parameters()", lambda q=q: list(q.parameters()))
            attempt(f"query[{i}].__dict__", lambda q=q: [_suspicious(v) for v in vars(q).values() if _suspicious(v)])
            attempt(f"query[{i}] pickled", lambda q=q: b"Parameter" in pickle.dumps(q) or b"state_dict" in pickle.dumps(q))
            attempt(f"query[{i}].__reduce_ex__", lambda q=q: [_suspicious(v) for v in q.__reduce_ex__(2)[2:] if _suspicious(v)])
        attempt("knowledge.__dict__", lambda: [k for k, v in vars(knowledge).items() if _suspicious(v)])
        attempt("knowledge pickled", lambda: b"Parameter" in pickle.dumps({k: v for k, v in vars(knowledge).items()
                                                                             if k not in ("query", "extras")}))
        attempt("gc.get_objects", lambda: sorted({s for o in gc.get_objects() if (s := _suspicious(o))}))
        attempt("gc tensors with grad-able storage", lambda: [tuple(o.shape) for o in gc.get_objects()
                                                              if isinstance(o, torch.Tensor) and o.requires_grad])

        def frames():
            out, f = [], sys._getframe()
            while f is not None:
                out += [f"{f.f_code.co_name}:{k}" for k, v in f.f_locals.items() if _suspicious(v)]
                f = f.f_back
            return out

        attempt("stack frames", frames)

        def closures():
            out = []
            for fn in (o for o in gc.get_objects() if isinstance(o, types.FunctionType) and o.__closure__):
                for cell in fn.__closure__:
                    try:
                        if _suspicious(cell.cell_contents):
                            out.append(fn.__qualname__)
                    except ValueError:
                        pass
            return out

        attempt("closures", closures)
        attempt("sys.modules registry", lambda: [m for m in ("reconbench.core.tracks", "reconbench.core.hub", "reconbench.zoo",
                                                              "reconbench.image.data.digits", "reconbench.image.evaluation",
                                                              "huggingface_hub", "reconbench.image.metrics") if m in sys.modules])
        attempt("import reconbench.core.tracks", lambda: importlib.import_module("reconbench.core.tracks").load_target_model)
        attempt("import reconbench.image.data.digits", lambda: importlib.import_module("reconbench.image.data.digits").digits_splits())
        attempt("import reconbench.image.models.embedded", lambda: importlib.import_module("reconbench.image.models.embedded"))
        # the old names (reconbench.core.moved) lead to the same files
        attempt("import reconbench.tracks (old name)", lambda: importlib.import_module("reconbench.tracks").get_track)
        attempt("import reconbench.data.digits (old name)", lambda: importlib.import_module("reconbench.data.digits"))
        attempt("import huggingface_hub", lambda: importlib.import_module("huggingface_hub"))
        attempt("__import__ tracks", lambda: __import__("reconbench.core.tracks", fromlist=["get_track"]).get_track("digits"))
        package = self.config["package"]
        for rel in PACKAGE_FILES:
            path = os.path.join(package, rel)
            attempt(f"open {rel}", lambda p=path: len(open(p, "rb").read()))
            attempt(f"os.open {rel}", lambda p=path: os.read(os.open(p, os.O_RDONLY), 10))
        attempt("io.open_code weights", lambda: len(__import__("io").open_code(os.path.join(package, PACKAGE_FILES[0])).read()))
        hub = self.config["hub_cache"]

        def hub_files():
            got = []
            for root, _, files in os.walk(hub):
                for name in files:
                    got.append(open(os.path.join(root, name), "rb").read())
            return got

        attempt("hub cache (evaluator's)", hub_files)
        attempt("hub cache (env in this process)", lambda: os.environ.get("HF_HOME", "").startswith(hub) and hub)
        ppid = os.getppid()
        for what in ("mem", "environ", "maps", "fd/0"):
            attempt(f"open /proc/ppid/{what}", lambda w=what: open(f"/proc/{ppid}/{w}", "rb").read(16))
        # Native reads (no audit event): the kernel must refuse the evaluator's /proc entries.
        attempt("torch.from_file /proc/ppid/environ", lambda: torch.from_file(f"/proc/{ppid}/environ", size=16,
                                                                              dtype=torch.uint8).tolist())
        attempt("subprocess cat", lambda: __import__("subprocess").run(["cat", f"/proc/{ppid}/environ"], capture_output=True).stdout)
        attempt("os.system", lambda: os.system("true") == 0)
        attempt("ctypes libc open", lambda: __import__("ctypes").CDLL(None).open)
        attempt("socket connect", lambda: __import__("socket").create_connection(("127.0.0.1", 9), timeout=1))
        attempt("forged pipe message", lambda: knowledge.extras.get("query_after", knowledge.query).__class__(
            knowledge.query._conn, "model", knowledge.input_shape, 10)(torch.rand(1, *knowledge.input_shape)))
        # The documented limit: a public file, read by native code (the audit hook cannot see it).
        weights = os.path.join(package, PACKAGE_FILES[0])
        attempt("native read of the shipped weights (public)", lambda: torch.from_file(weights, size=8, dtype=torch.uint8).tolist(),
                into=public)

        # To the evaluator's stderr (tests/test_isolation.py reads it): in the sandbox no host path is writable.
        print("HOSTILE-REPORT " + json.dumps({"found": found, "public": public, "refused": refused, "pid": os.getpid()}),
              file=sys.stderr, flush=True)
        n = knowledge.target_size
        return Reconstruction(torch.zeros(n, *knowledge.input_shape), torch.zeros(n, dtype=torch.long))
