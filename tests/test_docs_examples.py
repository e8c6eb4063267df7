"""The documentation's examples run as written (issue 15 items 9 and 10): the "Use from Python" page
(site/python.md), the "Write your own attack" page (site/write-an-attack.md), and the next steps
that `submit --root X` prints."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from cli_process import TOOLKIT, recon

SITE = Path(__file__).resolve().parents[1] / "site"


def blocks(page: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", (SITE / page).read_text(encoding="utf-8"), flags=re.S)


def test_python_api_page_runs_and_its_result_can_be_submitted_as_printed(tmp_path):
    code = "\n".join(blocks("python.md", "python"))
    assert "reconbench.run_attack" in code and "reconbench.evaluate" in code and "class ClassMeansOfNoise" in code
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(TOOLKIT)},
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "torch.Size([500, 1, 8, 8]) torch.Size([500])"
    assert re.fullmatch(r"\d\.\d{3} \(\d+\.\d{2}%\)", lines[1]), lines[1]  # ssim: value (coverage %)
    result = tmp_path / "runs" / "mi-face-50"
    assert (result / "result.json").is_file() and lines[3].startswith(f"runs/mi-face-50 digits-mi-face-")

    # item 6: after `submit --root X`, the printed first step works as printed
    sub = recon("submit", "runs/mi-face-50", "--team", "doc-team", "--root", "my-subs", cwd=tmp_path)
    assert sub.returncode == 0, sub.stderr
    step = next(line for line in sub.stdout.splitlines() if line.strip().startswith("1. recon-submit validate"))
    argv = shlex.split(step.split("1.", 1)[1].split("#", 1)[0])
    assert argv[:2] == ["recon-submit", "validate"] and "--root" in argv
    check = recon(*argv[1:], cwd=tmp_path)
    assert check.returncode == 0, check.stdout[-2000:] + check.stderr
    assert "re-scored" in check.stdout


def test_write_your_own_attack_page_runs_as_written(tmp_path):
    (code,) = blocks("write-an-attack.md", "python")
    (tmp_path / "class_ascent.py").write_text(code, encoding="utf-8")
    (command,) = [c.strip() for c in blocks("write-an-attack.md", "sh") if "evaluate" in c]
    argv = shlex.split(command)
    assert argv[:2] == ["recon-submit", "evaluate"]
    run = recon(*argv[1:], "--quiet", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert recon("verify", "runs/class-ascent", cwd=tmp_path).returncode == 0
    import json

    payload = json.loads((tmp_path / "runs" / "class-ascent" / "result.json").read_text())["payload"]
    assert payload["attack"]["name"] == "class-ascent" and payload["attack"]["config"]["steps"] == 40
    assert "class_ascent.py:ClassAscent" in payload["provenance"]["command"] and str(tmp_path) not in payload["provenance"]["command"]
