"""Text from an untrusted source (an attack's process, the names of an entry's files) made inert before
the toolkit prints it: to a terminal and to a CI log it is only text.

Two things in printed text act on what reads it:
- control characters: ESC starts a terminal's escape sequences (clear the screen, move the cursor over
  lines already printed, set the window title, a hyperlink, the clipboard through OSC 52), a newline
  starts a line the reader takes for the toolkit's own, the C1 range and the bidirectional controls
  reorder or hide what is shown. Each is written out as its escape (`\\x1b`, `\\n`, `\\u202e`).
- CI workflow commands: on GitHub Actions a line starting with `::` (`::stop-commands::`,
  `::add-mask::`, `::error::`) or `##[` is read by the runner as a command, and Azure's `##vso[` too.
  Such a line gets `attack| ` in front, which no runner reads as a command.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline (and, for a program's output, carriage return), DEL, the C1 range, and
# the bidirectional marks, embeddings, overrides and isolates (a line that prints in another order than it reads)
_OTHER = r"\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROLS = re.compile(rf"[\x00-\x08\x0b-\x1f{_OTHER}]")
_CONTROLS_AND_NEWLINE = re.compile(rf"[\x00-\x08\x0a-\x1f{_OTHER}]")
_CONTROLS_BUT_CR = re.compile(rf"[\x00-\x08\x0b\x0c\x0e-\x1f{_OTHER}]")
COMMAND = re.compile(r"^[ \t\f\v]*(::|##\[|##vso\[)", re.IGNORECASE)
PREFIX = "attack| "


def _escaped(match: re.Match) -> str:
    c = match.group()
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def no_command(line: str) -> str:
    """One line that a CI runner will not read as a workflow command."""
    return PREFIX + line if COMMAND.match(line) else line


def line(text: object) -> str:
    """One line: every control character (newlines too) escaped, never a workflow command."""
    return no_command(_CONTROLS_AND_NEWLINE.sub(_escaped, str(text)))


def lines(text: object) -> str:
    """Several lines (a traceback): newlines kept, every other control character escaped, no line a
    workflow command."""
    return "\n".join(no_command(part) for part in _CONTROLS.sub(_escaped, str(text)).split("\n"))


def output_line(piece: bytes) -> bytes:
    """One line of a program's output (without its end), as the relay prints it: not UTF-8 bytes and
    every control character but tab and carriage return escaped (a progress bar redraws its line with
    a carriage return), and no part after a carriage return a workflow command (a runner may split
    lines there)."""
    text = _CONTROLS_BUT_CR.sub(_escaped, piece.decode("utf-8", "backslashreplace"))
    return "\r".join(no_command(part) for part in text.split("\r")).encode("utf-8")
