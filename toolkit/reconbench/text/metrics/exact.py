"""Exact match: the share of reconstructions that reproduce their own target verbatim.

Verbatim up to a stated normalisation, so that a trailing space or a line break where the target had
a space does not hide a memorised text: Unicode NFC (composed and decomposed accents are one text),
every run of whitespace -> one space, leading/trailing whitespace removed. Case and punctuation count.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    return _SPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def exact_matches(reconstructions: Sequence[str], targets: Sequence[str]) -> list[bool]:
    return [normalise(r) == normalise(t) for r, t in zip(reconstructions, targets, strict=True)]


def exact_match_rate(reconstructions: Sequence[str], targets: Sequence[str]) -> float:
    matches = exact_matches(reconstructions, targets)
    return sum(matches) / len(matches)
