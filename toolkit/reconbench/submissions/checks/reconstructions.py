"""Check 5, reconstructions: the file is there (in the entry, or at its pinned Hub reference), it is
the one that was signed (sha256), and it holds exactly |D_tar| uint8 images of the track's shape with
int64 labels in 0..num_classes-1 (safetensors: parsed, never unpickled)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from reconbench.core.hub import HubError, download_pinned
from reconbench.core.io import FileFormatError, load_arrays
from reconbench.image.results import RECONSTRUCTIONS_FILE
from reconbench.submissions.checks.base import Check, CheckFailed, Context, require_signed_sha256
from reconbench.text.jsonl import TEXT_RECONSTRUCTIONS_FILE

# safetensors = 8-byte header length + JSON header + raw data. The header of our two tensors is
# ~150 bytes; 64 KB leaves room for metadata and still bounds what we read to what was signed.
HEADER_SLACK = 64 * 1024


def expected_bytes(count: int, shape: tuple[int, ...]) -> int:
    """Raw data of `count` uint8 images of `shape` plus `count` int64 labels."""
    return count * math.prod(shape) + 8 * count


def _locate(ctx: Context) -> tuple[Path, str]:
    info = ctx.result.payload.reconstructions
    local = ctx.entry_dir / RECONSTRUCTIONS_FILE
    if info.hub is None:
        if not local.is_file():
            raise CheckFailed(f"{local}: missing (result.json names no Hub reference either)")
        return local, "in the entry folder"
    if os.path.lexists(local):
        raise CheckFailed(f"{local}: present although result.json pins a Hub copy; keep one of the two")
    hub = info.hub
    try:
        path = download_pinned(hub.repo, hub.filename, revision=hub.revision, sha256=info.sha256)
    except HubError as exc:
        raise CheckFailed(f"pinned Hub copy cannot be fetched and checked: {exc}") from None
    return path, f"from the Hub, {hub.repo}@{hub.revision[:12]}"


def check(ctx: Context) -> list[Check]:
    info = ctx.result.payload.reconstructions
    track = ctx.track
    if os.path.lexists(ctx.entry_dir / TEXT_RECONSTRUCTIONS_FILE):
        raise CheckFailed(f"{ctx.entry_dir / TEXT_RECONSTRUCTIONS_FILE}: a text entry's file in an image entry")
    path, where = _locate(ctx)
    need = expected_bytes(info.count, tuple(info.shape))
    size = path.stat().st_size
    if size < need + 10:
        raise CheckFailed(f"{path}: {size:,} bytes, too small for {info.count} images of {list(info.shape)} "
                          f"({need:,} bytes of data): truncated")
    if size > need + 8 + HEADER_SLACK:
        raise CheckFailed(f"{path}: {size:,} bytes, more than {info.count} images of {list(info.shape)} and "
                          "their labels need: refused before reading")
    require_signed_sha256(path, info.sha256)
    try:
        arrays = load_arrays(path, required={"images": np.uint8, "labels": np.int64})
    except FileFormatError as exc:
        raise CheckFailed(str(exc)) from None
    if set(arrays) != {"images", "labels"}:
        raise CheckFailed(f"{path}: must hold exactly the tensors 'images' and 'labels', has {sorted(arrays)}")
    images, labels = arrays["images"], arrays["labels"]
    want = (track.target_size(ctx.scenario), *track.input_shape)
    if images.shape != want:
        raise CheckFailed(f"{path}: images are {list(images.shape)}, track '{track.id}' needs {list(want)} "
                          "(|D_tar| images of its shape)")
    if labels.shape != (want[0],):
        raise CheckFailed(f"{path}: labels are {list(labels.shape)}, expected [{want[0]}]")
    if labels.size and (labels.min() < 0 or labels.max() >= track.num_classes):
        bad = np.flatnonzero((labels < 0) | (labels >= track.num_classes))
        raise CheckFailed(f"{path}: {bad.size} label(s) outside 0..{track.num_classes - 1}, e.g. index "
                          f"{int(bad[0])} = {int(labels[bad[0]])}")
    ctx.recon_path, ctx.images, ctx.labels = path, images, labels
    return [Check("reconstructions", "pass", f"{want[0]} uint8 images {list(want[1:])} with labels, "
                                             f"sha256 as signed ({where})")]
