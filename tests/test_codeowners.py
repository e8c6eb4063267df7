"""CODEOWNERS covers every file that is code run by CI (issue 36, item 5): the toolkit and workflows,
what main's jobs run (Makefile, tests/, .ci/, scripts/), and an entry's attack/ folder, which
reproduce.yml runs; the rest of submissions/ is data CI validates."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def rules() -> list[tuple[re.Pattern, list[str]]]:
    out = []
    for line in (REPO / ".github" / "CODEOWNERS").read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        pattern, *owners = line.split()
        out.append((compile_pattern(pattern), owners))
    return out


def compile_pattern(pattern: str) -> re.Pattern:
    """GitHub's CODEOWNERS syntax (gitignore's): a leading / anchors at the root, a trailing / means
    everything below, ** spans folders, * stays within one."""
    anchored = pattern.startswith("/") or "/" in pattern.rstrip("/")
    body = pattern.strip("/")
    regex = ""
    for part in re.split(r"(\*\*/|/\*\*|\*\*|\*|\?)", body):
        regex += {"**/": "(?:.*/)?", "/**": "/.*", "**": ".*", "*": "[^/]*", "?": "[^/]"}.get(part, re.escape(part))
    regex = ("" if anchored else "(?:.*/)?") + regex + "(?:/.*)?"
    return re.compile(regex)


def owners(path: str) -> list[str]:
    found: list[str] = []
    for pattern, who in rules():  # the last matching line wins
        if pattern.fullmatch(path):
            found = who
    return found


@pytest.mark.parametrize("path", [
    "Makefile", "tests/test_workflows.py", "tests/attacks/hostile/fork.py", ".ci/run", "scripts/leakage_table.py",
    "submissions/alpha/digits-x-1/attack/mine.py", "submissions/alpha/digits-x-1/attack/sub/helper.py",
    ".github/workflows/site.yml", ".github/CODEOWNERS", "toolkit/reconbench/cli/__init__.py", "pyproject.toml",
    "maintainers/reproducers.toml", "mkdocs.yml",
])
def test_code_that_ci_runs_needs_a_maintainer(path):
    assert owners(path) == ["@reconbench/maintainers"], path


@pytest.mark.parametrize("path", [
    "submissions/alpha/team.toml", "submissions/alpha/digits-x-1/result.json",
    "submissions/alpha/digits-x-1/reconstructions.safetensors", "submissions/alpha/attack-notes/README.md",
])
def test_submitted_data_is_validated_by_ci_not_owned(path):
    assert owners(path) == [], path


def test_the_listed_paths_exist():
    for name in ("Makefile", "tests", ".ci", "scripts", "toolkit", ".github", "maintainers"):
        assert (REPO / name).exists(), name
