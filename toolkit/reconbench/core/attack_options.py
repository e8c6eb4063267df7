"""Typed attack options: each attack declares a pydantic `Options` model and budget `presets`.

    class MyAttack(Attack):
        class Options(AttackOptions):
            iterations: int = Field(1500, ge=1, description="Adam steps (paper, Sec. 4)")
            init: Literal["zeros", "uniform"] = "zeros"
        presets = {"quick": {"iterations": 30}, "paper": {"iterations": 1500}}

The "default" budget is the Options' defaults; a preset lists only what it changes. Overrides
(`--set key=value`) apply on top of the chosen preset. Validation is strict: 1.5 is not an int,
"abc" is not a number, an unknown name lists the valid ones, and every error is one line.

Attacks written before this (a plain `defaults = {...}` dict) keep working: their Options model
is derived from the defaults' types (an int default takes ints, a float default numbers, a str
default strings, None any scalar).
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from reconbench.core.attack_errors import AttackError

BUDGETS = ("quick", "default", "paper")
Budget = Literal["quick", "default", "paper"]
RESERVED = ("budget",)  # the keyword that picks a preset: no option may be called so

# "auto": a budget that depends on the track (the paper's on full-size tracks, a smaller one on the
# 8x8 embedded tracks; priors.track_budget resolves it and the result records the number).
Auto = Literal["auto"]
PositiveInt = Annotated[int, Field(ge=1)]
Scalar = Union[int, float, str, bool, None]


class OptionsError(AttackError):
    """Options that do not validate; the message is one line naming the option and the problem."""


class AttackOptions(BaseModel):
    """Base of every attack's Options: unknown names refused, strict types, no NaN/inf."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


# --- describing types for humans ------------------------------------------------------------------

_BOUNDS = (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<"))


def _constraints(metadata: list) -> str:
    parts = []
    for item in metadata:
        for attr, sign in _BOUNDS:
            value = getattr(item, attr, None)
            if value is not None:
                parts.append(f"{sign} {value:g}" if isinstance(value, float) else f"{sign} {value}")
    return " ".join(parts)


def type_text(annotation: Any, metadata: list | None = None) -> str:
    """'int ≥ 1 | 'auto'', 'float > 0', ''zeros' | 'uniform'', 'bool' ... for messages and tables."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        base, *extra = typing.get_args(annotation)
        inner = [m for e in extra for m in (e.metadata if isinstance(e, FieldInfo) else [e])]
        return type_text(base, inner + list(metadata or []))
    if origin in (Union, types.UnionType):
        return " | ".join(type_text(a) for a in typing.get_args(annotation))
    if origin is Literal:
        return " | ".join(repr(a) for a in typing.get_args(annotation))
    if annotation is type(None):
        return "null"
    name = getattr(annotation, "__name__", str(annotation))
    bounds = _constraints(metadata or [])
    return f"{name} {bounds}" if bounds else name


def field_type_text(field: FieldInfo) -> str:
    return type_text(field.annotation, list(field.metadata))


# --- the model an attack class declares (or the one derived from its old `defaults`) -------------

_DERIVED: dict[type, type[AttackOptions]] = {}


def _scalar_type(key: str, value: Any, owner: str) -> Any:
    for kind in (bool, int, float, str):  # bool first: it is an int subclass
        if type(value) is kind:
            return kind
    if value is None:
        return Scalar
    raise OptionsError(f"attack '{owner}': default of option '{key}' is {type(value).__name__}, not a scalar "
                       "(declare `class Options(AttackOptions)` with scalar fields)")


def options_model(cls: type) -> type[AttackOptions]:
    """The attack's Options model; for an old-style attack, one derived from `defaults`."""
    declared = getattr(cls, "Options", AttackOptions)
    name = getattr(cls, "name", cls.__name__)
    if not (isinstance(declared, type) and issubclass(declared, AttackOptions)):
        raise OptionsError(f"attack '{name}': Options must subclass reconbench.image.attacks.base.AttackOptions")
    if declared is not AttackOptions:
        if "defaults" in vars(cls) and vars(cls)["defaults"]:
            raise OptionsError(f"attack '{name}' declares both Options and defaults; keep Options only")
        model = declared
    else:
        if cls not in _DERIVED:
            defaults = dict(getattr(cls, "defaults", {}) or {})
            fields = {k: (_scalar_type(k, v, name), v) for k, v in defaults.items()}
            # Old-style JSON parsing gave 3 for "3": an int default keeps taking ints, a float
            # default takes ints as well (strict float accepts int).
            _DERIVED[cls] = create_model(f"{cls.__name__}Options", __base__=AttackOptions, **fields)
        model = _DERIVED[cls]
    clash = [k for k in model.model_fields if k in RESERVED]
    if clash:
        raise OptionsError(f"attack '{name}': option name '{clash[0]}' is reserved (it picks the budget preset)")
    return model


def _one_line(name: str, model: type[AttackOptions], exc: ValidationError, values: dict) -> str:
    errors = exc.errors()
    unknown = sorted({str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden"})
    if unknown:
        valid = ", ".join(model.model_fields) or "none"
        return f"attack '{name}' has no option(s) {', '.join(unknown)} (valid options: {valid})"
    bad = list(dict.fromkeys(str(e["loc"][0]) for e in errors if e["loc"]))
    first = bad[0]
    field = model.model_fields[first]
    more = f" (and {len(bad) - 1} more: {', '.join(bad[1:])})" if len(bad) > 1 else ""
    return f"attack '{name}': option '{first}' expects {field_type_text(field)}, got {values.get(first)!r}{more}"


def resolve_options(cls: type, budget: str = "default", overrides: dict | None = None) -> dict[str, Any]:
    """The validated configuration: Options defaults, then the budget preset, then the overrides."""
    name = getattr(cls, "name", cls.__name__)
    model = options_model(cls)
    presets = dict(getattr(cls, "presets", {}) or {})
    if budget not in BUDGETS:
        raise OptionsError(f"unknown budget '{budget}' (choose one of: {', '.join(BUDGETS)})")
    if budget != "default" and budget not in presets:
        have = ", ".join(["default", *[b for b in BUDGETS if b in presets]])
        raise OptionsError(f"attack '{name}' declares no '{budget}' budget preset (it has: {have})")
    preset = dict(presets.get(budget, {}))
    try:
        model.model_validate(preset)
    except ValidationError as exc:
        raise OptionsError(f"preset '{budget}' of {_one_line(name, model, exc, preset)}") from None
    values = {**preset, **(overrides or {})}
    try:
        return model.model_validate(values).model_dump()
    except ValidationError as exc:
        raise OptionsError(_one_line(name, model, exc, values)) from None


def check_declaration(cls: type) -> None:
    """Options and presets of a class are usable: every preset validates, every value is a scalar."""
    presets = getattr(cls, "presets", {}) or {}
    name = getattr(cls, "name", cls.__name__)
    if not isinstance(presets, dict) or any(k not in BUDGETS or k == "default" for k in presets):
        raise OptionsError(f"attack '{name}': presets must be a dict with keys among quick, paper (default = Options)")
    for budget in ("default", *presets):
        for key, value in resolve_options(cls, budget).items():
            if not isinstance(value, (int, float, str, bool, type(None))):
                raise OptionsError(f"attack '{name}': option '{key}' is {type(value).__name__}, not a scalar")


def details(cls: type) -> dict:
    """Everything `recon-submit attacks NAME` prints about an attack class, as data (scalars, strings,
    lists and dicts: it crosses from a bring-your-own attack's sandboxed process as JSON)."""
    check_declaration(cls)
    default = resolve_options(cls, "default")
    presets = {}
    for budget in BUDGETS:
        if budget == "default" or budget in (getattr(cls, "presets", None) or {}):
            values = resolve_options(cls, budget)
            presets[budget] = {k: v for k, v in values.items() if budget == "default" or v != default[k]}
    return {
        "name": cls.name, "paper": cls.paper, "family": cls.family, "scenarios": list(cls.scenarios),
        "variant": getattr(cls, "variant", ""), "options": describe_options(cls), "presets": presets,
    }


def describe_options(cls: type) -> list[dict[str, Any]]:
    """One row per option: name, type (with range), default, description; for `recon-submit attacks`."""
    model = options_model(cls)
    return [
        {"name": key, "type": field_type_text(field), "default": field.default, "description": field.description or ""}
        for key, field in model.model_fields.items()
    ]
