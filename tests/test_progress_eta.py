"""The test run's progress line (tests/progress_eta.py): its arithmetic, and that a real pytest run
under pytest-xdist prints it with the whole set's count (issue 45: a run must say when it will end)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from progress_eta import EtaProgress

HERE = Path(__file__).resolve().parent


class Lines:
    def __init__(self):
        self.lines = []

    def write_line(self, line):
        self.lines.append(line)


class Report:
    def __init__(self, when):
        self.when = when


def test_the_eta_is_the_pace_so_far_applied_to_what_is_left():
    now = [100.0]
    out = Lines()
    eta = EtaProgress(out, every=30, clock=lambda: now[0])
    eta.pytest_xdist_node_collection_finished(None, [f"t{i}" for i in range(40)])
    for _ in range(10):
        now[0] += 4.0  # 10 tests in 40 s: 30 left take 120 s
        for when in ("setup", "call", "teardown"):
            eta.pytest_runtest_logreport(Report(when))
    # the first line once 30 s have passed: 8 tests in 32 s, 32 left at 4 s each
    assert out.lines == ["progress: 8 of 40 tests (20%) in 32s, about 2m08s to go at this pace"]
    assert eta.line() == "progress: 10 of 40 tests (25%) in 40s, about 2m00s to go at this pace"
    assert len(out.lines) == 1  # one line per 30 s, not one per test: the next is due at 62 s


def test_a_parallel_run_prints_progress_with_the_whole_count(tmp_path):
    (tmp_path / "conftest.py").write_text("from progress_eta import register\n\n"
                                          "def pytest_configure(config):\n    register(config)\n")
    (tmp_path / "test_some.py").write_text("import time, pytest\n\n@pytest.mark.parametrize('i', range(6))\n"
                                           "def test_wait(i):\n    time.sleep(0.2)\n")
    env = os.environ | {"PYTHONPATH": str(HERE), "RECONBENCH_PROGRESS_SECONDS": "0"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    counts = [int(n) for n in re.findall(r"^progress: (\d+) of 6 tests \(\d+%\) in \w+, about \w+ to go", done.stdout, re.M)]
    assert counts and counts == sorted(counts) and max(counts) < 6, done.stdout
