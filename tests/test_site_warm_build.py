"""Issue 45, item 5: the site build says at once that it has started, and a warm build re-scores nothing
that has not changed. The build's validation (leaderboard/build.load_reports, the path the MkDocs hook
takes) reads the validation cache under $RECONBENCH_CACHE, authenticated by CI's secret where one is
set: a second build re-scores no entry, an entry changed since is re-scored, and a record planted in
the cache folder (its digest not made under the secret) is never reused."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

from reconbench.leaderboard import build
from reconbench.submissions import validate
from reconbench.submissions import validation_cache as vc
from submission_helpers import fresh_board

REPO = Path(__file__).resolve().parents[1]
SECRET = "throwaway test key for the site build, not the CI secret"


@pytest.fixture
def board(tmp_path_factory, tmp_path, monkeypatch):
    monkeypatch.setenv("RECONBENCH_CACHE", str(tmp_path / "cache"))  # outside the board's folder
    monkeypatch.setenv(vc.KEY_ENV, SECRET)
    monkeypatch.delenv(vc.CACHE_ENV, raising=False)
    return fresh_board(tmp_path_factory, tmp_path)


@pytest.fixture
def rescored(monkeypatch):
    """Entry folders whose re-score stage really ran, in order (the stage is wrapped, not replaced)."""
    ran: list[Path] = []

    def counted(stage):
        def run(ctx):
            ran.append(ctx.entry_dir)
            return stage(ctx)
        return run

    monkeypatch.setattr(validate, "STAGES", [(n, counted(s) if n == "rescore" else s) for n, s in validate.STAGES])
    return ran


def site_validation(board, caplog) -> tuple[dict, list[str]]:
    """The site build's validation of the board: (entry path -> report dict, its progress lines)."""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="mkdocs.hooks.reconbench.build"):
        reports = build.load_reports(board.root, rescore=True, device="cpu")
    lines = [r.getMessage() for r in caplog.records if re.match(r"reconbench: validation \d+/\d+ ", r.getMessage())]
    return {str(r.path): r.to_dict() for r in reports}, lines


def test_a_warm_build_rescores_nothing_and_a_changed_entry_is_rescored(board, rescored, caplog):
    cold, cold_lines = site_validation(board, caplog)
    assert rescored == [board.entry] and cold[str(board.entry)]["trust"] == "re-scored"
    assert any(", re-scored in " in line for line in cold_lines)

    warm, warm_lines = site_validation(board, caplog)
    assert rescored == [board.entry]  # nothing ran again
    assert warm == cold  # the same reports, checks and trust as the cold build's
    assert warm_lines and all("from the validation cache" in line for line in warm_lines), warm_lines

    # the entry changes (its claimed MSE halved, signed again by its team): re-scored, and it fails
    board.resign(lambda p: p["metrics"]["mse"].update(value=p["metrics"]["mse"]["value"] / 2))
    changed, _ = site_validation(board, caplog)
    assert rescored == [board.entry, board.entry]
    assert changed[str(board.entry)]["trust"] == "failed"
    assert any(c["name"] == "rescore.mse" and c["status"] == "fail" for c in changed[str(board.entry)]["checks"])


@pytest.mark.parametrize("forgery", ["digest recomputed without the secret", "record edited, digest kept"])
def test_a_forged_cache_record_is_not_trusted_by_the_build(board, rescored, caplog, forgery):
    """A hostile contributor who can write into the cache folder (a restored CI cache, a shared runner)
    turns the genuine record into one that says the entry's claims were re-scored as 0.97: the build
    re-scores the entry and reports what a build without any cache reports."""
    import hashlib

    cold, _ = site_validation(board, caplog)
    [path] = list((Path(board.root).parent / "cache" / "validation" / "checks").rglob("*.json"))
    data = json.loads(path.read_text())
    for c in data["record"]["checks"]:
        if c["name"].startswith("rescore."):
            c["message"] = "SSIM 0.97 re-scored within tolerance"
    if forgery.startswith("digest recomputed"):  # what anyone can compute: the FORMAT 1 plain sha256
        body = json.dumps(data["record"], ensure_ascii=True, sort_keys=True, separators=(",", ":")).encode()
        data["digest"] = hashlib.sha256(vc.FORMAT.encode() + b"\0" + data["key"].encode() + b"\0" + body).hexdigest()
    path.write_text(json.dumps(data, sort_keys=True))

    again, lines = site_validation(board, caplog)
    assert rescored == [board.entry, board.entry]  # re-derived, not reused
    assert again == cold
    assert not any("0.97" in c["message"] for c in again[str(board.entry)]["checks"])
    assert not any("from the validation cache" in line for line in lines)


def test_the_first_progress_line_comes_before_the_heavy_imports():
    """`make site` loads the hook first: its first line is logged before pandas and torch are imported
    (they take tens of seconds on a loaded machine; issue 45: nothing printed for 221 s)."""
    probe = (
        "import importlib.util, logging, sys\n"
        "seen = []\n"
        "class H(logging.Handler):\n"
        "    def emit(self, record):\n"
        "        seen.append((record.getMessage(), 'pandas' in sys.modules, 'torch' in sys.modules))\n"
        "logging.getLogger('mkdocs').addHandler(H()); logging.getLogger('mkdocs').setLevel(logging.INFO)\n"
        f"spec = importlib.util.spec_from_file_location('hook', {str(REPO / 'toolkit/reconbench/leaderboard/hook.py')!r})\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
        "print(repr(seen[0]))\n"
        "assert 'pandas' in sys.modules\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "PYTHONPATH": str(REPO / "toolkit")})
    assert out.returncode == 0, out.stderr[-3000:]
    message, pandas_loaded, torch_loaded = eval(out.stdout.strip())  # noqa: S307 - our own repr of a tuple
    assert message.startswith("reconbench: the site build starts") and not pandas_loaded and not torch_loaded


def test_the_eta_is_the_mean_pace_so_far():
    assert build.eta(30.0, 10, 40) == "about 2 min left"  # 3 s an entry, 30 left: 90 s
    assert build.eta(10.0, 5, 10) == "about 10 s left"
    assert build.eta(99.0, 7, 7) == "done"


def test_editing_a_page_template_keeps_the_cache_key_and_editing_code_changes_it(tmp_path):
    """The validation cache's key covers the toolkit's code, registry and embedded files, not the site's page
    templates (which no check reads): a template edit leaves every record valid, a code edit none."""
    package = Path(vc.__file__).resolve().parents[1]
    files = vc.keyed_files(package)
    assert not [p for p in files if p.suffix == ".j2"]
    assert {p for p in package.rglob("*.py") if "__pycache__" not in p.parts} <= set(files)
    assert package / "registry" / "tracks.json" in files  # the registry pins what is scored

    copy = tmp_path / "reconbench"
    (copy / "leaderboard" / "templates").mkdir(parents=True)
    (copy / "checks.py").write_text("LIMIT = 1\n")
    (copy / "leaderboard" / "templates" / "entry.md.j2").write_text("{{ entry }}\n")
    before = vc._hash_files(vc.keyed_files(copy), copy)
    (copy / "leaderboard" / "templates" / "entry.md.j2").write_text("{{ entry }} edited\n")
    assert vc._hash_files(vc.keyed_files(copy), copy) == before
    (copy / "checks.py").write_text("LIMIT = 2\n")
    assert vc._hash_files(vc.keyed_files(copy), copy) != before
