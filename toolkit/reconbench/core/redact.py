"""Machine paths out of what is signed or published: a home folder, a checkout or a cache folder says
who ran a command and where, and is nobody else's business (a signed note is public forever)."""

from __future__ import annotations

import re

# An absolute path of two or more parts (not a URL's: no scheme or host before it); group 1: its last part.
MACHINE_PATH = re.compile(r"(?<![\w:/.~-])/(?:[\w.@+-]+/)+([\w.@+-]*)")


def no_machine_paths(text) -> str:
    """`text` with every absolute local path cut to its last part (…/name)."""
    return MACHINE_PATH.sub(lambda m: f"…/{m.group(1)}" if m.group(1) else "…/", str(text))
