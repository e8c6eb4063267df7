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

HEAVY = ("torch", "torchvision", "reconbench.image.attacks", "reconbench.image.evaluation", "reconbench.image.knowledge", "huggingface_hub")


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


def test_scoring_and_the_digits_track_load_no_backbone_libraries(tmp_path):
    """Issue 26: torchvision (and torch._dynamo behind it), pytorch-fid, lpips and sklearn.datasets are
    imported only when a backbone's weights are there to use, or never (digits come from the CSV)."""
    report = tmp_path / "modules.txt"
    probe = ("import sys, numpy as np; from reconbench.image.data.digits import digits_splits; "
             "from reconbench.image.metrics import score; from reconbench.image.evaluation import evaluate; "
             "s = digits_splits(); r = score(s.target.images[:20], s.target.labels[:20], s.target.images, s.target.labels); "
             "assert r.metrics['ssim'].status == 'computed' and r.metrics['fid'].status == 'not_computed'; "
             f"open({str(report)!r}, 'w').write('\\n'.join(sys.modules))")
    env = {**os.environ, "PYTHONPATH": str(TOOLKIT), "HF_HUB_OFFLINE": "1", "RECONBENCH_CACHE": str(tmp_path / "cache"),
           "TORCH_HOME": str(tmp_path / "torch")}
    proc = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    loaded = set(report.read_text().split("\n"))
    assert "torch" in loaded and "reconbench.image.metrics.score" in loaded
    heavy = ("torchvision", "torch._dynamo", "pytorch_fid", "lpips", "sklearn.datasets")
    assert not [m for m in heavy if m in loaded], sorted(m for m in loaded if m.split(".")[0] in heavy)


def test_the_end_of_evaluate_reads_the_verdict_without_the_site_builder():
    """Issue 37: `evaluate` prints the board's verdict (core/verdict.py, which the board re-exports)
    without importing the leaderboard (pandas, jinja2): that import cost ~0.4-0.7 CPU-s per run."""
    probe = ("from reconbench.leaderboard import leakage; import reconbench.core.verdict as v; "
             "assert leakage.verdict is v.verdict and leakage.VERDICT_TEXT is v.VERDICT_TEXT")
    first = ("import io, sys; from types import SimpleNamespace as N; from rich.console import Console; "
             "from reconbench.cli.commands.verdict import print_verdict; "
             "gap = N(status='computed', p=0.5, gap=0.01, low=-0.02, high=0.03); "
             "print_verdict(Console(file=io.StringIO()), N(membership=N(metrics={'ssim': gap}))); "
             "print(' '.join(sys.modules))")
    env = {**os.environ, "PYTHONPATH": str(TOOLKIT)}
    loaded = subprocess.run([sys.executable, "-c", first], env=env, capture_output=True, text=True, timeout=120,
                            check=True).stdout.split()
    assert not [m for m in loaded if m.startswith(("pandas", "reconbench.leaderboard", "jinja2", "torch"))]
    subprocess.run([sys.executable, "-c", probe], env=env, check=True, timeout=300)
