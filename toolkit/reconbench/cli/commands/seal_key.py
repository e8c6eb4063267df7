"""Reading the board's seal key on the command line (`validate --seal-key`, `seal run/reveal/pack-output`):
its own module, so `seal` and `submission` both read it without importing each other."""

from __future__ import annotations

from pathlib import Path

from reconbench.core.console import fail


def read_seal_key(path: Path) -> bytes:
    """The key at `path` (validate --seal-key, seal reveal), or one line naming the file and the problem."""
    from reconbench.core.seal import SealError, read_key

    try:
        return read_key(path)
    except SealError as exc:
        fail(str(exc))
