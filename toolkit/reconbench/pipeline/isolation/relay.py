"""The attack's stdout and stderr: pipes the evaluator reads and relays to its own stderr, never the
evaluator's own descriptors (where the evaluator's stderr is a log file, the attack would otherwise
hold a writable descriptor to it).

Relayed line by line, each line capped, with CI's workflow commands neutralised: on GitHub Actions a
line starting with `::` (`::stop-commands::`, `::add-mask::`, `::error::`, `::set-output`...) or
`##[` is read by the runner as a command, and Azure's `##vso[` likewise. Such a line is relayed
with `attack| ` in front, which no runner reads as a command. A carriage return starts a new line
for this purpose too (a runner may split on it).
"""

from __future__ import annotations

import os
import re
import threading

MAX_LINE = 256 * 1024  # longer lines are relayed in pieces, each one checked as a line of its own
COMMAND = re.compile(rb"^[ \t\f\v]*(::|##\[|##vso\[)", re.IGNORECASE)
PREFIX = b"attack| "


def neutralise(piece: bytes) -> bytes:
    """One line (without its end) made safe to print in a CI log."""
    return b"\r".join(PREFIX + part if COMMAND.match(part) else part for part in piece.split(b"\r"))


class Relay:
    """A thread copying one pipe to `target` (a descriptor) with workflow commands neutralised."""

    def __init__(self, read_fd: int, target: int = 2):
        self.fd, self.target = read_fd, target
        self.thread = threading.Thread(target=self._run, name="attack-output", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        pending = b""
        try:
            while True:
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                while len(pending) > MAX_LINE:
                    lines.append(pending[:MAX_LINE])
                    pending = pending[MAX_LINE:]
                if lines:
                    self._write(b"".join(neutralise(ln[:MAX_LINE]) + b"\n" if len(ln) <= MAX_LINE else
                                         b"".join(neutralise(ln[i:i + MAX_LINE]) + b"\n" for i in range(0, len(ln), MAX_LINE))
                                         for ln in lines))
            if pending:
                self._write(neutralise(pending) + b"\n")
        except OSError:
            pass
        finally:
            os.close(self.fd)

    def _write(self, data: bytes) -> None:
        while data:
            data = data[os.write(self.target, data):]

    def join(self, timeout: float = 10) -> None:
        """Wait until every writer has closed the pipe (the attack's tree is gone) and all is relayed."""
        self.thread.join(timeout)
