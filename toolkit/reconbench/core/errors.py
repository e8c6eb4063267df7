"""How the CLI turns an exception into one line: user errors, errors raised by an attack, bugs.

Nothing here imports the modules whose errors it knows: an error class whose module was never
imported cannot have been raised, so classes are looked up in `sys.modules` when an error arrives.
That keeps `recon-submit --help` from importing torch.
"""

from __future__ import annotations

import sys
import traceback
from types import TracebackType

# module -> error classes that mean "the user's input is wrong" (print the message, no traceback).
USER_ERROR_CLASSES: dict[str, tuple[str, ...]] = {
    "reconbench.core.attack_errors": ("AttackError",),
    "reconbench.core.attack_source": ("SourceError",),
    "reconbench.core.hub": ("HubError",),
    "reconbench.core.io": ("FileFormatError",),
    "reconbench.core.seal": ("SealError",),
    "reconbench.image.knowledge": ("KnowledgeError",),
    "reconbench.image.results": ("ResultError",),
    "reconbench.core.signing": ("SigningError",),
    "reconbench.core.tracks": ("TrackError",),
    "reconbench.submissions.submit": ("SubmitError",),
    "reconbench.submissions.team": ("TeamError",),
    "reconbench.submissions.layout": ("LayoutError",),
    "reconbench.text.jsonl": ("TextFileError",),
}


class UserError(Exception):
    """Raised by checks in the toolkit itself (bad option, unusable device, existing --out)."""


def user_error_types() -> tuple[type[BaseException], ...]:
    types: list[type[BaseException]] = [UserError, ValueError, OSError]
    for module, names in USER_ERROR_CLASSES.items():
        loaded = sys.modules.get(module)
        types += [getattr(loaded, n) for n in names if loaded is not None and hasattr(loaded, n)]
    return tuple(types)


def is_user_error(exc: BaseException) -> bool:
    return isinstance(exc, user_error_types())


def _is_attack(obj: object) -> bool:
    base = sys.modules.get("reconbench.image.attacks.base")
    return base is not None and isinstance(obj, base.Attack)


def attack_origin(tb: TracebackType | None) -> tuple[str, str, int] | None:
    """(attack name, file, line) of the innermost frame that runs an attack's own code.

    A method of an Attack instance running in the file of the attack's class names the attack
    (not the base class's helpers); deeper frames in that file (module-level helpers) refine the line.
    """
    found: tuple[str, str, int] | None = None
    for frame, line in traceback.walk_tb(tb):
        file = frame.f_code.co_filename
        me = frame.f_locals.get("self")
        if _is_attack(me) and file == getattr(sys.modules.get(type(me).__module__), "__file__", file):
            found = (getattr(me, "name", type(me).__name__), file, line)
        elif found is not None and file == found[1]:
            found = (found[0], file, line)
    return found


def _message(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror}"
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0] if isinstance(exc, OSError) else text


def describe(exc: BaseException) -> str:
    """The one line printed for `exc` (without the 'error:' prefix)."""
    origin = attack_origin(exc.__traceback__)
    if origin is not None:
        name, file, line = origin
        kind = "" if is_user_error(exc) and type(exc).__module__.startswith("reconbench") else f"{type(exc).__name__}: "
        return f"the attack '{name}' failed at {file}:{line}: {kind}{_message(exc)}"
    if is_user_error(exc):
        return _message(exc)
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return (f"internal error {type(exc).__name__}: {_message(exc)}{where} "
            "(run again with --debug for the traceback, and please report it)")
