"""The attack registry: name -> class, plus bring-your-own `path/to/file.py:ClassName`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from reconbench.image.attacks.base import Attack, AttackError, Progress, Reconstruction, enforce_size
from reconbench.image.attacks.bias_rec import BiasRec
from reconbench.image.attacks.checks import check_attack_class
from reconbench.image.attacks.deep_dream import DeepDream
from reconbench.image.attacks.deep_inversion import DeepInversion
from reconbench.image.attacks.deep_leakage import DeepLeakage
from reconbench.image.attacks.inv_alignment import InvAlignment
from reconbench.image.attacks.kedmi import KEDMI
from reconbench.image.attacks.mi_face import MIFace
from reconbench.core.attack_options import AttackOptions, check_declaration
from reconbench.image.attacks.plg_mi import PLGMI
from reconbench.image.attacks.revealer import Revealer
from reconbench.image.attacks.updates_leak import UpdatesLeak

ATTACKS: dict[str, type[Attack]] = {
    cls.name: cls for cls in (
        MIFace, DeepDream, DeepInversion, DeepLeakage, InvAlignment, UpdatesLeak, BiasRec, Revealer, KEDMI, PLGMI
    )
}
# What `recon-submit evaluate` runs with no options (the CLI repeats the name: it imports no attack code).
# DeepDream at its default budget (500 steps per batch on the 8x8 tracks): a main job of about a
# minute on a 2-core CPU; DeepInversion's 2,000 steps took minutes (issue 37, bench_first_submission.py).
DEFAULT_ATTACK = "deepdream"


def load_attack(spec: str | type[Attack]) -> type[Attack]:
    """A registered name, `path/to/file.py:ClassName`, or an Attack subclass itself (a notebook's)."""
    if isinstance(spec, type):
        cls = check_attack_class(spec, f"class {spec.__module__}.{spec.__qualname__}")
        check_declaration(cls)
        return cls
    if spec in ATTACKS:
        return ATTACKS[spec]
    if ":" not in spec or not spec.split(":", 1)[0].endswith(".py"):
        raise AttackError(f"unknown attack '{spec}' (known: {', '.join(sorted(ATTACKS))}; or path/to/file.py:ClassName)")
    file, class_name = spec.rsplit(":", 1)
    path = Path(file)
    if not path.is_file():
        raise AttackError(f"{path}: attack file not found")
    module_name = f"reconbench_user_attack_{abs(hash(path.resolve()))}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise AttackError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[module_name] = module
    try:
        loader_spec.loader.exec_module(module)
    except Exception as exc:  # the user's code: report, don't crash the CLI
        raise AttackError(f"{path}: importing it failed: {type(exc).__name__}: {exc}") from None
    if not hasattr(module, class_name):
        raise AttackError(f"{path}: defines no class '{class_name}'")
    cls = check_attack_class(getattr(module, class_name), f"{path}:{class_name}")
    check_declaration(cls)  # options and presets usable, before any run
    return cls


__all__ = ["ATTACKS", "DEFAULT_ATTACK", "Attack", "AttackError", "AttackOptions", "Progress", "Reconstruction", "enforce_size", "load_attack"]
