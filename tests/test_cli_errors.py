"""One line per error (issue 15 items 1 and 2): the console script in a subprocess, as a user runs it.

Each case asserts the exact kind of message, the exit code, and, for the checks made before a run,
that the attack's run() was never entered (it would print a marker line: the attack runs in the
sandbox, where its stdout and stderr, the user's terminal, are its only way to say anything).
"""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from cli_process import one_error_line, recon

RAN = "reconbench-test-ran"  # the line an attack's run() prints first (then the pid it runs as)
ATTACKS = textwrap.dedent('''
    import os, sys, time
    from pathlib import Path
    import torch
    from reconbench.image.attacks.base import Attack, Reconstruction

    class Boom(Attack):
        name = "boom"; paper = "test"; family = "optimization"; scenarios = ("static/white-box/none",)
        def run(self, knowledge, *, seed, progress):
            print("reconbench-test-ran", file=sys.stderr, flush=True)
            return helper()

    def helper():
        raise ValueError("exploded on purpose")

    class NoRun(Attack):
        name = "norun"; paper = "test"; family = "optimization"; scenarios = ("static/white-box/none",)

    class Magic(Boom):
        family = "magic"

    class Clash(Boom):
        name = "mi-face"

    class BadName(Boom):
        name = "My Attack"

    class Peek(Boom):
        def run(self, knowledge, *, seed, progress):
            return knowledge.aux_data

    class Pair(Boom):
        def run(self, knowledge, *, seed, progress):
            return torch.zeros(3, 1, 8, 8), torch.zeros(3, dtype=torch.int64)

    class Slow(Boom):
        def run(self, knowledge, *, seed, progress):
            from sklearn.cluster import KMeans  # asks loky for the core count (no warning may reach stderr)
            KMeans(2, n_init=1, random_state=0).fit(torch.rand(20, 2).numpy())
            print("reconbench-test-ran", file=sys.stderr, flush=True)
            time.sleep(120)
''')


pytestmark = pytest.mark.slow  # a minute or more of CPU: the slow set (make test-slow; benchmarks/bench_test_split.py)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli-errors")
    (d / "att.py").write_text(ATTACKS)
    return d


def _ran(proc) -> tuple[subprocess.CompletedProcess, bool]:
    """The process without the attack's marker line, and whether its run() printed it."""
    lines = proc.stderr.splitlines(keepends=True)
    kept = [line for line in lines if line.strip() != RAN]
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout, "".join(kept)), len(kept) < len(lines)


def _evaluate(work, cls, *extra):
    proc = recon("evaluate", "--attack", f"att.py:{cls}", "--quiet", "--out", str(work / f"out-{cls}"), *extra, cwd=work)
    return _ran(proc)


def test_error_raised_inside_the_attack_names_the_attack_file_and_line(work):
    proc, ran = _evaluate(work, "Boom")
    line = one_error_line(proc)
    assert ran  # it did run, and failed inside
    assert "attack 'boom' failed" in line and "ValueError: exploded on purpose" in line and "att.py:14" in line, line
    assert proc.returncode == 1


def test_debug_shows_the_traceback(work):
    proc, _ = _evaluate(work, "Boom", "--debug")
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr and "exploded on purpose" in proc.stderr


def test_refused_knowledge_is_reported_from_the_attack(work):
    proc, _ = _evaluate(work, "Peek")
    line = one_error_line(proc)
    assert "gives no auxiliary data" in line and "attack 'boom'" in line and "att.py:" in line, line


def test_run_returning_a_tuple_is_one_line(work):
    proc, _ = _evaluate(work, "Pair")
    assert one_error_line(proc) == "the attack's run() returned a tuple, not a Reconstruction(images, labels)"


def test_ctrl_c_during_the_attack_says_nothing_was_written(work):
    """Ctrl-C in a terminal sends SIGINT to the whole foreground process group: the command and the
    attack's process. One line, exit 130, no output folder, and the attack's process is gone."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from cli_process import TOOLKIT

    import threading
    import uuid

    run_id = uuid.uuid4().hex  # passed to the attack's process (RECONBENCH_ATTACK_* crosses the allowlist)
    out = work / "out-Slow"
    env = {**os.environ, "PYTHONPATH": str(TOOLKIT), "COLUMNS": "200", "RECONBENCH_ATTACK_TEST_RUN": run_id}
    env.pop("RECONBENCH_DEBUG", None)
    proc = subprocess.Popen([sys.executable, "-m", "reconbench.cli", "evaluate", "--attack", "att.py:Slow", "--quiet",
                             "--out", str(out)], cwd=work, env=env, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,  # its own process group, as a shell's foreground job
                            # and SIGINT at its default, as in a terminal: a suite started in the background
                            # (`cmd &` in a script) inherits it ignored, and Python would then never see Ctrl-C
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)
    reader.start()
    try:
        deadline = time.time() + 300
        while RAN + "\n" not in lines and proc.poll() is None and time.time() < deadline:
            time.sleep(0.2)
        assert RAN + "\n" in lines, "the attack never started"
        assert _attack_processes(run_id), "the attack's process is not visible from here"
        time.sleep(0.5)  # inside time.sleep of the attack
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=120)
        reader.join(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    said = [line.strip() for line in lines if line.strip() and line.strip() != RAN]
    assert proc.returncode == 130, lines
    assert said == ["interrupted: nothing was written (results are written only when a command completes)"], lines
    assert not out.exists()
    assert _attack_processes(run_id) == []  # stopped and reaped, not left running


def _attack_processes(run_id: str) -> list[str]:
    """Processes of this machine whose environment carries the run's id (the attack's, sandboxed or not)."""
    import os

    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if run_id.encode() in f.read():
                    found.append(pid)
        except OSError:
            pass
    return found


def test_bad_attack_class_is_refused_before_running(work):
    proc, ran = _evaluate(work, "Magic")
    assert "att.py:Magic: family 'magic' must be one of optimization, training, analysis" in one_error_line(proc)
    assert not ran
    proc, ran = _evaluate(work, "NoRun")
    assert "att.py:NoRun: the class does not implement run()" in one_error_line(proc)


def test_class_attribute_rules(work):
    """The same checks in-process (cheap): a built-in's name, the name pattern, a bad cell."""
    import importlib.util

    from reconbench.image.attacks import AttackError, load_attack

    spec = importlib.util.spec_from_file_location("att_inproc", work / "att.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(AttackError, match=r"name 'mi-face' is taken by the built-in attack reconbench.image.attacks.mi_face:MIFace"):
        load_attack(module.Clash)
    with pytest.raises(AttackError, match=r"name 'My Attack' must match \^\[a-z0-9\]"):
        load_attack(module.BadName)
    bad_cell = type("BadCell", (module.Boom,), {"scenarios": ("static/grey-box/none",)})
    with pytest.raises(AttackError, match="'grey-box' is not one of"):
        load_attack(bad_cell)
    assert load_attack(module.Boom) is module.Boom  # a class is accepted as it is (notebooks)


def test_existing_out_and_unusable_device_are_refused_before_running(work):
    (work / "empty").mkdir()
    for extra, expected in [
        (["--out", str(work / "empty")], f"--out {work / 'empty'}: already exists"),
        (["--device", "gpu"], "--device gpu: not a device torch knows (use cpu, cuda, cuda:N or mps)"),
    ]:
        proc, ran = _ran(recon("evaluate", "--attack", "att.py:Boom", "--quiet", *extra, cwd=work))
        assert one_error_line(proc).startswith(expected), (extra, proc.stderr)
        assert not ran, extra


def test_preflight_rules(tmp_path):
    import torch

    from reconbench.core.errors import UserError
    from reconbench.pipeline.preflight import check_device, check_out, check_weights_dir

    with pytest.raises(UserError, match="--device cuda:99: "):
        check_device("cuda:99")
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="--device cuda: no usable CUDA device on this machine"):
            check_device("cuda")
    with pytest.raises(UserError, match="--weights-dir .*: no such folder"):
        check_weights_dir(tmp_path / "nowhere")
    with pytest.raises(UserError, match="--out /proc/reconbench-x: cannot be created in /proc"):
        check_out(Path("/proc/reconbench-x"))
    check_out(tmp_path / "new" / "deeper")  # missing parents are fine: they will be created
    assert not (tmp_path / "new").exists()


def test_junk_safetensors_in_weights_dir_is_refused_before_running(work):
    weights = work / "weights"
    weights.mkdir()
    (weights / "alexnet-owt-7be5be79.safetensors").write_bytes(b"not a safetensors file")
    proc, ran = _ran(recon("evaluate", "--attack", "att.py:Boom", "--quiet", "--weights-dir", str(weights), cwd=work))
    line = one_error_line(proc)
    assert line.startswith(f"{weights / 'alexnet-owt-7be5be79.safetensors'}: not a readable safetensors file")
    assert not ran


def test_user_errors_outside_evaluate_are_one_line(tmp_path):
    assert one_error_line(recon("evaluate", "--track", "nope")).startswith("unknown track 'nope'")
    assert one_error_line(recon("verify", str(tmp_path / "missing")))
    assert "/proc/k.pem" in one_error_line(recon("keygen", "/proc/k.pem"))
