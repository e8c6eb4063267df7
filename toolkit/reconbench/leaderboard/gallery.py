"""Gallery PNG of an entry: distinct reconstructions (top row of each pair) above the target each
is matched to (bottom row), generated at build time, never committed.

The match is the SoK's nearest neighbour of the same class under SSIM (Def. 4.2; SSIM is the
metric whose coverage the SoK reports), computed with the metrics' SSIM pair kernel for the shown
reconstructions only (k x M pairs, not N x M), the targets' kernel states cached per track
(TargetIndex) so that a build with many entries prepares each target set once.

Targets are the evaluator's data, never the attacker's; the gallery shows them (the tracks use
public datasets) because the board exists to show what leaked.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass

import numpy as np
import torch
from PIL import Image

from reconbench.image.metrics.ssim import SSIMKernel
from reconbench.core.threads import one_torch_thread

log = logging.getLogger(__name__)

SHOWN = 16  # distinct reconstructions per gallery: two rows of eight, enough to judge diversity
PER_ROW = 8
TILE = 64  # target tile side in pixels; small images are enlarged by an integer factor (nearest)
GAP, BLOCK_GAP = 3, 12
BACKGROUND = 255
MISSING = 200  # grey tile where the target set holds no image of the reconstruction's class


@dataclass(frozen=True)
class Gallery:
    png: bytes
    shown: int  # distinct reconstructions shown
    distinct: int  # distinct reconstructions in the file
    matched: bool  # False when the target set was unavailable (reconstructions only)


def distinct_first(images: np.ndarray, labels: np.ndarray, k: int) -> tuple[np.ndarray, int]:
    """Indices of the first k distinct (image, label) pairs, in file order; and how many exist.

    Attacks that reconstruct a subset replicate it to |D_tar| (SoK size rule), so showing the
    first k rows would often show one image k times.
    """
    flat = np.ascontiguousarray(images.reshape(len(images), -1))
    first: dict[bytes, int] = {}
    for i, label in enumerate(labels.tolist()):  # hashing rows: O(N), unlike a lexicographic sort
        first.setdefault(flat[i].tobytes() + int(label).to_bytes(8, "little", signed=True), i)
    order = np.fromiter(first.values(), dtype=np.int64, count=len(first))  # insertion = file order
    return order[:k], len(order)


def _tile(img: np.ndarray, scale: int) -> np.ndarray:
    """(C, H, W) uint8 -> (H*s, W*s, C) by pixel repetition (no interpolation invents detail)."""
    hwc = np.transpose(img, (1, 2, 0))
    return hwc.repeat(scale, 0).repeat(scale, 1)


def grid_png(recs: np.ndarray, targets: list[np.ndarray | None] | None, per_row: int = PER_ROW) -> bytes:
    """recs (k, C, H, W); targets[i] the matched target of recs[i] (None: no match) or None for all."""
    k, c, h, w = recs.shape
    scale = max(1, TILE // max(h, w))
    th, tw = h * scale, w * scale
    rows_per_block = 1 if targets is None else 2
    blocks = -(-k // per_row)
    width = per_row * tw + (per_row - 1) * GAP
    height = blocks * rows_per_block * th + blocks * (rows_per_block - 1) * GAP + (blocks - 1) * BLOCK_GAP
    canvas = np.full((height, width, c), BACKGROUND, dtype=np.uint8)
    for i in range(k):
        b, col = divmod(i, per_row)
        x = col * (tw + GAP)
        y = b * (rows_per_block * th + (rows_per_block - 1) * GAP + BLOCK_GAP)
        canvas[y : y + th, x : x + tw] = _tile(recs[i], scale)
        if targets is not None:
            y2 = y + th + GAP
            t = targets[i]
            canvas[y2 : y2 + th, x : x + tw] = MISSING if t is None else _tile(t, scale)
    mode = "L" if c == 1 else "RGB"
    image = Image.fromarray(canvas[:, :, 0] if c == 1 else canvas, mode=mode)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


class TargetIndex:
    """One track's target set with its SSIM kernel states per class, prepared once per build.

    Every entry of a track is matched against the same targets, so their per-image states (the
    filtered means and variances of ssim.SSIMKernel) are computed once and reused: an entry then
    costs its k reconstructions' states and k x |class| pair blocks. States are cached up to
    CACHE_BYTES per track (about 1.3k CelebA-sized images); beyond that they are recomputed per entry.
    """

    CACHE_BYTES = 256 << 20
    BLOCK_BYTES = 64 << 20  # pair temporaries per block, as pairwise.Budget bounds them

    def __init__(self, images: np.ndarray, labels: np.ndarray):
        self.images = images
        self.labels = labels.astype(np.int64)
        self.kernel = SSIMKernel(tuple(images.shape[1:]))
        self._by_class = {int(c): np.flatnonzero(self.labels == c) for c in np.unique(self.labels)}
        self._states: dict[int, dict[str, torch.Tensor]] = {}
        self._cache = self.kernel.state_bytes() * len(images) <= self.CACHE_BYTES

    def _state(self, c: int, idx: np.ndarray) -> dict[str, torch.Tensor]:
        if c in self._states:
            return self._states[c]
        state = self.kernel.prepare(torch.from_numpy(np.ascontiguousarray(self.images[idx])))
        if self._cache:
            self._states[c] = state
        return state

    def match(self, recs: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Index of the nearest same-class target under SSIM for each reconstruction (-1: none).

        Same rule as pairwise.nearest_same_class (SoK Def. 4.2): best SSIM within the class,
        ties to the lowest target index (torch.argmax returns the first maximum).
        """
        out = np.full(len(recs), -1, dtype=np.int64)
        with torch.inference_mode():
            for c in np.unique(labels):
                idx = self._by_class.get(int(c))
                if idx is None:
                    continue
                rows = np.flatnonzero(labels == c)
                rec_state = self.kernel.prepare(torch.from_numpy(np.ascontiguousarray(recs[rows])))
                tar_state = self._state(int(c), idx)
                step = max(1, self.BLOCK_BYTES // max(1, self.kernel.pair_bytes() * len(rows)))
                best_v = torch.full((len(rows),), -torch.inf, dtype=torch.float64)
                best_j = torch.zeros(len(rows), dtype=torch.int64)
                for lo in range(0, len(idx), step):
                    block = {k: v[lo:lo + step] for k, v in tar_state.items()}
                    d = self.kernel.block(rec_state, block).to(torch.float64)
                    v, j = d.max(dim=1)
                    take = v > best_v  # strictly better: an earlier (lower-index) tie is kept
                    best_v = torch.where(take, v, best_v)
                    best_j = torch.where(take, j + lo, best_j)
                out[rows] = idx[best_j.numpy()]
        return out


def make_gallery(rec_images: np.ndarray, rec_labels: np.ndarray, targets: TargetIndex | None, k: int = SHOWN) -> Gallery:
    idx, distinct = distinct_first(rec_images, rec_labels, k)
    recs = rec_images[idx]
    if targets is None or targets.images.shape[1:] != rec_images.shape[1:]:
        return Gallery(grid_png(recs, None), len(idx), distinct, matched=False)
    match = targets.match(recs, rec_labels[idx].astype(np.int64))
    shown = [None if j < 0 else targets.images[j] for j in match]
    return Gallery(grid_png(recs, shown), len(idx), distinct, matched=True)


class TargetSets:
    """Target sets by (track, training type), loaded once per build; None when unavailable."""

    def __init__(self):
        self._cache: dict[tuple[str, str], TargetIndex | None] = {}

    def get(self, track_id: str, training: str) -> TargetIndex | None:
        key = (track_id, training)
        if key not in self._cache:
            pair = self._load(track_id, training)
            self._cache[key] = None if pair is None else TargetIndex(*pair)
        return self._cache[key]

    @staticmethod
    def _load(track_id: str, training: str):
        from reconbench.core.tracks import get_track
        from reconbench.image.track_files import load_splits

        try:
            splits = load_splits(get_track(track_id))
        except Exception as exc:  # a Hub track offline, an unpublished track: show reconstructions only
            log.info("gallery: target set of track '%s' unavailable (%s); showing reconstructions only", track_id, exc)
            return None
        split = splits.update if training == "dynamic" else splits.target
        return None if split is None else (split.images, split.labels)


def entry_gallery(entry_dir, payload, targets: TargetSets) -> Gallery | None:
    """The gallery of a validated entry, or None when its reconstruction file is not local."""
    from pathlib import Path

    from reconbench.core.io import FileFormatError
    from reconbench.image.results import load_reconstructions

    info = payload.reconstructions
    path = Path(entry_dir) / info.file
    if info.hub is not None or not path.is_file():
        return None
    try:
        images, labels = load_reconstructions(path)
    except FileFormatError as exc:
        log.info("gallery: %s", exc)
        return None
    with one_torch_thread():  # k <= 16 images against one class: threads only add synchronisation
        return make_gallery(images, labels, targets.get(payload.track, payload.scenario.split("/")[0]))


def near_copy_evidence(report, row: dict, files: dict) -> dict | None:
    """A held entry's evidence: its flagged reconstructions above the public images they are near,
    as a PNG in the entry's own folder (added to `files`), and the rows for the page's table."""
    evidence = dict(getattr(report, "evidence", None) or {})
    result = getattr(report, "result", None)
    if not evidence.get("rows") or result is None or result.payload.reconstructions.hub is not None:
        return None
    from pathlib import Path

    from reconbench.core.io import FileFormatError
    from reconbench.leaderboard.frame import entry_evidence
    from reconbench.image.results import load_reconstructions
    from reconbench.submissions.nearcopy import HELD_SHARE
    from reconbench.image.track_files import public_pool
    from reconbench.core.tracks import TrackError, get_track

    try:
        images, _ = load_reconstructions(Path(report.path) / result.payload.reconstructions.file)
        pool = public_pool(get_track(result.payload.track))
    except (FileFormatError, TrackError, OSError) as exc:
        log.info("near-copy evidence: %s", exc)
        return None
    shown = evidence["rows"][:SHOWN]
    path = entry_evidence(row["team"], row["entry_id"])
    files[path] = grid_png(images[[e["index"] for e in shown]], [pool[e["public"]] for e in shown])
    return dict(image=path, rows=evidence["rows"], flagged=evidence["flagged"], total=evidence["total"], share=HELD_SHARE,
                exact=int(evidence.get("exact", 0)))
