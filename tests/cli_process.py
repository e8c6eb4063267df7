"""Run `recon-submit` as a user does: a fresh interpreter, this checkout's toolkit on the path."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

TOOLKIT = Path(__file__).resolve().parents[1] / "toolkit"
# A progress line (console.LineProgress), printed when stderr is not a terminal, as here
PROGRESS = re.compile(r"^.+: \d+% \([\d,]+/[\d,]+\), \d+:\d\d:\d\d elapsed, .+$")


def recon(*args: str, cwd: Path | None = None, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    """The console script's entry point (reconbench.cli:main), in a subprocess; env inherits the
    test session's (offline Hub, private RECONBENCH_HOME), plus `env`."""
    full_env = {**os.environ, "PYTHONPATH": str(TOOLKIT), "COLUMNS": "200", **(env or {})}
    full_env.pop("RECONBENCH_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "reconbench.cli", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def checkout_copy(dest: Path) -> Path:
    """A stand-in checkout: every .py file of this one at its place (hundreds of them beside README.md),
    where the guides tell a user to save an attack file."""
    repo = TOOLKIT.parent
    for path in repo.rglob("*.py"):
        rel = path.relative_to(repo)
        if rel.parts[0].startswith(".") or "__pycache__" in rel.parts:
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest / rel)
    return dest


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    """The single 'error: ...' line of a failed command (asserts there is nothing else on stderr)."""
    assert proc.returncode != 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip() and "━" not in line and not PROGRESS.match(line)]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0].removeprefix("error: ")
