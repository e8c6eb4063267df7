"""Every judged call on disk, one small JSON file per request key, written atomically.

Key = sha256 of the canonical JSON of (model, prompt, the sent images' pixel hashes in order, the
candidate order, the repeat, the request parameters). The repeat is part of the key because the SoK
asks the same question 5 times: without it the fixed-order mode's 5 identical requests would share
one answer. A rerun finds every answer and makes no call; an interrupted study resumes where it was.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from reconbench.core.io import write_json
from reconbench.core.signing import canonical


def default_cache_dir() -> Path:
    base = os.environ.get("RECONBENCH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "reconbench")
    return Path(base) / "judge"


def request_key(model: str, prompt: str, image_hashes: list[str], order: list[int], repeat: int, params: dict) -> str:
    blob = canonical({"model": model, "prompt": prompt, "images": image_hashes, "order": order,
                      "repeat": repeat, "params": params})
    return hashlib.sha256(blob).hexdigest()


class AnswerCache:
    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError, OSError):
            return None  # absent, or damaged by hand: ask again (writes are atomic, so never half-written)
        if not isinstance(data, dict) or data.get("key") != key or not isinstance(data.get("answers"), list):
            return None
        return data

    def put(self, key: str, record: dict) -> None:
        write_json(self._path(key), {**record, "key": key})
