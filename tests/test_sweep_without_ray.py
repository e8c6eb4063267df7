"""`sweep` without Ray installed (issue 24, point 6): one clear line naming the extra and how to
install it from the checkout, exit 1, and no progress bar or summary of "interrupted" jobs."""

from __future__ import annotations

import sys

from typer.testing import CliRunner

from reconbench.cli import app
from reconbench.core.signing import generate_key
from reconbench.sweep.cluster import RAY_MISSING
from test_sweep import write_grid


def test_sweep_without_ray_is_one_line_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError, as without the package
    grid = write_grid(tmp_path)
    out = tmp_path / "out"
    generate_key(tmp_path / "k.pem")
    res = CliRunner().invoke(app, ["sweep", str(grid), "--out", str(out), "--key", str(tmp_path / "k.pem")])
    assert res.exit_code == 1
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0] == f"error: {RAY_MISSING}", res.output
    assert "pip install -e '.[cluster]'" in RAY_MISSING and "reconbench[cluster]" not in RAY_MISSING
    assert "interrupted" not in res.output and "0/" not in res.output
    assert not out.exists()  # no summary.json of jobs that never ran
