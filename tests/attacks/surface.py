"""Attacks for the kernel surface, the evaluator's descriptors, CI's workflow commands and a large
query (tests/test_sandbox_limits.py). Each reports as one line `HOSTILE-REPORT <json>` on stderr."""

from __future__ import annotations

import os
import stat
import sys

from hostile import report, run_fresh, zeros

from reconbench.image.attacks.base import Attack


def _descriptor(fd: int) -> dict:
    st = os.fstat(fd)
    return {"fifo": stat.S_ISFIFO(st.st_mode), "dev": st.st_dev, "ino": st.st_ino, "link": os.readlink(f"/proc/self/fd/{fd}")}


def _shipped() -> None:
    """Never called: run_fresh starts kernel_probe.py by its path, and an attack's source is the file and
    what it imports (core/attack_source.py), so this import is what ships the probe into the sandbox."""
    import kernel_probe  # noqa: F401


class Surface(Attack):
    """The kernel calls and socket families (from a fresh interpreter), and what fds 1 and 2 are."""

    name, paper, family = "surface", "none", "training"
    scenarios = ("static/black-box/same",)

    def run(self, knowledge, *, seed, progress):
        report({"kernel": run_fresh("kernel_probe.py"), "stdout": _descriptor(1), "stderr": _descriptor(2)})
        return zeros(knowledge)


class Commands(Attack):
    """Prints CI workflow commands on stdout and stderr, then returns honestly."""

    name, paper, family = "commands", "none", "training"
    scenarios = ("static/black-box/same",)
    defaults = {"token": "x"}

    def run(self, knowledge, *, seed, progress):
        t = self.config["token"]
        lines = [f"::stop-commands::{t}", f"::add-mask::{t}", f"::error::forged-{t}", f"  ::warning file=x::{t}",
                 f"##[error]legacy-{t}", f"##vso[task.setvariable variable=x]{t}", f"progress 50%\r::error::cr-{t}",
                 f"::set-output name=x::{t}"]
        for line in lines:
            print(line, flush=True)
            print(line, file=sys.stderr, flush=True)
        report({"printed": len(lines)})
        return zeros(knowledge)


class BigQuery(Attack):
    """One in-budget query of `n` images (the evaluator's memory must not grow with it)."""

    name, paper, family = "big-query", "none", "training"
    scenarios = ("static/black-box/same",)
    defaults = {"n": 1000}

    def run(self, knowledge, *, seed, progress):
        import torch

        probs = knowledge.query(torch.rand(self.config["n"], *knowledge.input_shape))
        report({"answered": int(probs.shape[0]), "queries": knowledge.query.queries})
        return zeros(knowledge)
