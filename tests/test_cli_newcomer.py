"""What a newcomer sees on the command line (issue 24): progress when output is not a terminal (a
CI log, `| tee`), and `recon-submit tracks` readable at 80 columns."""

from __future__ import annotations

import re

from cli_process import recon
from reconbench.core.console import LineProgress

PROGRESS = re.compile(r"^(?P<what>.+): (?P<pct>\d+)% \((?P<done>[\d,]+)/(?P<total>[\d,]+)\), \d+:\d\d:\d\d elapsed, (?P<tail>.+)$")


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_progress_lines_say_percent_and_eta_after_the_warm_up():
    clock, lines = Clock(), []
    task = LineProgress("deepinversion: inverting", 200, every=30, write=lines.append, clock=clock)
    task.tick()
    clock.now, _ = 5.0, task.advance(4)
    task.tick()  # before the warm-up (10 s and 5% of the steps): no estimate yet
    clock.now, _ = 40.0, task.advance(46)  # 50 of 200 steps in 40 s: 120 s to go
    task.tick()
    parsed = [PROGRESS.match(line) for line in lines]
    assert all(parsed), lines
    assert [m["pct"] for m in parsed] == ["0", "2", "25"]
    assert parsed[0]["tail"] == parsed[1]["tail"] == "eta ..."
    assert parsed[2]["tail"] == "eta 0:02:00" and parsed[2]["done"] == "50" and parsed[2]["total"] == "200"
    assert task.line(final=True).endswith(", done")


def test_evaluate_into_a_pipe_prints_progress_lines(tmp_path):
    """Not a terminal (captured): plain lines on the clock instead of a bar drawn only at the end."""
    assert recon("keygen", str(tmp_path / "k.pem")).returncode == 0
    proc = recon("evaluate", "--attack", "mi-face", "--budget", "quick", "--set", "iterations=30",
                 "--out", str(tmp_path / "run"), "--key", str(tmp_path / "k.pem"), cwd=tmp_path,
                 env={"RECONBENCH_PROGRESS_EVERY": "0.01"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [m for m in map(PROGRESS.match, proc.stderr.splitlines()) if m]
    assert len(lines) >= 2, proc.stderr  # the start and the end, at least
    assert lines[0]["what"].startswith("mi-face") and lines[0]["pct"] == "0"
    assert lines[-1]["tail"] == "done" and lines[-1]["done"] == lines[-1]["total"]
    assert "━" not in proc.stderr  # no bar drawn into a log


def test_tracks_fit_80_columns_without_cutting_a_word():
    proc = recon("tracks", env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80]
    assert "…" not in proc.stdout
    for word in ("sklearn-digits", "small-cnn", "embedded", "1,000,000", "static/white-box/none", "lee-background"):
        assert word in proc.stdout, word
    wide = recon("tracks", env={"COLUMNS": "200"})
    header = next(line for line in wide.stdout.splitlines() if "query budget" in line)
    assert "status" in header and "dataset" in header  # a column per field where they fit
