"""Attacks that run into their resource limits (tests/test_sandbox_limits.py), each as fast as it can:
they allocate, fork or write straight up to the limit. Each reports what it reached as one line
`HOSTILE-REPORT <json>` on its stderr (relayed by the evaluator)."""

from __future__ import annotations

import os
import time

from hostile import report, zeros

from reconbench.image.attacks.base import Attack

MiB = 1 << 20


def _fill(folder: str) -> None:
    """Write 1 MiB blocks into `folder` until the tmpfs is full; the error ends the run."""
    block, written = b"\xff" * MiB, 0
    try:
        with open(os.path.join(folder, "fill"), "wb", buffering=0) as f:
            while written < 1 << 40:
                f.write(block)
                written += MiB
    finally:
        report({"written": written, "folder": folder})


class Hog(Attack):
    """Runs into one limit (config `mode`): memory, memory-tree, pids, tmp, shm, cpu or wall."""

    name, paper, family = "hog", "none", "training"
    scenarios = ("static/black-box/same",)
    defaults = {"mode": "memory", "size_mib": 0}

    def run(self, knowledge, *, seed, progress):
        mode, size = self.config["mode"], self.config["size_mib"] * MiB
        if mode == "memory":  # one allocation over the limit: refused at once (RLIMIT_DATA or the cgroup)
            import torch

            report({"allocating": size})
            torch.empty(size, dtype=torch.uint8)
        elif mode == "memory-tree":  # each process under the per-process limit, the tree over the total
            import numpy as np

            for _ in range(5):
                if os.fork() == 0:
                    try:
                        kept = np.ones(size, np.uint8)  # touched: resident, and kept
                        time.sleep(600 + int(kept[0]))
                    except BaseException as exc:  # noqa: BLE001 - never back into the forked copy of the run
                        report({"child": repr(exc)[:200]})
                    finally:
                        os._exit(0)
            report({"forked": 5})
            time.sleep(600)  # the evaluator ends the run long before
        elif mode == "pids":
            started = 0
            try:
                while started < 100000:
                    if os.fork() == 0:
                        time.sleep(600)
                        os._exit(0)
                    started += 1
            except OSError as exc:
                report({"forked": started, "refused": str(exc)})
            else:
                report({"forked": started})
            time.sleep(600)
        elif mode in ("tmp", "shm"):
            _fill("/tmp" if mode == "tmp" else "/dev/shm")
        elif mode == "cpu":
            report({"spinning": True})
            while True:
                pass
        elif mode == "wall":
            report({"sleeping": True})
            time.sleep(600)
        return zeros(knowledge)
