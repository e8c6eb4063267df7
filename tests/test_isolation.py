"""The process boundary (issue 12, item 4): the attack runs in its own process with only its view.

A hostile black-box attack (tests/attacks/escape.py) tries every route we could think of to the
parameters, the private splits and the evaluator's process, and reports what it reached."""

import functools
import json
import os
import pickle
import shutil
from importlib import resources
from multiprocessing import Pipe
from pathlib import Path

import numpy as np
import pytest
import torch

from reconbench.image.attacks import AttackError, Progress
from reconbench.image.evaluation import attack_run
from reconbench.pipeline.isolation import protocol
from reconbench.image.knowledge import KnowledgeError
from reconbench.core.tracks import get_track

ATTACKS_DIR = Path(__file__).parent / "attacks"
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def track():
    return get_track("digits")


def _run(track, spec, scenario=None, config=None, progress=None, isolate=True):
    return attack_run(track, spec, scenario, config=config or {}, seed=0, device=CPU, progress=progress or Progress(),
                      isolate=isolate)


BWRAP = pytest.mark.skipif(os.environ.get("RECONBENCH_SANDBOX") != "bubblewrap" and shutil.which("bwrap") is None,
                           reason="bubblewrap is not installed")


@pytest.mark.parametrize("scenario, box", [("static/black-box/same", "none"), pytest.param("static/black-box/same", "bubblewrap", marks=BWRAP),
                                           pytest.param("dynamic/black-box/same", "bubblewrap", marks=BWRAP)])
def test_hostile_black_box_attack_reaches_nothing(track, scenario, box, tmp_path, monkeypatch, capfd):
    """The process boundary holds with and without the OS sandbox (tests/test_sandbox_hostile.py
    covers what only the sandbox stops); the guards turn the Python routes into friendly errors."""
    monkeypatch.setenv("RECONBENCH_SANDBOX", box)
    hub = tmp_path / "hf"  # the evaluator's Hub cache, holding a "downloaded" weight file
    (hub / "hub" / "models--x--target" / "blobs").mkdir(parents=True)
    (hub / "hub" / "models--x--target" / "blobs" / "abc").write_bytes(b"secret weights")
    monkeypatch.setenv("HF_HOME", str(hub))
    package = str(resources.files("reconbench"))
    run = _run(track, f"{ATTACKS_DIR / 'escape.py'}:Escape", scenario, {"hub_cache": str(hub), "package": package})
    assert str(run.scenario) == scenario and run.sandbox.startswith(box)
    (line,) = [x for x in capfd.readouterr().err.splitlines() if x.startswith("HOSTILE-REPORT ")]
    seen = json.loads(line.split(" ", 1)[1])
    assert seen["found"] == {}, f"the attack reached: {seen['found']}"
    refused = seen["refused"]
    for route, why in [("knowledge.model", "black-box"), ("query[0]._model", "probabilities only"),
                       ("import reconbench.core.tracks", "may not open"), ("import huggingface_hub", "may not open"),
                       ("import reconbench.tracks (old name)", "may not open"),
                       ("import reconbench.data.digits (old name)", "may not open"),
                       ("open data/digits/cnn.safetensors", "may not open"), ("open registry/tracks.json", "may not open"),
                       ("os.open data/digits/cnn.safetensors", "may not open"),
                       ("open /proc/ppid/mem", "may not open"), ("subprocess cat", "may not do"),
                       ("os.system", "may not do"), ("ctypes libc open", "through ctypes"),
                       ("socket connect", "may not do"), ("forged pipe message", "no black-box query function 'model'")]:
        assert why in refused.get(route, ""), f"{route}: {refused.get(route)}"
    if box == "none":
        assert "may not open" in refused["hub cache (evaluator's)"]
        # Native code is not audited; the kernel still refuses the evaluator's /proc entries.
        assert "torch.from_file /proc/ppid/environ" in refused
        # The documented limit without the sandbox: a file that is public on disk can be read natively.
        assert set(seen["public"]) <= {"native read of the shipped weights (public)"}
    else:  # the sandbox: the evaluator's Hub cache and the shipped weights are not there at all
        assert "hub cache (evaluator's)" not in seen["found"]
        assert seen["public"] == {} and "No such file" in refused["native read of the shipped weights (public)"]
    if scenario.startswith("dynamic"):
        assert {"query[1]._model", "query[2]._model"} <= set(refused)
    assert run.knowledge.query.queries == 0  # the forged message was refused, not answered


def test_black_box_queries_are_counted_in_the_evaluator_and_progress_crosses(track):
    events = []

    def factory(description, total):
        from contextlib import contextmanager

        @contextmanager
        def bar():
            events.append(("start", description, total))
            yield lambda steps=1: events.append(("advance", steps))
            events.append(("end", description))

        return bar()

    run = _run(track, f"{ATTACKS_DIR / 'peek.py'}:Counting", config={"chunks": 3}, progress=Progress(factory))
    assert run.knowledge.query.queries == 40  # counted in this process: 3 chunks of 10, then 10 labels
    assert run.config["seen"] == 40  # and the attack's mirror of the count agrees
    assert events[0] == ("start", "counting: querying", 3) and events[-1] == ("end", "counting: querying")
    assert sum(e[1] for e in events if e[0] == "advance") == 3
    assert run.reconstruction.images.shape == (500, 1, 8, 8)


@pytest.mark.parametrize("attack, message", [
    ("PeekingBlackBox", r"black-box: the model's parameters are not available"),
    ("Crashing", r"^the attack 'crash' failed at \S+peek.py:\d+: KeyError: 'no such key'$"),
    ("Dies", r"^attack 'dies': its process exited \(code 3\) without a result$"),
])
def test_errors_in_the_attack_process_come_back_as_one_line(track, attack, message):
    with pytest.raises((AttackError, KnowledgeError), match=message) as info:
        _run(track, f"{ATTACKS_DIR / 'peek.py'}:{attack}")
    assert "\n" not in str(info.value)
    if attack == "Crashing":  # the attack process's traceback rides along for --debug
        assert 'return {}["no such key"]' in str(info.value.__cause__)


@pytest.mark.portable
def test_isolated_runs_give_the_same_reconstructions_as_in_process(track):
    """White-box (module crosses) and black-box (queries cross) runs are bit-identical to in-process,
    whatever kernels the evaluator is held to (the attack's process inherits ATEN_CPU_CAPABILITY, oneDNN's
    and MKL's settings: under `make test-portable` the two sides ran different kernels before)."""
    for attack, config in [("mi-face", {"iterations": 5}), ("inv-alignment", {"epochs": 2})]:
        a = _run(track, attack, config=config, isolate=False)
        b = _run(track, attack, config=config)
        assert torch.equal(a.reconstruction.images, b.reconstruction.images), attack
        assert torch.equal(a.reconstruction.labels, b.reconstruction.labels) and a.config == b.config
        assert a.knowledge.query.queries == b.knowledge.query.queries


def test_the_evaluator_never_unpickles_what_the_attack_sends(tmp_path):
    marker = tmp_path / "pwned"

    class Bomb:
        def __reduce__(self):
            return (Path.touch, (marker,))

    ours, theirs = Pipe()
    theirs.send_bytes(pickle.dumps(Bomb()))
    with pytest.raises(protocol.ProtocolError, match="malformed message header"):
        protocol.recv(ours)
    assert not marker.exists()
    theirs.send_bytes(json.dumps({"op": "result", "arrays": [{"dtype": "object", "shape": [1]}]}).encode())
    with pytest.raises(protocol.ProtocolError, match="bad array declaration"):
        protocol.recv(ours)
    theirs.send_bytes(json.dumps({"op": "query", "arrays": [{"dtype": "float32", "shape": [1 << 20, 1 << 20]}]}).encode())
    with pytest.raises(protocol.ProtocolError, match="over the"):
        protocol.recv(ours)
    for raw, message in [
        (b"[" * 100000 + b"]" * 100000, "malformed message header"),  # nesting past the parser's recursion limit
        (json.dumps({"op": "x", "a": functools.reduce(lambda inner, _: [inner], range(18), 1)}).encode(), "nested deeper than 16"),
        (b'{"op": "result", "facts": {"x": NaN}}', "malformed message header"),
        (b'{"op": "result", "pad": "' + b"x" * 70000 + b'"}', "malformed message header"),  # over 64 KiB, refused unread
        (json.dumps({"op": "result", "arrays": [{"dtype": "float32", "shape": [1]}] * 3}).encode(), "3 arrays declared"),
        (json.dumps({"op": "result", "arrays": [{"dtype": "float32", "shape": [(1 << 27) + 1]}] * 2}).encode(), "over the"),  # each fits, not both
    ]:
        ours, theirs = Pipe()
        theirs.send_bytes(raw)
        with pytest.raises(protocol.ProtocolError, match=message):
            protocol.recv(ours)
    ours, theirs = Pipe()
    protocol.send(theirs, {"op": "probs"}, np.ones((2, 3), np.float32))
    header, arrays = protocol.recv(ours)
    assert header == {"op": "probs"} and arrays[0].shape == (2, 3)


PRELOAD_PROBE = """
import sys, json
from pathlib import Path
from reconbench.pipeline.isolation import parent
from reconbench.core.signing import generate_key
import reconbench.image.evaluation as ev
seen = {}
run = parent.AttackProcess.run
def snapshot(self, *a, **k):  # the attack's process is started and about to get its view
    seen["before"] = set(sys.modules)
    return run(self, *a, **k)
parent.AttackProcess.run = snapshot
leave = parent.AttackProcess.__exit__
def ended(self, *exc):
    leave(self, *exc)
    seen["ended"] = True
parent.AttackProcess.__exit__ = ended
load = ev.load_private_key
def loaded(path):
    seen["key loaded after the attack ended"] = seen.get("ended", False)
    return load(path)
ev.load_private_key = loaded
out = Path(sys.argv[1])
key, _ = generate_key(out / "k.pem")
ev.evaluate(attack_spec="mi-face", key_path=key, out=out / "r", config={"iterations": 2}, command="test")
print(json.dumps({"imported after": sorted(set(sys.modules) - seen["before"]),
                  "key loaded after the attack ended": seen["key loaded after the attack ended"],
                  "never needed": [m for m in ("scipy.stats", "pandas", "reconbench.leaderboard") if m in sys.modules]}))
"""


def test_the_evaluator_imports_nothing_after_the_attack_started_and_loads_the_key_after_it_ended(tmp_path):
    """Scoring, writing and signing import nothing new once the attack's process runs (in a fresh
    interpreter, so that no other test has imported it first): a module the attack's run could
    have planted is never loaded into the process that signs. The signing key is read only after
    the attack's process (and its sandbox) has ended."""
    import subprocess
    import sys

    toolkit = Path(__file__).resolve().parents[1] / "toolkit"
    proc = subprocess.run([sys.executable, "-c", PRELOAD_PROBE, str(tmp_path)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(toolkit)}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # and what it imports is what it needs: not scipy.stats (Poisson comes from scipy.special: 0.4-1 CPU-s
    # of every run's start) nor the site builder (benchmarks/bench_fixed_cost_parts.py)
    assert json.loads(proc.stdout.splitlines()[-1]) == {"imported after": [], "key loaded after the attack ended": True,
                                                         "never needed": []}
