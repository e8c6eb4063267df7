"""(id, text) records: a text target set, an auxiliary set, or a set of reconstructions.

The content hash of a set is the sha256 of its JSON Lines form: one `{"id": ..., "text": ...}`
object per line in the set's order, keys sorted, UTF-8, no ASCII escaping, "\n" after each line.
It is the text counterpart of the image target set's sha256 and is what results pin.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TextItem:
    id: str
    text: str


def jsonl_bytes(items: Iterable[TextItem]) -> bytes:
    lines = (json.dumps({"id": i.id, "text": i.text}, sort_keys=True, ensure_ascii=False) + "\n" for i in items)
    return "".join(lines).encode("utf-8")


@dataclass(frozen=True)
class TextSet:
    name: str  # "target", "aux", "test" or "reconstructions"
    items: tuple[TextItem, ...]

    @property
    def ids(self) -> list[str]:
        return [i.id for i in self.items]

    @property
    def texts(self) -> list[str]:
        return [i.text for i in self.items]

    @property
    def sha256(self) -> str:
        return hashlib.sha256(jsonl_bytes(self.items)).hexdigest()

    def __len__(self) -> int:
        return len(self.items)

    @classmethod
    def of(cls, name: str, pairs: Sequence[tuple[str, str]]) -> "TextSet":
        return cls(name, tuple(TextItem(i, t) for i, t in pairs))
