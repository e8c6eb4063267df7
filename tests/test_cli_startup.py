"""Fast start (issue 15 item 7): the listing commands never import torch, torchvision or attack code.

The time itself is measured by benchmarks/bench_cli_startup.py (a ratio against `python -c pass`);
here the cause of a slow start is checked: which modules the command loaded.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cli_process import TOOLKIT

HEAVY = ("torch", "torchvision", "reconbench.attacks", "reconbench.evaluation", "reconbench.knowledge", "huggingface_hub")


@pytest.mark.parametrize("command", [["--help"], ["tracks"], ["attacks"], ["metrics"], ["schema"], ["version"], ["evaluate", "--help"]])
def test_listing_commands_do_not_import_heavy_modules(command, tmp_path):
    report = tmp_path / "modules.txt"
    probe = (f"import atexit, sys; atexit.register(lambda: open({str(report)!r}, 'w').write('\\n'.join(sys.modules))); "
             f"sys.argv = ['recon-submit', *{command!r}]; from reconbench.cli import main; main()")
    proc = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "PYTHONPATH": str(TOOLKIT)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    loaded = set(report.read_text().split("\n"))
    assert "reconbench.cli" in loaded
    assert not [m for m in HEAVY if m in loaded], sorted(m for m in loaded if m.split(".")[0] in ("torch", "reconbench"))
