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

MAX_HEADER_BYTES = 64 * 1024
MAX_ARRAY_BYTES = 1 << 30  # one query batch or the reconstructions: far above any track's need
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


def recv(conn: Connection, max_array_bytes: int = MAX_ARRAY_BYTES) -> tuple[dict, list[np.ndarray]]:
    """One message: (header, arrays). Raises ProtocolError on anything malformed."""
    try:
        header = json.loads(conn.recv_bytes(MAX_HEADER_BYTES))
    except (OSError, ValueError, UnicodeDecodeError) as exc:  # over-long or not JSON
        raise ProtocolError(f"malformed message header ({type(exc).__name__})") from None
    if not isinstance(header, dict) or not isinstance(header.get("op"), str) or not isinstance(header.get("arrays", []), list):
        raise ProtocolError("message header is not an object with an 'op'")
    arrays = []
    for spec in header.pop("arrays", []):
        dtype = DTYPES.get(spec.get("dtype")) if isinstance(spec, dict) else None
        shape = spec.get("shape") if isinstance(spec, dict) else None
        if dtype is None or not isinstance(shape, list) or len(shape) > 8 or not all(type(d) is int and d >= 0 for d in shape):
            raise ProtocolError(f"bad array declaration {str(spec)[:200]}")
        size = math.prod(shape) * np.dtype(dtype).itemsize
        if size > max_array_bytes:
            raise ProtocolError(f"array of {size} bytes declared, over the {max_array_bytes}-byte limit")
        try:
            data = conn.recv_bytes(max(size, 1))
        except OSError as exc:
            raise ProtocolError(f"array larger than declared ({exc})") from None
        if len(data) != size:
            raise ProtocolError(f"array of {len(data)} bytes, declared {size}")
        arrays.append(np.frombuffer(data, dtype=dtype).reshape(shape))
    return header, arrays


def text(value: object, limit: int = 2000) -> str:
    """A string field from the other side, capped (error messages, progress descriptions)."""
    s = value if isinstance(value, str) else repr(value)
    return s if len(s) <= limit else s[: limit - 1] + "…"
