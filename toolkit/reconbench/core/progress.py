"""The progress an attack reports while it runs, for either modality."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


class Progress:
    """A step counter the harness wires to a rich progress bar (or to nothing, in tests)."""

    def __init__(self, factory: Callable[[str, int], Any] | None = None):
        self._factory = factory

    @contextmanager
    def task(self, description: str, total: int) -> Iterator[Callable[[int], None]]:
        if self._factory is None:
            yield lambda steps=1: None
            return
        with self._factory(description, total) as advance:
            yield advance
