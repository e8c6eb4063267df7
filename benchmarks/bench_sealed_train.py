"""What one sealed draw costs to train, per twin: CPU seconds (process time) of
sealed_registry.draw_row (the twin's pool, a key-drawn half, the open twin's recipe on one torch thread,
the model's test accuracy), with a throwaway key and into a temporary folder: nothing shipped is touched.

    nice -n 10 .venv/bin/python benchmarks/bench_sealed_train.py [TWIN ...]   (default: every twin)

Wall time is printed too but means little on a shared machine; compare the CPU seconds, and each twin
with fashion-n100-sealed measured in the same run. A twin costs K (sealed_registry.DRAWS) times its row.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from reconbench.core.seal import new_key
from reconbench.image.models.sealed_registry import DRAWS, SEALED, draw_row


def main(groups: list[str]) -> None:
    key = bytes.fromhex(new_key())
    groups = groups or list(SEALED)
    if "fashion-n100-sealed" not in groups:
        groups = ["fashion-n100-sealed", *groups]  # the reference, in the same run
    print(f"| twin | train size | CPU s per draw | wall s | CPU s for K = {DRAWS} | test accuracy |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for group in groups:
            cpu, wall = time.process_time(), time.perf_counter()
            row = draw_row(SEALED[group], 0, DRAWS, key, Path(tmp))
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            print(f"| {group} | {row['train_size']} | {cpu:.1f} | {wall:.0f} | {DRAWS * cpu:.0f} | {row['test_accuracy']} |",
                  flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
