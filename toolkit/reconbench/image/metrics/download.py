"""Pinned download of the backbones into the toolkit's cache, converted to safetensors.

One file, one request, no retries (a dead server fails at once, a silent one after `timeout`):
  1. stream the official file (or `$RECONBENCH_WEIGHTS_MIRROR/<official name>`) to a temporary
     file in the cache folder, with a progress bar, refusing more bytes than the pinned size;
  2. check the byte size, then the sha256, against the pins, before anything opens the file;
  3. only then read it with `torch.load(weights_only=True)` and write `<name>.safetensors`
     (atomically; its metadata records the official file's sha256 and address);
  4. remove the temporary file in every case; a failure leaves nothing in the cache.
A conversion already in the cache for the same pin is returned without any request.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import socket
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors.torch import save_file

from reconbench.core.io import atomic_path

from .weights import MIRROR_ENV, WeightSpec, cached_conversion, conversion_source, weights_cache_dir

DEFAULT_TIMEOUT_S = 30.0  # per socket operation (connect, each read): a stalled transfer ends, not hangs
CHUNK = 1 << 20

# progress(description, total) -> context manager yielding advance(n_bytes); console.rich_task fits
ProgressFactory = Callable[[str, int], contextlib.AbstractContextManager]


class WeightsError(Exception):
    """A backbone could not be fetched or checked; the message names the file and the problem."""


def source_url(spec: WeightSpec, mirror: str | None = None) -> str:
    base = mirror if mirror is not None else os.environ.get(MIRROR_ENV, "")
    return f"{base.rstrip('/')}/{spec.filename}" if base else spec.url


def fetch(spec: WeightSpec, *, mirror: str | None = None, progress: ProgressFactory | None = None,
          timeout: float = DEFAULT_TIMEOUT_S) -> tuple[Path, bool]:
    """(path of the cached safetensors conversion, whether it was downloaded now). Raises WeightsError."""
    target = cached_conversion(spec)
    if target.is_file() and conversion_source(target) == spec.sha256:
        return target, False
    url = source_url(spec, mirror)
    folder = weights_cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{spec.filename}.", suffix=".part", dir=folder)
    part = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            digest = _download(spec, url, out, progress, timeout)
        size = part.stat().st_size
        if size != spec.size:
            raise WeightsError(f"{spec.filename} from {url}: {size:,} bytes, the pin is {spec.size:,} bytes; removed")
        if digest != spec.sha256:
            raise WeightsError(f"{spec.filename} from {url}: sha256 {digest} is not the pinned {spec.sha256}; removed")
        _convert(spec, part, target, url)
    finally:
        part.unlink(missing_ok=True)
    return target, True


def _download(spec: WeightSpec, url: str, out, progress: ProgressFactory | None, timeout: float) -> str:
    """Stream `url` into `out`; the sha256 of what was written."""
    h = hashlib.sha256()
    request = urllib.request.Request(url, headers={"User-Agent": "reconbench"})
    where = f"{spec.filename} from {url}"
    bar = progress(f"downloading {spec.filename}", spec.size) if progress else contextlib.nullcontext(None)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response, bar as advance:  # noqa: S310 (http/https only)
            received = 0
            while chunk := response.read(CHUNK):
                received += len(chunk)
                if received > spec.size:
                    raise WeightsError(f"{where}: more than the pinned {spec.size:,} bytes; removed")
                out.write(chunk)
                h.update(chunk)
                if advance:
                    advance(len(chunk))
            announced = response.headers.get("Content-Length")
            if announced and announced.isdigit() and received != int(announced):  # the server stopped mid-file
                raise WeightsError(f"{where}: transfer broken off after {received:,} of {int(announced):,} bytes; removed")
    except WeightsError:
        raise
    except urllib.error.HTTPError as exc:
        raise WeightsError(f"{where}: HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise WeightsError(f"{where}: cannot connect ({exc.reason})") from None
    except (TimeoutError, socket.timeout):
        raise WeightsError(f"{where}: no data within {timeout:g} s; removed") from None
    except (http.client.HTTPException, OSError) as exc:  # connection cut mid-file, IncompleteRead, ...
        raise WeightsError(f"{where}: transfer broken off ({type(exc).__name__}); removed") from None
    return h.hexdigest()


def _convert(spec: WeightSpec, part: Path, target: Path, url: str) -> None:
    # Safe to unpickle here, and only here: the bytes passed the pinned size and sha256 of the
    # official file (or, in tests, of the stand-in the test pinned), and weights_only=True lets the
    # unpickler build tensors and plain containers only, never arbitrary objects or code.
    try:
        state = torch.load(part, map_location="cpu", weights_only=True)
    except Exception as exc:  # a pinned file that is no torch checkpoint: the pin is wrong
        raise WeightsError(f"{spec.filename}: not a torch checkpoint ({type(exc).__name__})") from None
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()):
        raise WeightsError(f"{spec.filename}: not a state dict of named tensors")
    tensors = {k: v.detach().clone().contiguous() for k, v in state.items()}  # no shared storage
    metadata = {"source_file": spec.filename, "source_sha256": spec.sha256, "source_url": url}
    with atomic_path(target) as tmp:
        save_file(tensors, str(tmp), metadata=metadata)


def ensure(spec: WeightSpec, progress: ProgressFactory | None = None) -> str | None:
    """Fetch on first need: None when the conversion is in the cache afterwards, else why not."""
    try:
        fetch(spec, progress=progress)
    except WeightsError as exc:
        return str(exc)
    return None
