"""Modules moved into their concern's package (issue 25) keep their old import paths working
(reconbench.core.moved): signed results record `reconbench.attacks.mi_face:MIFace`, pinned weights
record `python -m reconbench.models.embedded`, users' scripts import `reconbench.tracks`. The
package itself uses only the new names."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from reconbench.core.moved import MOVED, canonical_code, new_name

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "toolkit" / "reconbench"


@pytest.mark.parametrize("old, new", sorted(MOVED.items()))
def test_an_old_name_is_the_module_at_its_new_place(old, new):
    """The same module object, not a second copy, keeping its own name and file."""
    moved = importlib.import_module(old)
    assert moved is importlib.import_module(new)
    assert moved.__name__ == new and moved.__spec__.name == new
    assert Path(moved.__file__).resolve().is_relative_to(PACKAGE)


def test_a_class_reached_by_its_old_path_is_the_same_class():
    from reconbench.attacks.mi_face import MIFace as Old
    from reconbench.image.attacks.mi_face import MIFace

    assert Old is MIFace and MIFace.code_reference() == "reconbench.image.attacks.mi_face:MIFace"
    assert importlib.import_module("reconbench.tracks").get_track("digits").id == "digits"


def test_names_map_by_whole_parts_only():
    assert new_name("reconbench.attacks.mi_face") == "reconbench.image.attacks.mi_face"
    assert new_name("reconbench.tracks") == "reconbench.core.tracks"
    assert new_name("reconbench.tracks_extra") is None  # a prefix ends at a dot
    assert new_name("reconbench.zoo.grid") is None and new_name("reconbench.text.tracks") is None
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("reconbench.attacks.no_such_attack")


def test_canonical_code_names_where_a_class_lives_now():
    assert canonical_code("reconbench.attacks.mi_face:MIFace") == "reconbench.image.attacks.mi_face:MIFace"
    assert canonical_code("reconbench.image.attacks.mi_face:MIFace") == "reconbench.image.attacks.mi_face:MIFace"
    assert canonical_code("reconbench.text.attacks.vec:Vec2Text") == "reconbench.text.attacks.vec:Vec2Text"
    assert canonical_code("my_attack.py:Mine") == "my_attack.py:Mine"  # a file attack is not a module


def test_every_signed_built_in_attack_code_names_its_catalogue_class():
    """The committed results recorded the old module names; they still name the registered class."""
    from reconbench.core.catalogue import BY_NAME

    seen = 0
    for path in sorted((REPO / "submissions").glob("*/*/result.json")):
        attack = json.loads(path.read_text(encoding="utf-8")).get("payload", {}).get("attack", {})
        if attack.get("name") in BY_NAME and attack.get("source_sha256") is None and ".py:" not in attack.get("code", ""):
            assert canonical_code(attack["code"]) == BY_NAME[attack["name"]].target, path
            seen += attack["code"] != BY_NAME[attack["name"]].target
    assert seen > 0  # some were signed before the move


def test_python_dash_m_runs_a_module_by_its_old_name():
    """The pinned recipes (`python -m reconbench.models.fashion_targets NAME`) still run."""
    proc = subprocess.run([sys.executable, "-m", "reconbench.models.fashion_targets", "no-such-file"],
                          capture_output=True, text=True, timeout=300, cwd=REPO,
                          env={"PYTHONPATH": str(PACKAGE.parent), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2 and "unknown weight file 'no-such-file'" in proc.stderr, proc.stderr


def _old_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        found += [f"{path}:{node.lineno} {n}" for n in names if new_name(n)]
    return found


def test_the_reader_sees_an_old_import(tmp_path):
    """The reader itself: old names in both import forms are seen; new names and relative imports not."""
    code = ("import reconbench.tracks\nfrom reconbench.attacks.base import Attack\n"
            "from reconbench.core import tracks\nfrom .attacks import x\nimport reconbench.zoo\n")
    (tmp_path / "m.py").write_text(code)
    assert [h.split(" ", 1)[1] for h in _old_imports(tmp_path / "m.py")] == ["reconbench.tracks", "reconbench.attacks.base"]


def test_nothing_in_the_repository_imports_an_old_name():
    files = [p for folder in ("toolkit", "tests", "benchmarks") for p in (REPO / folder).rglob("*.py")
             if "__pycache__" not in p.parts and p.name != Path(__file__).name]
    old = [hit for p in files for hit in _old_imports(p)]
    assert not old, "imports of moved modules by their old names:\n" + "\n".join(old)
