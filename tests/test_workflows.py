"""The GitHub workflows pass the two offline checks (zizmor, the workflow JSON Schema), and keep
the trust rules of DESIGN.md: no pull_request_target, actions pinned by commit, least permissions."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
WORKFLOWS = REPO / ".github" / "workflows"
BIN = Path(sys.executable).parent  # zizmor and check-jsonschema come with the test extras, in the venv
FILES = sorted(WORKFLOWS.glob("*.yml"))


def tool(name: str) -> str:
    path = BIN / name
    if not path.exists():
        pytest.fail(f"{path} not found: install the test extras (pip install -e '.[test]')")
    return str(path)


def zizmor(folder: Path) -> list[dict]:
    # --format json prints the findings; the exit code (10 + highest severity) is not an error here.
    out = subprocess.run([tool("zizmor"), "--offline", "--format", "json", str(folder)],
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().startswith("["), out.stderr[-2000:]
    return json.loads(out.stdout)


def load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return data


def test_the_workflows_exist():
    assert [p.name for p in FILES] == ["ci.yml", "reproduce.yml", "site.yml", "validate.yml"]


def test_zizmor_finds_nothing_of_high_severity():
    findings = zizmor(WORKFLOWS)
    high = [(f["ident"], f["locations"][0]["symbolic"]["key"]) for f in findings
            if f["determinations"]["severity"] == "High"]
    assert high == []
    assert findings == []  # in fact nothing at all, at any severity, for the regular persona


def test_zizmor_would_catch_a_dangerous_workflow(tmp_path):
    """The check above can fail: the same call flags a pull_request_target workflow."""
    bad = tmp_path / ".github" / "workflows"
    bad.mkdir(parents=True)
    (bad / "bad.yml").write_text(
        "on: pull_request_target\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v4\n      - run: echo \"${{ github.event.pull_request.title }}\"\n")
    idents = {f["ident"] for f in zizmor(bad) if f["determinations"]["severity"] == "High"}
    assert {"dangerous-triggers", "template-injection", "unpinned-uses"} <= idents


def test_workflows_match_the_github_workflow_schema():
    out = subprocess.run([tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *map(str, FILES)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_trust_rules(path):
    wf = load(path)
    assert "pull_request_target" not in wf["on"]
    assert wf["permissions"] == {}
    for name, job in wf["jobs"].items():
        assert "permissions" in job, f"{path.name}: job {name} sets no permissions of its own"
        assert job["permissions"].get("contents", "read") == "read"
        for step in job["steps"]:
            uses = step.get("uses")
            if uses:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", uses), f"{path.name}: {uses} not pinned by sha"
            if uses and uses.startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False


def test_validate_runs_the_base_toolkit_on_the_pull_requests_files():
    wf = load(WORKFLOWS / "validate.yml")
    assert wf["on"]["pull_request"]["paths"] == ["submissions/**", "judgements/**"]
    steps = wf["jobs"]["validate"]["steps"]
    base_checkout = steps[0]
    assert base_checkout["with"]["ref"] == "${{ github.event.pull_request.base.sha }}"
    runs = "\n".join(s.get("run", "") for s in steps)
    torch_at = runs.index("torch==2.14.1 torchvision==0.29.1")
    assert torch_at < runs.index("pip install --quiet ./base")  # torch pinned first, toolkit from base
    assert "recon-submit validate --paths-from" in runs and "$GITHUB_STEP_SUMMARY" in runs
    assert "mkdocs build --strict" in runs
    assert "secrets." not in (WORKFLOWS / "validate.yml").read_text()


def test_site_deploys_with_pages_actions():
    wf = load(WORKFLOWS / "site.yml")
    assert wf["on"]["push"]["branches"] == ["main"]
    deploy = wf["jobs"]["deploy"]
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["steps"][0]["uses"].startswith("actions/deploy-pages@")
    assert any(s.get("uses", "").startswith("actions/upload-pages-artifact@") for s in wf["jobs"]["build"]["steps"])


def test_reproduce_runs_contributor_code_without_secrets_and_signs_in_a_separate_job():
    """Issue 12, item 3: the job that runs the entry's attack holds no secret and no write token; the
    job that holds the key runs no contributor code and waits for a reviewer (an environment)."""
    text = (WORKFLOWS / "reproduce.yml").read_text()
    wf = load(WORKFLOWS / "reproduce.yml")
    assert list(wf["on"]) == ["workflow_dispatch"]
    run, sign = wf["jobs"]["run"], wf["jobs"]["sign"]
    # The untrusted job: read-only token, no secrets anywhere in it, no environment, no credentials.
    assert run["permissions"] == {"contents": "read"}
    assert "secrets." not in yaml.safe_dump(run) and "environment" not in run
    assert all(s["with"]["persist-credentials"] is False for s in run["steps"] if s.get("uses", "").startswith("actions/checkout@"))
    run_steps = "\n".join(s.get("run", "") for s in run["steps"])
    assert "--run-only" in run_steps and "--key" not in run_steps
    # It never sees the submitted reconstructions (sparse, blob-less checkout of result, source, keys).
    entry_checkout = run["steps"][1]["with"]
    assert entry_checkout["filter"] == "blob:none" and "reconstructions" not in entry_checkout["sparse-checkout"]
    # The signing job: needs the run, an approved environment, read-only token, and runs no attack.
    assert sign["needs"] == "run" and sign["environment"] == "reproduction"
    assert sign["permissions"] == {"contents": "read"}
    sign_steps = "\n".join(s.get("run", "") for s in sign["steps"])
    assert "--from-run run --key" in sign_steps and "--run-only" not in sign_steps
    assert "--reproducers base/maintainers/reproducers.toml" in sign_steps  # the dispatched ref's keys, not the entry's
    assert "pip install --quiet ./pr" not in sign_steps and "evaluate" not in sign_steps
    assert [s for s in sign["steps"] if "secrets." in yaml.safe_dump(s)] == [
        next(s for s in sign["steps"] if "--from-run" in s.get("run", ""))]  # the key reaches one step only
    assert text.count("secrets.") == 1
