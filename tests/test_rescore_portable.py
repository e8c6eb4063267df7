"""A committed entry, made on another machine, re-scores within the board's tolerances here under whatever
kernels this machine or `make test-portable` runs (issue 47). Re-scoring is the board's cross-machine
promise: CI recomputes every number of an entry that was made elsewhere. The digits Bias-Rec entry is
the one whose MSE gap came back wrong when oneDNN's int8 GEMM had no VNNI kernel (image/metrics/pixel.py
int8_gemm_is_exact); tests/test_submissions_examples.py re-scores the whole board in the slow set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENTRY = ROOT / "submissions" / "reconbench-baselines" / "digits-binary-mlp-bias-rec-20261205001450-8f6813cd"


@pytest.mark.portable
def test_an_entry_made_elsewhere_re_scores_as_claimed_under_these_kernels(tmp_path):
    assert (ENTRY / "result.json").is_file(), ENTRY
    env = os.environ | {"RECONBENCH_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "reconbench.cli", "validate", str(ENTRY), "--offline", "--no-cache"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    out = done.stdout + done.stderr
    assert done.returncode == 0 and "OK: 1 entry checked" in out, out[-3000:]
    assert "rescore.membership.mse" in out and "as claimed" in out
