"""A progress line with an ETA, every half minute of a test run (issue 45: a 2-core run printed dots
for minutes with no idea of the end). Registered by conftest.py on the process that reports (the
controller under pytest-xdist, whose hooks see every worker's reports), never on a worker.

    progress: 412 of 1190 tests (35%) in 2m40s, about 4m58s to go at this pace

The pace is tests per second so far; modules differ in cost, so the ETA is a rough one, said so."""

from __future__ import annotations

import os
import time

import pytest

EVERY_SECONDS = float(os.environ.get("RECONBENCH_PROGRESS_SECONDS", "30"))


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(int(round(seconds)), 60)
    return f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


class EtaProgress:
    def __init__(self, reporter, every: float = EVERY_SECONDS, clock=time.monotonic):
        self.reporter, self.every, self.clock = reporter, every, clock
        self.total = self.done = 0
        self.started = self.last = clock()

    def line(self) -> str:
        elapsed = self.clock() - self.started
        share = self.done / self.total if self.total else 0.0
        left = elapsed * (self.total - self.done) / self.done if self.done else None
        eta = f"about {_clock(left)} to go at this pace" if left is not None else "no pace yet"
        return f"progress: {self.done} of {self.total} tests ({share:.0%}) in {_clock(elapsed)}, {eta}"

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session):
        if session.items:  # one process; under xdist the controller collects nothing: the workers' count comes below
            self.total = len(session.items)
            self.started = self.last = self.clock()

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        self.total = max(self.total, len(ids))  # every worker collects the whole (deselected) set

    def pytest_runtest_logreport(self, report):
        if report.when != "teardown":  # one teardown report per test, whatever its outcome
            return
        self.done += 1
        now = self.clock()
        if now - self.last >= self.every and self.done < self.total:
            self.last = now
            self.reporter.write_line(self.line())


class _Terminal:
    """pytest's terminal reporter, looked up when a line is written: it registers itself after conftest
    files are configured, and not at all without a terminal (-p no:terminal)."""

    def __init__(self, config):
        self.config = config

    def write_line(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write("\n")  # after a row of dots: -q's reporter tracks no line of its own to end
            reporter.write_line(line)


def register(config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: its controller reports
        return
    config.pluginmanager.register(EtaProgress(_Terminal(config)), "reconbench-eta-progress")
