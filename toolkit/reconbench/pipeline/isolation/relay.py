"""The attack's stdout and stderr: pipes the evaluator reads and relays to its own stderr, never the
evaluator's own descriptors (where the evaluator's stderr is a log file, the attack would otherwise
hold a writable descriptor to it).

Relayed line by line, each line capped, made inert (reconbench.core.untrusted.output_line): terminal
escape sequences and other control characters are written out as escapes (a carriage return is kept:
progress bars redraw their line with it), and a line that CI would read as a workflow command
(`::stop-commands::`, `::add-mask::`, `##[`, `##vso[`) gets `attack| ` in front.

The whole output is capped (MAX_OUTPUT a run): where the evaluator's stderr is a file or a CI log,
that file is the one thing on the evaluator's disk an attack could otherwise grow without bound, at
the speed of a loop of writes. Past the cap the
pipe is still drained (the attack never blocks on it), and one line says how much was not shown.
"""

from __future__ import annotations

import os
import threading

from reconbench.core.untrusted import COMMAND, PREFIX
from reconbench.core.untrusted import output_line as neutralise

__all__ = ["COMMAND", "MAX_LINE", "MAX_OUTPUT", "PREFIX", "Relay", "neutralise"]

MAX_LINE = 256 * 1024  # longer lines are relayed in pieces, each one checked as a line of its own
MAX_OUTPUT = 64 * 1024 * 1024  # bytes of the attack's output relayed in one run; the rest is counted, not shown


class Relay:
    """A thread copying one pipe to `target` (a descriptor), made inert and capped."""

    def __init__(self, read_fd: int, target: int = 2, cap: int = MAX_OUTPUT):
        self.fd, self.target, self.cap = read_fd, target, cap
        self.relayed = self.dropped = 0  # bytes of the attack's output shown, and not shown
        self.thread = threading.Thread(target=self._run, name="attack-output", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        pending = b""
        try:
            while True:
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    break
                if self.relayed >= self.cap:  # drained, counted, not shown
                    self.dropped += len(pending) + len(chunk)
                    pending = b""
                    continue
                pending += chunk
                *lines, pending = pending.split(b"\n")
                while len(pending) > MAX_LINE:
                    lines.append(pending[:MAX_LINE])
                    pending = pending[MAX_LINE:]
                self._write(b"".join(self._shown(ln) for ln in lines))
            if pending:
                self._write(self._shown(pending))
        except OSError:
            pass
        finally:
            if self.dropped:
                self._write(f"{PREFIX}... {self.dropped:,} more bytes of the attack's output not shown (the relay "
                            f"shows at most {self.cap:,} bytes a run)\n".encode())
            os.close(self.fd)

    def _shown(self, line: bytes) -> bytes:
        """What is printed for one line of the attack's output: its pieces of at most MAX_LINE, each
        made inert, up to the cap."""
        out = []
        for i in range(0, max(len(line), 1), MAX_LINE):
            if self.relayed >= self.cap:
                self.dropped += len(line) - i + 1
                break
            piece = line[i:i + MAX_LINE]
            self.relayed += len(piece) + 1
            out.append(neutralise(piece) + b"\n")
        return b"".join(out)

    def _write(self, data: bytes) -> None:
        while data:
            data = data[os.write(self.target, data):]

    def join(self, timeout: float = 10) -> None:
        """Wait until every writer has closed the pipe (the attack's tree is gone) and all is relayed."""
        self.thread.join(timeout)
