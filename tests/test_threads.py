"""The thread policy (reconbench/core/threads.py): one count, the evaluator's, for every process of a run."""

from __future__ import annotations

import pytest
import torch

from reconbench.core import threads
from reconbench.api import run_attack

# A user's attack that reports the threads its process was given (through the provenance facts).
PROBE = '''
import os
import torch
from reconbench.image.attacks.mi_face import MIFace

class ThreadProbe(MIFace):
    name = "thread-probe"
    def run(self, knowledge, *, seed, progress):
        rec = super().run(knowledge, seed=seed, progress=progress)
        rec.provenance.update(torch_threads=torch.get_num_threads(), omp=os.environ.get("OMP_NUM_THREADS"))
        return rec
'''


@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_default_is_capped_at_the_cpus_this_process_may_use(monkeypatch, restore_threads):
    monkeypatch.delenv(threads.THREADS_ENV, raising=False)
    monkeypatch.setattr(threads, "available_cpus", lambda: 1)
    torch.set_num_threads(4)
    assert threads.default_threads() == 1
    monkeypatch.setenv(threads.THREADS_ENV, "3")
    assert threads.default_threads() == 3
    assert threads.set_threads() == 3 and torch.get_num_threads() == 3
    assert threads.set_threads(2) == 2 and torch.get_num_threads() == 2
    for bad in ("0", "two"):
        monkeypatch.setenv(threads.THREADS_ENV, bad)
        with pytest.raises(ValueError, match=threads.THREADS_ENV):
            threads.default_threads()


@pytest.mark.parametrize("count", [1, 2])
def test_the_attack_process_runs_the_evaluators_thread_count(tmp_path, monkeypatch, restore_threads, count):
    monkeypatch.setenv("OMP_NUM_THREADS", "7")  # a shell's setting does not outvote the evaluator's
    (tmp_path / "probe.py").write_text(PROBE)
    threads.set_threads(count)
    rec = run_attack(f"{tmp_path / 'probe.py'}:ThreadProbe", "digits", options={"iterations": 1})
    assert rec.provenance["torch_threads"] == count
    assert rec.provenance["omp"] == str(count)
