"""Machine paths out of what is signed or published: a home folder, a checkout or a cache folder says
who ran a command and where, and is nobody else's business (a signed note is public forever).
One definition for both sides: the toolkit cuts these paths before it signs or publishes
(`no_machine_paths`), and validation refuses an entry whose signed or published files still hold one
(`machine_paths`, submissions/checks/machine_paths.py)."""

from __future__ import annotations

import re

# An absolute path of two or more parts (not a URL's: no scheme or host before it); group 1: its last part.
MACHINE_PATH = re.compile(r"(?<![\w:/.~-])/(?:[\w.@+-]+/)+([\w.@+-]*)")
# The same on Windows: a drive letter, then two or more parts (C:\Users\name\...).
WINDOWS_PATH = re.compile(r"(?<![\w\\])[A-Za-z]:\\(?:[\w .@+-]+\\)+([\w.@+-]*)")
PATTERNS = (MACHINE_PATH, WINDOWS_PATH)


def this_command() -> str:
    """The command line of this process as a result records it when no command is given (evaluate called
    from Python: `python /home/alice/run.py`), its machine paths cut."""
    import shlex
    import sys

    return no_machine_paths(shlex.join(sys.argv))


def no_machine_paths(text) -> str:
    """`text` with every absolute local path cut to its last part (…/name)."""
    text = str(text)
    for pattern in PATTERNS:
        text = pattern.sub(lambda m: f"…/{m.group(1)}" if m.group(1) else "…/", text)
    return text


# Where a path names a person or one machine's session: homes, temporary and per-user folders. A
# contributor's README is prose, and a system path in it (/etc/passwd, /usr/share/datasets/...) is
# nobody's folder; the toolkit's own signed fields are held to every absolute path (machine_paths).
PRIVATE_ROOTS = ("/home/", "/root/", "/Users/", "/tmp/", "/var/tmp/", "/var/folders/", "/private/", "/run/user/")


def private_paths(text) -> list[str]:
    """The machine paths in `text` under a home, temporary or per-user folder, and every Windows path."""
    return [p for p in machine_paths(text) if p.startswith(PRIVATE_ROOTS) or not p.startswith("/")]


def machine_paths(text) -> list[str]:
    """Every absolute local path in `text` (what no_machine_paths would cut), in order."""
    return [m.group(0) for pattern in PATTERNS for m in pattern.finditer(str(text))]
