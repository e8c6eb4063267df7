"""Which targets a study asks about, and which reconstruction of each condition it shows.

SoK §6.1: for every condition "keep the 1,000 results with the highest PSNR score relative to their
targets", one candidate per condition and target. The pool is not stated; as in the SoK's matching
(Def. 4.2, experiments restricted to the same class) a candidate is drawn from the condition's
reconstructions of the target's class, and from all of them only when the condition has none of that
class (recorded per candidate as same_class = false). Ties go to the lowest reconstruction index.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from reconbench.core.io import sha256_file
from reconbench.image.results import RECONSTRUCTIONS_FILE, RESULT_FILE, ResultError, load_reconstructions, parse_result_json

SOK_TARGETS = 1000  # SoK §6.1: "1,000 randomly chosen CelebA images as targets"
BLOCK_VALUES = 1 << 24  # float64 values per distance block (128 MiB): bounded memory on CelebA-sized sets


class StudyInputError(ValueError):
    """Entries that cannot form a study (wrong count, mixed tracks, missing files); names the entry."""


@dataclass
class Condition:
    path: Path
    team: str
    entry_id: str
    attack: str
    track: str
    training: str  # static | dynamic: which set is D_tar
    result_sha256: str
    reconstructions_sha256: str
    images: np.ndarray
    labels: np.ndarray


def load_condition(entry_dir: Path) -> Condition:
    entry_dir = Path(entry_dir)
    result_path = entry_dir / RESULT_FILE
    try:
        result = parse_result_json(result_path)
    except ResultError as exc:
        raise StudyInputError(str(exc)) from None
    payload = result.payload
    # A study is validated against submissions/<team>/<entry-id>/: the entries must already be there.
    if entry_dir.resolve().name != payload.entry_id or not (entry_dir.resolve().parent / "team.toml").is_file():
        raise StudyInputError(f"{entry_dir}: not an entry folder submissions/<team>/{payload.entry_id}/ "
                              "(put the result there with `recon-submit submit` first)")
    if payload.reconstructions.hub is not None:
        raise StudyInputError(f"{entry_dir}: reconstructions are on the Hub; download them into the entry first")
    rec_path = entry_dir / RECONSTRUCTIONS_FILE
    if not rec_path.is_file():
        raise StudyInputError(f"{rec_path}: file not found")
    digest = sha256_file(rec_path)
    if digest != payload.reconstructions.sha256:
        raise StudyInputError(f"{rec_path}: sha256 {digest[:12]}… differs from the one its result.json signs")
    images, labels = load_reconstructions(rec_path)
    resolved = entry_dir.resolve()
    return Condition(path=entry_dir, team=resolved.parent.name, entry_id=payload.entry_id, attack=payload.attack.name,
                     track=payload.track, training=payload.scenario.split("/")[0], result_sha256=sha256_file(result_path),
                     reconstructions_sha256=digest, images=images, labels=labels)


def check_conditions(conditions: list[Condition]) -> None:
    from reconbench.judge.prompt import MAX_CONDITIONS, MIN_CONDITIONS

    if not MIN_CONDITIONS <= len(conditions) <= MAX_CONDITIONS:
        raise StudyInputError(f"a judge study compares {MIN_CONDITIONS} to {MAX_CONDITIONS} entries, got {len(conditions)}")
    first = conditions[0]
    for c in conditions[1:]:
        if (c.track, c.training) != (first.track, first.training):
            raise StudyInputError(f"{c.path}: track {c.track} ({c.training}) differs from {first.path}'s "
                                  f"{first.track} ({first.training}); a study compares entries on the same targets")
    seen: dict[str, Path] = {}
    for c in conditions:
        if c.reconstructions_sha256 in seen:
            raise StudyInputError(f"{c.path}: same reconstructions as {seen[c.reconstructions_sha256]}")
        seen[c.reconstructions_sha256] = c.path


def sample_targets(n_total: int, n: int | None, seed: int) -> list[int]:
    """Sorted indices of a seeded sample without replacement of the target set."""
    if n is None:
        n = min(SOK_TARGETS, n_total)
    if not 1 <= n <= n_total:
        raise StudyInputError(f"--targets must be between 1 and {n_total} (the size of the target set), got {n}")
    rng = np.random.default_rng(seed)
    return sorted(int(i) for i in rng.choice(n_total, size=n, replace=False))


def _mse_rows(targets: np.ndarray, recs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each target row, (index of the reconstruction with the least MSE, that MSE); pixels in [0, 1].

    Blocks use |t|^2 + |r|^2 - 2 t.r (one GEMM); the chosen pair's MSE is then recomputed exactly,
    which is the value recorded and the one `validate` compares (BLAS may order near-ties differently
    on another machine, so validation accepts any reconstruction whose exact MSE is the minimum).
    """
    t = targets.reshape(len(targets), -1).astype(np.float64) / 255.0
    d = t.shape[1]
    t_sq = (t * t).sum(axis=1)
    best_i = np.zeros(len(t), dtype=np.int64)
    best_v = np.full(len(t), np.inf)
    step = max(1, min(BLOCK_VALUES // d, BLOCK_VALUES // max(1, len(t))))
    for lo in range(0, len(recs), step):
        r = recs[lo:lo + step].reshape(-1, d).astype(np.float64) / 255.0
        block = (t_sq[:, None] + (r * r).sum(axis=1)[None, :] - 2.0 * (t @ r.T)) / d
        j = block.argmin(axis=1)
        v = block[np.arange(len(t)), j]
        take = v < best_v  # strictly better: an earlier (lower-index) tie is kept
        best_i = np.where(take, j + lo, best_i)
        best_v = np.where(take, v, best_v)
    chosen = recs[best_i].reshape(len(t), d).astype(np.float64) / 255.0
    return best_i, ((t - chosen) ** 2).mean(axis=1)


def exact_mse(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """MSE per image of two stacks of uint8 images (pixels in [0, 1]); b may hold one image."""
    x = a.reshape(len(a), -1).astype(np.float64) / 255.0
    y = b.reshape(len(b), -1).astype(np.float64) / 255.0
    return ((x - y) ** 2).mean(axis=1)


def psnr(mse: float) -> float | None:
    """10 log10(1 / MSE) with pixels in [0, 1] (SOK-DIGEST §2.3); None for an exact copy (infinite)."""
    return None if mse == 0 else 10.0 * math.log10(1.0 / mse)


def select_candidates(target_images: np.ndarray, target_labels: np.ndarray, indices: list[int],
                      condition: Condition) -> list[dict]:
    """Per sampled target: {rec_index, mse, psnr, same_class} of the condition's highest-PSNR reconstruction."""
    out: list[dict | None] = [None] * len(indices)
    idx = np.asarray(indices, dtype=np.int64)
    labels = target_labels[idx].astype(np.int64)
    for cls in np.unique(labels):
        rows = np.flatnonzero(labels == cls)
        pool = np.flatnonzero(condition.labels == cls)
        same = len(pool) > 0
        if not same:
            pool = np.arange(len(condition.labels))
        j, v = _mse_rows(target_images[idx[rows]], condition.images[pool])
        for r, jj, vv in zip(rows.tolist(), j.tolist(), v.tolist()):
            out[r] = {"rec_index": int(pool[jj]), "mse": float(vv), "psnr": psnr(float(vv)), "same_class": bool(same)}
    return out  # type: ignore[return-value]


def target_split(track_id: str, training: str) -> tuple[np.ndarray, np.ndarray, str]:
    """(images, labels, split name) of D_tar: the target set, or the update set in dynamic scenarios."""
    from reconbench.core.tracks import get_track
    from reconbench.image.track_files import load_splits

    splits = load_splits(get_track(track_id), ["update"] if training == "dynamic" else ["target"])
    split = splits.update if training == "dynamic" else splits.target
    if split is None:
        raise StudyInputError(f"track {track_id}: no {'update' if training == 'dynamic' else 'target'} set")
    return split.images, split.labels, "update" if training == "dynamic" else "target"


def short_hash(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:8]
