"""Checks on an attack class, made when it is loaded: before minutes are spent running it."""

from __future__ import annotations

import inspect
import re
from typing import get_args

from reconbench.image.attacks.base import Attack, AttackError, Family
from reconbench.core import untrusted
from reconbench.core.scenario import Scenario

# The same rule as an attack's name in result.json (results.Slug): it becomes part of entry ids.
NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,79}$"


def check_attack_class(cls: object, where: str) -> type[Attack]:
    """`cls` as a usable Attack subclass, or AttackError naming `where` (file or class) and the problem."""
    if not (isinstance(cls, type) and issubclass(cls, Attack)):
        raise AttackError(f"{where}: not a subclass of reconbench.image.attacks.base.Attack")
    for attr in ("name", "paper", "family", "scenarios"):
        if not hasattr(cls, attr):
            raise AttackError(f"{where}: the class must set the class attribute '{attr}'")
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(cls.__abstractmethods__))
        raise AttackError(f"{where}: the class does not implement {missing}() (see docs: Write your own attack)")
    check_declaration(cls.name, cls.family, cls.paper, cls.scenarios, where, f"{cls.__module__}:{cls.__qualname__}")
    return cls


def check_declaration(name: object, family: object, paper: object, scenarios: object, where: str,
                      target: str | None) -> None:
    """An attack's declared name, family, paper and cells, as values: the same rules whether they come
    from a class loaded here or from what an attack's process reported (which a hostile process
    chooses freely: the evaluator checks them again). `target`: the module:Class they belong to (None:
    a bring-your-own attack's process, which may not take a built-in attack's name)."""
    if not isinstance(name, str) or not re.match(NAME_PATTERN, name):
        raise AttackError(f"{where}: name {name!r} must match {NAME_PATTERN} (lower case, digits, . _ -)")
    from reconbench.core.catalogue import BY_NAME, TEXT_BY_NAME

    builtin = BY_NAME.get(name) or TEXT_BY_NAME.get(name)  # a text attack's name is taken too
    if builtin is not None and builtin.target != target:
        raise AttackError(f"{where}: name '{name}' is taken by the built-in attack {builtin.target}; choose another")
    if family not in get_args(Family):
        raise AttackError(f"{where}: family {family!r} must be one of {', '.join(get_args(Family))}")
    if not isinstance(paper, str) or not paper.strip():
        raise AttackError(f"{where}: paper must be a non-empty string (the citation of the method)")
    if isinstance(scenarios, str) or not scenarios:
        raise AttackError(f"{where}: scenarios must be a tuple of cells such as ('static/white-box/none',)")
    for cell in scenarios:
        try:
            Scenario.parse(str(cell))
        except ValueError as exc:  # it quotes the cell: inert, as it may come from a hostile process
            raise AttackError(f"{where}: {untrusted.line(exc)}") from None
