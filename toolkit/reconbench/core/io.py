"""Atomic writes and safetensors arrays: the only file formats the toolkit reads (never pickle)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import load_file, save_file


class FileFormatError(Exception):
    """A file that is missing, malformed or of the wrong shape; the message names the file."""


def _beside(path: Path, create, suffix: str) -> Path:
    """A new file or folder with a random name beside `path`, made by `create` with the modes a plain
    open() or mkdir() gives (the umask's), not tempfile's 0600/0700: the result is a published file."""
    import secrets

    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}{suffix}"
        try:
            create(tmp)
            return tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{path.parent}: no free temporary name beside {path.name}")


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it over `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _beside(path, lambda p: os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)), ".tmp")
    made = os.stat(tmp)
    try:
        yield Path(tmp)
        if os.stat(tmp).st_ino != made.st_ino:  # a writer replaced the file (safetensors' save_file makes it 0600):
            os.chmod(tmp, stat.S_IMODE(made.st_mode))  # the mode it was made with; a chmod of the block's own stands
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def atomic_dir(path: Path) -> Iterator[Path]:
    """Yield a temporary folder beside `path`; it becomes `path` only if the block succeeds."""
    path = Path(path)
    if path.exists():
        raise FileExistsError(f"{path}: already exists; choose another --out or remove it")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _beside(path, lambda p: os.mkdir(p, 0o777), "")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def sha256_file(path: str | Path, chunk_size: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in chunks (model files can be large)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(chunk_size):
            h.update(chunk)
    return h.hexdigest()


def read_json(path: Path, *, missing: str, invalid: str) -> object:
    """The parsed JSON of `path`; FileFormatError "<path>: <missing>" when there is no such file,
    "<path>: <invalid> (<reason>)" when it cannot be read or parsed."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileFormatError(f"{path}: {missing}") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise FileFormatError(f"{path}: {invalid} ({exc})") from None


def read_format_json(path: Path, fmt: str, *, missing: str, invalid: str = "not valid JSON") -> dict:
    """A JSON object whose "format" is `fmt` (a manifest or config the toolkit wrote); FileFormatError otherwise."""
    data = read_json(path, missing=missing, invalid=invalid)
    if not isinstance(data, dict) or data.get("format") != fmt:
        raise FileFormatError(f"{path}: not a {fmt} {Path(path).stem}")
    return data


def write_json(path: Path, obj: object) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8")


def sort_safetensors_metadata(path: Path) -> None:
    """Rewrite a safetensors file's header with its metadata keys sorted. safetensors serialises the
    metadata from a Rust HashMap, whose order changes from one process to the next: without this,
    two runs of the same recipe write the same weights under headers that differ, and the pinned
    sha256 of a shipped file matches a rebuild only half the time."""
    raw = Path(path).read_bytes()
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + size])
    meta = header.pop("__metadata__", None)
    if not meta:
        return
    ordered = {"__metadata__": dict(sorted(meta.items())), **header}
    text = json.dumps(ordered, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)  # the format pads its header to 8 bytes with spaces
    Path(path).write_bytes(len(text).to_bytes(8, "little") + text + raw[8 + size :])


def save_arrays(path: Path, arrays: dict[str, np.ndarray], metadata: dict[str, str] | None = None) -> None:
    with atomic_path(path) as tmp:
        save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, str(tmp), metadata=metadata)
        sort_safetensors_metadata(tmp)


def load_arrays(path: Path, required: dict[str, type] | None = None) -> dict[str, np.ndarray]:
    """Load a safetensors file; check that each required key is there with the right dtype."""
    path = Path(path)
    if not path.is_file():
        raise FileFormatError(f"{path}: file not found")
    try:
        arrays = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise FileFormatError(f"{path}: not a valid safetensors file ({exc})") from None
    for key, dtype in (required or {}).items():
        if key not in arrays:
            raise FileFormatError(f"{path}: missing tensor '{key}' (has {sorted(arrays)})")
        if arrays[key].dtype != np.dtype(dtype):
            raise FileFormatError(f"{path}: tensor '{key}' is {arrays[key].dtype}, expected {np.dtype(dtype)}")
    return arrays


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not allowed in a signed file")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400 parses to inf
        raise ValueError(f"number {text[:40]} is not finite")
    return value


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """Python keeps the last of two equal keys, other readers (and a human on GitHub) may see the
    first: a file where they differ means two things at once, so it is refused outright."""
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {ascii(key)[:80]} in one object")
        out[key] = value
    return out


def strict_json_loads(text: str | bytes):
    """JSON with no duplicate keys, no NaN/Infinity, no number that overflows to infinity (every
    signed file: results, reproduction records, judge studies)."""
    return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float, object_pairs_hook=_unique_keys)
