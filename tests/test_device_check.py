"""benchmarks/device_check.sh's CPU-runnable parts: its table, a failing row that does not stop the others,
and the rows' own code at tiny sizes (in this process, to keep the CPU time small)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import device_rows  # noqa: E402

pytestmark = pytest.mark.usefixtures("single_torch_thread")


def script(*args, rows: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON": sys.executable, "ROWS": rows, "ROW_TIMEOUT": "300"}
    return subprocess.run(["bash", str(REPO / "benchmarks" / "device_check.sh"), *args], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=900)


def test_table_with_a_passing_and_a_failing_row():
    ok = script("--device", "cpu", "--dry", rows="pairwise")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    line = next(l for l in ok.stdout.splitlines() if l.startswith("| pairwise |"))
    assert "| ok |" in line and "max |diff| value 0.0e+00" in line  # CPU vs CPU: identical numbers
    # on a machine without CUDA every cuda row fails with its one-line reason; the table still comes out
    bad = script("--device", "cuda:0", "--dry", rows="pairwise zoo")
    table = [l for l in bad.stdout.splitlines() if l.startswith("| ")]
    if "no CUDA device" not in bad.stdout:
        pytest.skip("this machine has CUDA: the failing-row case needs one without")
    assert bad.returncode == 1 and len(table) == 3  # header + two rows
    assert all("| error |" in l and "CUDA is not available" in l for l in table[1:])


def test_rows_at_tiny_sizes_on_the_cpu():
    assert re.search(r"\d+x\d+ pairs .* max \|diff\| 0\.0e\+00", device_rows.row_lpips("cpu", True))
    fid = device_rows.row_fid("cpu", True)
    assert "stand-in Inception" in fid and re.search(r"FID -?[\d.]+$", fid)
    assert re.search(r"3 iterations, 500 images: .* ms per iteration", device_rows.row_deepinversion("cpu", True))
    assert re.search(r"\d+ steps of batch \d+: [\d.]+ ms per step", device_rows.row_zoo("cpu", True))


def test_gan_row_is_skipped_with_a_note_when_no_gan_attack_is_registered(monkeypatch):
    import reconbench.image.attacks as attacks

    monkeypatch.setattr(attacks, "ATTACKS", {k: v for k, v in attacks.ATTACKS.items() if k not in device_rows.GAN_ATTACKS})
    with pytest.raises(LookupError, match="^skipped: no GAN-prior attack"):
        device_rows.row_gan("cpu", True)


def test_findings_grid_at_default_budgets_expands_in_a_dry_run():
    """The GPU path of the findings page (issue 35): one prepared call, checked here without running a job."""
    out = script("--findings", "--device", "cpu", "--dry-run", rows="findings")
    assert out.returncode == 0, out.stdout + out.stderr
    line = next(l for l in out.stdout.splitlines() if l.startswith("| findings |"))
    assert "| ok |" in line and re.search(r"\| \d{2,} jobs at the default budget, seeds \[0, 1, 2\], 0 not applicable", line)
