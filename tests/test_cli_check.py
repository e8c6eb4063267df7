"""The verdict where the run ends, and the checks before anything is submitted (issue 37, items 3
and 6): `evaluate` prints the membership gap of each metric and the board's verdict; `check RUN` runs
every check that needs no board on a run folder (re-scoring included) and ends with one line;
`validate RUN` points at `check`; `submit` without a run points at `evaluate`; a white-box attack
asked for a black-box cell is told about `--surrogate`."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from typer.testing import CliRunner

from reconbench.cli import app
from reconbench.core.signing import load_private_key, sign_payload
from reconbench.core.verdict import WORDS, entry_verdict
from reconbench.text.results import parse_any_result

runner = CliRunner()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("check") / "run"
    res = runner.invoke(app, ["evaluate", "--attack", "mi-face", "--set", "iterations=20", "--seed", "11",
                              "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    return out, res.output


def test_evaluate_ends_with_each_gap_and_the_board_s_verdict(run):
    folder, output = run
    payload = parse_any_result(folder / "result.json").payload
    tested = {m: g for m, g in payload.membership.metrics.items() if g.status == "computed" and g.p is not None}
    assert tested, "the digits track tests the gap of its sample-level metrics"
    table = output[output.index("membership gap"):]
    for name, g in tested.items():
        row = next(line for line in table.splitlines() if re.match(rf"\W*{name}\W", line))
        assert f"{g.gap:+.4g}" in row and f"[{g.low:+.4g}, {g.high:+.4g}]" in row and f"{g.p:.3g}" in row
    v = entry_verdict(dict(payload.membership.metrics), payload.membership.extraction)  # the board's rule and words
    line = next(line for line in " ".join(output.split()).split("verdict: ")[1:] if line)
    assert v.tier.word in WORDS and line.startswith(f"{v.label} (extraction count: ")
    # the verdict line carries the extraction count and each p beside the threshold it was held to
    e = payload.membership.extraction
    assert f"{e.members} of {e.n_members} members extracted against {e.holdout} holdout item" in line
    assert f"mean gap: {v.signal_p}" in line and re.search(r"p [\d.e-]+ [<>≥] [\d.e-]+ = 0\.01 / \d metrics", line)
    assert f"). {v.tier.means[0].upper()}{v.tier.means[1:]}" in line


def test_check_runs_the_no_board_checks_and_ends_with_one_line(run):
    folder, _ = run
    res = runner.invoke(app, ["check", str(folder)])
    assert res.exit_code == 0, res.output
    for stage in ("schema", "signature", "registry", "reconstructions", "rescore.ssim", "copies", "nearcopies"):
        assert re.search(rf"^\W*{re.escape(stage)}\s+\W*pass", res.output, flags=re.M), stage
    last = [line for line in res.output.splitlines() if line.strip()][-1]
    assert last.startswith(f"OK: {folder} passes the 7 checks that need no board (trust when submitted: re-scored)")
    assert "this-run" not in res.output and "reconbench-check-" not in res.output  # the staging is not shown
    verdict_line = " ".join(res.output.split()).split("verdict: ")[1]
    assert verdict_line.startswith(("no evidence (", "membership signal (", "extracts "))  # the tier words
    assert "(extraction count: " in verdict_line and " members extracted against " in verdict_line


def test_check_re_scores_a_claim_the_reconstructions_do_not_support(run, tmp_path, signing_key):
    folder, _ = run
    forged = shutil.copytree(folder, tmp_path / "forged")
    doc = json.loads((forged / "result.json").read_text())
    doc["payload"]["metrics"]["ssim"]["value"] = 0.9  # claimed, re-signed: only re-scoring can tell
    doc["signature"] = sign_payload(doc["payload"], load_private_key(signing_key))
    (forged / "result.json").write_text(json.dumps(doc))
    res = runner.invoke(app, ["check", str(forged)])
    assert res.exit_code == 1
    assert re.search(r"^\W*rescore\.ssim\s+\W*fail", res.output, flags=re.M), res.output
    assert f"FAILED: {forged}: rescore.ssim: " in " ".join(res.output.split())  # the last line: the first failure


def test_validate_on_a_run_folder_points_at_check(run, tmp_path):
    folder, _ = run
    res = runner.invoke(app, ["validate", str(folder), "--root", str(tmp_path / "submissions")])
    assert res.exit_code == 1
    text = " ".join(res.output.split())
    assert f"{folder}: a run folder, not an entry" in text and f"recon-submit check {folder}" in text


@pytest.mark.parametrize("command", [["submit", "{dir}", "--team", "t"], ["check", "{dir}"]])
def test_a_folder_without_a_result_points_at_evaluate(tmp_path, command):
    res = runner.invoke(app, [c.format(dir=tmp_path) for c in command])
    assert res.exit_code != 0
    text = " ".join(res.output.split())
    from reconbench.core.console import invoked_as  # the command as it runs in this shell (issue 45)

    assert f"{tmp_path}: holds no result.json, so it is not a run: `{invoked_as()} evaluate" in text and "Traceback" not in text


def test_a_white_box_attack_in_a_black_box_cell_is_told_about_the_surrogate(tmp_path):
    res = runner.invoke(app, ["evaluate", "--attack", "mi-face", "--scenario", "static/black-box/same",
                              "--out", str(tmp_path / "x")])
    assert res.exit_code != 0 and not (tmp_path / "x").exists()
    assert "add --surrogate dfme or --surrogate aux" in " ".join(res.output.split())


def test_check_says_a_long_repeated_reason_once_in_100_columns(run, tmp_path):
    """Issue 45, item 7: piped output is 100 columns wide (it was 200), and the reason the FID/LPIPS rows
    did not run (which weights are missing, where they go, how to fetch them) is said once per weights
    file, not in ten rows; later rows point at the first ("as for rescore.fid")."""
    import os
    import subprocess
    import sys

    from cli_process import TOOLKIT

    folder, _ = run
    empty = tmp_path / "no-weights"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"PYTHONPATH": str(TOOLKIT)}
    proc = subprocess.run([sys.executable, "-m", "reconbench.cli", "check", str(folder), "--weights-dir", str(empty)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table = [line for line in proc.stdout.splitlines() if line[:1] in "┌│└"]
    assert table and max(len(line) for line in table) <= 100, max(table, key=len)
    for weights in ("pt_inception-2015-12-05-6726825d.pth", "alexnet-owt-7be5be79.pth"):
        assert proc.stdout.count(weights) == 1, (weights, proc.stdout)
    assert "(as for" in proc.stdout and re.search(r"rescore\.membership\.fid\s.*not-run", proc.stdout)


def test_said_once_keeps_every_first_reason_and_short_ones():
    from reconbench.submissions.checks.base import Check
    from reconbench.submissions.report import said_once

    why = "inception weights unavailable: pt_inception.pth is not in the weights cache (see where)"
    checks = [Check("rescore.fid", "not-run", f"not computable here (FID: not computed ({why}))"),
              Check("rescore.prdc", "not-run", f"not computable here (PRDC: not computed ({why}))"),
              Check("gap.fid", "not-run", f"FID: not computed ({why})"),
              Check("rescore.ssim", "pass", "0.5 (coverage 2%) as claimed (tolerance 1e-4)")]
    said = said_once(checks)
    assert said[0] == checks[0].message  # the first says it all
    assert said[1] == "not computable here (PRDC: not computed (as for rescore.fid))"
    assert said[2] == "FID: not computed (as for rescore.fid)"
    assert said[3] == checks[3].message  # short parentheses are never shortened
