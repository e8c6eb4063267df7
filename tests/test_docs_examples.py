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

import pytest
from cli_process import TOOLKIT, checkout_copy, recon

SITE = Path(__file__).resolve().parents[1] / "site"
pytestmark = pytest.mark.slow  # a minute or more of CPU: the slow set (make test-slow; benchmarks/bench_test_split.py)


def blocks(page: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", (SITE / page).read_text(encoding="utf-8"), flags=re.S)


def python_env() -> dict:
    return {**os.environ, "PYTHONPATH": str(TOOLKIT)}


def test_python_api_page_runs_and_its_result_can_be_submitted_as_printed(tmp_path):
    first, own, script = blocks("python.md", "python")
    assert "reconbench.run_attack" in first and "reconbench.evaluate" in first and "class ClassMeansOfNoise" in own
    proc = subprocess.run([sys.executable, "-c", first], cwd=tmp_path, env=python_env(),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "torch.Size([500, 1, 8, 8]) torch.Size([500])"
    assert re.fullmatch(r"\d\.\d{3} \(\d+\.\d{2}%\)", lines[1]), lines[1]  # ssim: value (coverage %)
    result = tmp_path / "runs" / "mi-face-50"
    assert (result / "result.json").is_file() and lines[3].startswith(f"runs/mi-face-50 digits-mi-face-")
    # issue 24: the page's run is new to the board, not a near-duplicate of the MI-Face example entry
    from reconbench.image.results import load_reconstructions
    from reconbench.submissions.checks.duplicates import DUPLICATE_SHARE
    from reconbench.submissions.nearcopy import Space, public_thresholds
    from reconbench.core.tracks import get_track

    (example,) = (SITE.parent / "submissions").glob("*/digits-mi-face-*/reconstructions.safetensors")
    thresholds = public_thresholds(get_track("digits"))
    mine, _ = load_reconstructions(result / "reconstructions.safetensors")
    assert Space.flag(Space(load_reconstructions(example)[0]), mine, thresholds).share <= DUPLICATE_SHARE

    # item 6: after `submit --root X`, the printed first step works as printed
    sub = recon("submit", "runs/mi-face-50", "--team", "doc-team", "--root", "my-subs", cwd=tmp_path)
    assert sub.returncode == 0, sub.stderr
    step = next(line for line in sub.stdout.splitlines() if re.match(r"\s*1\. \S*recon-submit validate", line))
    argv = shlex.split(step.split("1.", 1)[1].split("#", 1)[0])
    # the command as it runs in this shell: `recon-submit` on PATH, else this environment's script (issue 45)
    assert (argv[0] == "recon-submit" or argv[0].endswith("/bin/recon-submit")) and argv[1] == "validate" and "--root" in argv
    check = recon(*argv[1:], cwd=tmp_path)
    assert check.returncode == 0, check.stdout[-2000:] + check.stderr
    assert "re-scored" in check.stdout


def test_an_attack_class_of_your_own_runs_from_a_cell_a_script_and_stdin(tmp_path):
    """Issue 24, point 4: the page's class runs through run_attack however the code is run."""
    _, own, _ = blocks("python.md", "python")
    (tmp_path / "snippet.py").write_text(own, encoding="utf-8")
    ways = {"-c": [sys.executable, "-c", own], "file": [sys.executable, "snippet.py"], "stdin": [sys.executable, "-"]}
    for way, argv in ways.items():
        proc = subprocess.run(argv, cwd=tmp_path, env=python_env(), capture_output=True, text=True, timeout=600,
                              input=own if way == "stdin" else None)
        assert proc.returncode == 0, (way, proc.stderr[-3000:])
        assert re.fullmatch(r"-?\d\.\d{3} \(\d+\.\d{2}%\)", proc.stdout.strip()), (way, proc.stdout)


def test_the_page_script_signs_a_result_and_without_its_main_guard_says_why_not(tmp_path):
    _, _, script = blocks("python.md", "python")
    page = (SITE / "python.md").read_text(encoding="utf-8")
    assert "`noise_baseline.py` in your checkout" in page and "`.venv/bin/python noise_baseline.py`" in page
    checkout = checkout_copy(tmp_path / "reconbench")  # saved where the page says: in the checkout
    (checkout / "noise_baseline.py").write_text(script, encoding="utf-8")
    proc = subprocess.run([sys.executable, "noise_baseline.py"], cwd=checkout, env=python_env(),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["runs/noise-baseline", "noise_baseline.py:ClassMeansOfNoise"]
    assert recon("verify", "runs/noise-baseline", cwd=checkout).returncode == 0
    assert sorted(p.name for p in (checkout / "runs" / "noise-baseline" / "attack").iterdir()) == ["noise_baseline.py"]

    unguarded = script.replace('if __name__ == "__main__":  # not when the attack\'s process imports this file\n', "")
    unguarded = unguarded.replace("\n    out = ", "\nout = ").replace("\n    print(out", "\nprint(out")
    assert "__main__" not in unguarded
    (tmp_path / "unguarded.py").write_text(unguarded, encoding="utf-8")
    proc = subprocess.run([sys.executable, "unguarded.py"], cwd=tmp_path, env=python_env(),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0 and "GuardError" not in proc.stderr
    assert "if __name__ == \"__main__\":" in proc.stderr and "unguarded.py" in proc.stderr
    piped = subprocess.run([sys.executable, "-"], cwd=tmp_path, env=python_env(), capture_output=True, text=True,
                           timeout=600, input=script.replace('if __name__ == "__main__"', 'if True'))
    assert piped.returncode != 0 and "has no .py file" in piped.stderr and "unknown attack" not in piped.stderr


def test_write_your_own_attack_page_runs_as_written(tmp_path):
    """Saved where the guide says (in the checkout, beside hundreds of .py files), run with the
    guide's commands as written (`.venv/bin/recon-submit`, a new shell's way), at its quick budget."""
    (code,) = blocks("write-an-attack.md", "python")
    assert "`class_ascent.py` in your checkout" in (SITE / "write-an-attack.md").read_text(encoding="utf-8")
    checkout = checkout_copy(tmp_path / "reconbench")
    (checkout / "class_ascent.py").write_text(code, encoding="utf-8")
    (block,) = [b for b in blocks("write-an-attack.md", "sh") if "evaluate" in b]
    evaluate, verify = [shlex.split(line) for line in block.strip().splitlines()]
    assert evaluate[:2] == [".venv/bin/recon-submit", "evaluate"] and verify[:2] == [".venv/bin/recon-submit", "verify"]
    run = recon(*evaluate[1:], "--quiet", cwd=checkout)
    assert run.returncode == 0, run.stderr[-3000:]
    assert recon(*verify[1:], cwd=checkout).returncode == 0
    import json

    result = checkout / "runs" / "class-ascent"
    payload = json.loads((result / "result.json").read_text())["payload"]
    assert payload["attack"]["name"] == "class-ascent" and payload["attack"]["config"]["steps"] == 40
    assert "class_ascent.py:ClassAscent" in payload["provenance"]["command"] and str(tmp_path) not in payload["provenance"]["command"]
    assert [p.name for p in (result / "attack").iterdir()] == ["class_ascent.py"]  # the file, not the checkout
