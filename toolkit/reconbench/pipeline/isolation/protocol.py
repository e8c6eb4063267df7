"""The messages between the evaluator's process and the attack's process.

A message is one JSON header (a dict with an "op") followed by the raw bytes of each array the
header declares ({"dtype", "shape"}). Nothing the attack's process sends is ever unpickled: the
evaluator reads JSON and fixed-dtype arrays only, with every size checked before it is read.
(The view the evaluator sends the other way is pickled: that direction carries trusted data.)
"""

from __future__ import annotations

import json
import math
from multiprocessing.connection import Connection

import numpy as np

from reconbench.core import untrusted

MAX_HEADER_BYTES = 64 * 1024
MAX_ARRAY_BYTES = 1 << 30  # one query batch or the reconstructions: far above any track's need
MAX_ARRAYS = 2  # a result: images and labels; a query: one batch
MAX_DEPTH = 16  # nesting of the JSON header (configs are flat dicts of options)
MAX_INT_DIGITS = 19  # integers in a header: 64-bit at most (a 4000-digit one would reach the signature)
MAX_DIM = 1 << 31  # one array dimension
QUERY_BATCH_BYTES = 16 * 1024 * 1024  # one query message: the attack's process splits larger queries
DTYPES = {"float32": np.float32, "int64": np.int64}


class ProtocolError(Exception):
    """A message that does not follow the protocol (the attack's process misbehaved or died)."""


def send(conn: Connection, header: dict, *arrays: np.ndarray) -> None:
    specs = []
    for a in arrays:
        if a.dtype.name not in DTYPES:
            raise ProtocolError(f"cannot send arrays of dtype {a.dtype}")
        specs.append({"dtype": a.dtype.name, "shape": list(a.shape)})
    conn.send_bytes(json.dumps({**header, "arrays": specs}).encode())
    for a in arrays:
        conn.send_bytes(np.ascontiguousarray(a).tobytes())


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):  # 1e999 overflows to inf
        raise ValueError(f"number {literal[:40]} is out of range")
    return value


def _int(literal: str) -> int:
    if len(literal.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"integer of {len(literal.lstrip('-'))} digits")
    value = int(literal)
    if not -(1 << 63) <= value < 1 << 63:
        raise ValueError("integer out of 64-bit range")
    return value


def _depth(value, limit: int) -> bool:
    """Whether `value` nests deeper than `limit` (lists and dicts)."""
    if limit < 0:
        return True
    if isinstance(value, dict):
        return any(_depth(v, limit - 1) for v in value.values())
    if isinstance(value, list):
        return any(_depth(v, limit - 1) for v in value)
    return False


def loads(data: bytes | str):
    """A header's JSON as this protocol reads it: no NaN/Infinity, finite numbers, 64-bit integers
    (ValueError otherwise)."""
    return json.loads(data, parse_constant=_no_constant, parse_float=_float, parse_int=_int)


def recv(conn: Connection, max_array_bytes: int = MAX_ARRAY_BYTES, max_arrays: int = MAX_ARRAYS,
         limits: dict[str, int] | None = None) -> tuple[dict, list[np.ndarray]]:
    """One message: (header, arrays). Raises ProtocolError on anything malformed.

    Everything is checked before it is read: the header's length (recv_bytes refuses a longer one
    without reading it), its JSON (no NaN/Infinity, bounded nesting), the number of arrays, and each
    array's dtype, shape and size (and all of them together) before its bytes are taken.
    `limits`: the most array bytes per message, by op (an op not in it: `max_array_bytes`)."""
    try:
        header = loads(conn.recv_bytes(MAX_HEADER_BYTES))
    except ConnectionError:  # the other side is gone: the caller reports how its process ended
        raise
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as exc:  # over-long, not JSON, nested too deep
        raise ProtocolError(f"malformed message header ({type(exc).__name__}: {text(str(exc), 120)})") from None
    if not isinstance(header, dict) or not isinstance(header.get("op"), str) or not isinstance(header.get("arrays", []), list):
        raise ProtocolError("message header is not an object with an 'op'")
    if _depth(header, MAX_DEPTH):
        raise ProtocolError(f"message header nested deeper than {MAX_DEPTH} levels")
    declared = header.pop("arrays", [])
    if limits is not None:
        max_array_bytes = limits.get(header["op"], max_array_bytes)
    if len(declared) > max_arrays:
        raise ProtocolError(f"{len(declared)} arrays declared, over the limit of {max_arrays} per message")
    specs, total = [], 0
    for spec in declared:
        dtype = DTYPES.get(spec.get("dtype")) if isinstance(spec, dict) else None
        shape = spec.get("shape") if isinstance(spec, dict) else None
        if (dtype is None or not isinstance(shape, list) or len(shape) > 8
                or not all(type(d) is int and 0 <= d < MAX_DIM for d in shape)):
            raise ProtocolError(f"bad array declaration {text(str(spec), 200)} (dtype float32 or int64, "
                                f"at most 8 dimensions, each below {MAX_DIM})")
        size = math.prod(shape) * np.dtype(dtype).itemsize
        total += size
        if size > max_array_bytes or total > max_array_bytes:
            raise ProtocolError(f"{'array' if size == total else 'arrays'} of {total} bytes declared, over the "
                                f"{max_array_bytes}-byte limit")
        specs.append((dtype, shape, size))
    arrays = []
    for dtype, shape, size in specs:
        try:
            data = conn.recv_bytes(max(size, 1))
        except OSError as exc:
            raise ProtocolError(f"array larger than declared ({exc})") from None
        if len(data) != size:
            raise ProtocolError(f"array of {len(data)} bytes, declared {size}")
        arrays.append(np.frombuffer(data, dtype=dtype).reshape(shape))
    return header, arrays


def text(value: object, limit: int = 2000, *, lines: bool = False) -> str:
    """A string field from the other side (error messages, progress descriptions), made inert for a
    terminal and a CI log (reconbench.core.untrusted: control characters escaped, no workflow
    command) and capped: one line, or several where `lines` (a traceback)."""
    s = value if isinstance(value, str) else repr(value)
    s = untrusted.lines(s[: limit * 8]) if lines else untrusted.line(s[: limit * 8])
    return s if len(s) <= limit else s[: limit - 1] + "…"
