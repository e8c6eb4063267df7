"""Old import paths of modules that moved into their concern's package (issue 25).

Signed results record their attack's code as `module:Class` ("reconbench.attacks.mi_face:MIFace"),
pinned registry recipes run `python -m reconbench.models.fashion_targets`, and users' scripts import
`reconbench.tracks`. Those names must keep working, so `import reconbench` installs a finder that
answers an old name with the module now at its new place: the same module object, not a copy
(classes compare equal and `code_reference()` names the new place). `canonical_code` compares a
recorded `module:Class` by where the class lives now. Nothing inside the package uses an old name
(tests/test_moved_modules.py).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

# old prefix -> new prefix; a prefix covers its submodules ("reconbench.attacks.mi_face"), and the
# longest matching prefix wins (reconbench.attacks.errors went to core/, the other attacks to image/).
MOVED: dict[str, str] = {
    **{f"reconbench.{m}": f"reconbench.core.{m}" for m in (
        "errors", "io", "cache", "threads", "signing", "scenario", "tracks", "catalogue", "console", "attack_source",
        "hub", "queries")},
    **{f"reconbench.{m}": f"reconbench.pipeline.{m}" for m in ("preflight", "isolation")},
    **{f"reconbench.{m}": f"reconbench.image.{m}" for m in (
        "knowledge", "track_files", "results", "dynamic", "attacks", "metrics", "models", "data", "surrogate",
        "evaluation")},
    "reconbench.attacks.errors": "reconbench.core.attack_errors",
    "reconbench.attacks.options": "reconbench.core.attack_options",
    "reconbench.metrics.report": "reconbench.core.report",
    "reconbench.metrics.membership": "reconbench.core.membership",
    "reconbench.commands": "reconbench.cli.commands",
    "reconbench.leaderboard.labels": "reconbench.core.labels",  # validation checks the notes it parses too
}


_LONGEST_FIRST = sorted(MOVED, key=len, reverse=True)


def new_name(name: str) -> str | None:
    """Where an old module name lives now, or None when it did not move."""
    if not name.startswith("reconbench."):  # the finder sees every import (torch's thousands): answer those at once
        return None
    for old in _LONGEST_FIRST:
        if name == old or name.startswith(old + "."):
            return MOVED[old] + name[len(old):]
    return None


def canonical_code(code: str) -> str:
    """A recorded `module:Class` with its module's current name (a file attack is left as it is)."""
    module, sep, cls = code.partition(":")
    moved = new_name(module) if sep else None
    return f"{moved}:{cls}" if moved else code


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers an old name with the module at its new name (imported there, then shared)."""

    def __init__(self) -> None:
        self._specs: dict[str, object] = {}

    def find_spec(self, fullname, path=None, target=None):
        moved = new_name(fullname)
        if moved is None:
            return None
        real = importlib.util.find_spec(moved)
        if real is None:
            return None
        # The real file as origin: `python -m OLD` runs it with its own __file__.
        spec = importlib.util.spec_from_file_location(fullname, real.origin, loader=self,
                                                      submodule_search_locations=real.submodule_search_locations)
        return spec

    def create_module(self, spec):
        module = importlib.import_module(new_name(spec.name))
        self._specs[spec.name] = module.__spec__  # the import system overwrites __spec__; exec_module restores it
        return module

    def exec_module(self, module) -> None:
        module.__spec__ = self._specs.pop(module.__spec__.name, module.__spec__)

    def get_code(self, fullname):  # runpy (`python -m OLD`)
        moved = new_name(fullname)
        return importlib.util.find_spec(moved).loader.get_code(moved)

    def is_package(self, fullname) -> bool:
        return importlib.util.find_spec(new_name(fullname)).submodule_search_locations is not None


def install() -> None:
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MovedFinder())
