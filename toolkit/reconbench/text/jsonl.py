"""Strict reading of a reconstructions.jsonl file (the text counterpart of reconstructions.safetensors).

The one accepted form is the one `items.jsonl_bytes` writes: UTF-8 without a byte-order mark, one
JSON object per line, exactly the keys "id" and "text" (both strings), keys sorted, no ASCII
escaping, no spaces other than json.dumps' defaults, "\\n" after every line, no blank lines. Each
line is parsed strictly first (no duplicate keys, no NaN), so an error names the line and what is
wrong with it; then the file must equal the canonical bytes of what was parsed, so two files that
read the same are the same bytes (and so hash the same: the sha256 signed in result.json).

Caps (checked before anything is parsed, against what a real text study needs):
  MAX_FILE_BYTES  32 MiB   the largest SoK cell is 20,000 IMDB reviews of ~1.3 KB each, ~26 MB
  MAX_LINE_BYTES  64 KiB   an IMDB review is at most ~14k characters; a generated text is shorter
  MAX_ITEMS       100,000  five times the largest SoK fine-tuning set (20,000)
  MAX_ID_CHARS    200      ids are the corpus' own short keys (printable ASCII)
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

from reconbench.core.io import strict_json_loads
from reconbench.text.items import TextItem, TextSet, jsonl_bytes

TEXT_RECONSTRUCTIONS_FILE = "reconstructions.jsonl"
MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_LINE_BYTES = 64 * 1024
MAX_ITEMS = 100_000
MAX_ID_CHARS = 200
ID_PATTERN = re.compile(r"[\x21-\x7e]{1,%d}" % MAX_ID_CHARS)  # printable ASCII, no spaces


class TextFileError(Exception):
    """A reconstructions.jsonl that breaks the format; the message names the file, line and problem."""


def parse_jsonl(data: bytes, where: str = "reconstructions.jsonl") -> TextSet:
    """The (id, text) items of a reconstructions.jsonl held in `data`; TextFileError otherwise."""
    if len(data) > MAX_FILE_BYTES:
        raise TextFileError(f"{where}: {len(data):,} bytes, over the {MAX_FILE_BYTES:,}-byte cap")
    if not data:
        raise TextFileError(f"{where}: empty (one {{\"id\", \"text\"}} object per line expected)")
    if data.startswith(b"\xef\xbb\xbf"):
        raise TextFileError(f"{where}: starts with a UTF-8 byte-order mark (write plain UTF-8)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise TextFileError(f"{where}: line {line}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    if not text.endswith("\n"):
        raise TextFileError(f"{where}: the last line has no terminating newline (truncated?)")
    lines = text[:-1].split("\n")
    if len(lines) > MAX_ITEMS:
        raise TextFileError(f"{where}: {len(lines):,} lines, over the cap of {MAX_ITEMS:,} reconstructions")
    items: list[TextItem] = []
    seen: dict[str, int] = {}
    for n, line in enumerate(lines, start=1):
        if len(line.encode("utf-8")) + 1 > MAX_LINE_BYTES:
            raise TextFileError(f"{where}: line {n}: over the {MAX_LINE_BYTES:,}-byte cap for one reconstruction")
        if not line.strip():
            raise TextFileError(f"{where}: line {n}: blank line")
        try:
            obj = strict_json_loads(line)  # no duplicate keys, no NaN/Infinity (results.py)
        except (json.JSONDecodeError, ValueError, RecursionError) as exc:
            raise TextFileError(f"{where}: line {n}: not one JSON object ({exc})") from None
        if not isinstance(obj, dict) or set(obj) != {"id", "text"}:
            got = sorted(obj)[:5] if isinstance(obj, dict) else type(obj).__name__
            raise TextFileError(f"{where}: line {n}: must be an object with exactly the keys \"id\" and \"text\", got {got}")
        ident, value = obj["id"], obj["text"]
        if not isinstance(ident, str) or not ID_PATTERN.fullmatch(ident):
            raise TextFileError(f"{where}: line {n}: id must be 1-{MAX_ID_CHARS} printable ASCII characters without "
                                f"spaces, got {ascii(ident)[:80]}")
        if not isinstance(value, str):
            raise TextFileError(f"{where}: line {n}: text must be a string, got {type(value).__name__}")
        if "\x00" in value or any(0xD800 <= ord(c) <= 0xDFFF for c in value):
            raise TextFileError(f"{where}: line {n}: text holds a NUL or a lone surrogate (not text)")
        if ident in seen:
            raise TextFileError(f"{where}: line {n}: id {ident!r} already on line {seen[ident]} (duplicate id)")
        seen[ident] = n
        items.append(TextItem(ident, value))
    if jsonl_bytes(items) != data:
        first = next((i + 1 for i, (a, b) in enumerate(zip(jsonl_bytes(items).split(b"\n"), data.split(b"\n")))
                      if a != b), len(items))
        raise TextFileError(f"{where}: line {first}: not in the canonical form (json.dumps with sorted keys, "
                            "ensure_ascii=False, default separators; reconbench.text.items.jsonl_bytes)")
    return TextSet("reconstructions", tuple(items))


def read_jsonl(path: Path, max_bytes: int = MAX_FILE_BYTES) -> TextSet:
    """parse_jsonl of a file: its size is checked (lstat, no link followed) before a byte is read."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise TextFileError(f"{path}: file not found") from None
    except OSError as exc:
        raise TextFileError(f"{path}: cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise TextFileError(f"{path}: not a regular file (links are not followed)")
    if st.st_size > max_bytes:
        raise TextFileError(f"{path}: {st.st_size:,} bytes, over the {max_bytes:,}-byte cap")
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)), "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise TextFileError(f"{path}: cannot be read ({exc.strerror})") from None
    return parse_jsonl(data, str(path))


def check_ids(recs: TextSet, target_ids: list[str], where: str) -> None:
    """Exactly one reconstruction per target, in the target set's order (what evaluate writes)."""
    if recs.ids == list(target_ids):
        return
    have, want = set(recs.ids), set(target_ids)
    missing, extra = [i for i in target_ids if i not in have], [i for i in recs.ids if i not in want]
    if missing:
        raise TextFileError(f"{where}: {len(missing)} target id(s) have no reconstruction, e.g. {missing[0]!r} "
                            f"(one reconstruction per target id)")
    if extra:
        raise TextFileError(f"{where}: {len(extra)} id(s) are not target ids, e.g. {extra[0]!r}")
    moved = next(i for i, (a, b) in enumerate(zip(recs.ids, target_ids)) if a != b)
    raise TextFileError(f"{where}: line {moved + 1}: id {recs.ids[moved]!r} where the target order has "
                        f"{target_ids[moved]!r} (lines must follow the target set's order)")
