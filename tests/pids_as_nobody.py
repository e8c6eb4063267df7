"""Run the fork-many attack (limits.py:Hog, mode pids) through the evaluator in THIS process, for
tests/test_sandbox_limits.py, which starts it as a non-root user: prints `STOPPED <the run's line>`
or `NOT-STOPPED`. argv: the tests folder, the attack spec, the pids limit."""

import sys

sys.path.insert(0, sys.argv[1])  # tests/: the hostile attacks' helpers

import torch  # noqa: E402

from reconbench.core.tracks import get_track  # noqa: E402
from reconbench.image.attacks import AttackError, Progress  # noqa: E402
from reconbench.image.evaluation import attack_run  # noqa: E402
from reconbench.pipeline.isolation import limits  # noqa: E402

MiB = 1 << 20
small = limits.Limits(memory=1536 * MiB, pids=int(sys.argv[3]), cpu=30, wall=120, tmp=16 * MiB, shm=8 * MiB)
try:
    attack_run(get_track("digits"), sys.argv[2], None, config={"mode": "pids", "size_mib": 0}, seed=0,
               device=torch.device("cpu"), progress=Progress(), limits=small)
    print("NOT-STOPPED")
except AttackError as exc:
    print(f"STOPPED {exc}")
