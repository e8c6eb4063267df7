"""Reference baselines: what trivial non-attacks score, beside every board and in every chart.

Per track and per (training type, data access) of its scenarios, the scores of:
- "aux images as they are": the auxiliary images returned as reconstructions (scenarios with
  auxiliary data; the same-distribution or similar-distribution set, as the scenario hands it);
- "per-class aux mean": each reconstruction is the mean auxiliary image of its class;
Unlabelled auxiliary data (labels -1: a similar-distribution set whose classes are none of the
target's, as fashion-split5's) is labelled by the target model's predicted class first, as an
attacker with query access would (PLG-MI's pseudo-labels, top-1 instead of top-n), so both aux
baselines stay defined there;
- "uniform noise": seeded uniform uint8 pixels, labels cycling through the classes (every scenario).
Each baseline returns exactly |D_tar| images (the first |D_tar| auxiliary images, which are already
a seeded random order of the dataset; the size rule of SoK §4.3) and is scored by
`reconbench.image.metrics.score` exactly as an entry is. They are not entries: no signature, no rank.

Scores are cached on disk by the content hash of the target set (and of the auxiliary set and the
baseline's definition): $RECONBENCH_CACHE/baselines, default ~/.cache/reconbench/baselines.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

import numpy as np

from reconbench.leaderboard import heap

log = logging.getLogger(__name__)

SEED = 0
VERSION = 2  # bump when a baseline's definition changes: old cache files are then ignored (2: membership gaps)
# The reference rows' gaps are shown, not signed: 500 permutations (a quarter of an entry's 2,000) keep a
# site build that scores every track's three baselines affordable; tests/test_membership.py checks the
# aux replay and the class mean at the entries' 2,000.
REFERENCE_PERMUTATIONS = 500
KINDS = {
    "aux": "auxiliary images returned as they are",
    "aux-mean": "per-class mean of the auxiliary images",
    "noise": "uniform noise",
}
# In a table of one taxonomy cell, whose heading names the data access (leaderboard/cells.py)
SHORT = {"aux": "aux images as they are", "aux-mean": "per-class aux mean", "noise": "uniform noise"}


def cache_dir() -> Path:
    root = os.environ.get("RECONBENCH_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "reconbench") / "baselines"


def _sha(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def baseline_images(kind: str, n: int, shape: tuple[int, ...], num_classes: int, aux=None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """|D_tar| = n reconstructions of one baseline (uint8 images, int64 labels)."""
    if kind == "noise":
        rng = np.random.default_rng(SEED)
        return rng.integers(0, 256, size=(n, *shape), dtype=np.uint8), np.arange(n, dtype=np.int64) % num_classes
    idx = np.arange(n) % len(aux.images)  # replicate when the auxiliary set is smaller (size rule)
    labels = aux.labels[idx].astype(np.int64)
    if kind == "aux":
        return aux.images[idx].copy(), labels
    means = {int(c): np.rint(aux.images[aux.labels == c].astype(np.float64).mean(0)).astype(np.uint8)
             for c in np.unique(aux.labels)}
    return np.stack([means[int(c)] for c in labels]), labels


def _score(images, labels, target, holdout=None) -> dict:
    """{metric: {value, coverage}}, plus "membership": {metric: gap fields} against the holdout (when the
    track has one): a reference row knows nothing of the members, so its gap shows what 0 looks like."""
    from reconbench.image.metrics import score

    report = score(images, labels, target.images, target.labels, lpips=False, fid=False,
                   holdout_images=None if holdout is None else holdout.images,
                   holdout_labels=None if holdout is None else holdout.labels, permutations=REFERENCE_PERMUTATIONS)
    out = {m: {"value": r.value, "coverage": r.coverage} for m, r in report.metrics.items() if r.status == "computed"}
    gaps = {m: g.model_dump(mode="json", exclude={"per_class"}) for m, g in report.membership.items() if g.status == "computed"}
    return {**out, "membership": gaps} if gaps else out


def _cached(key: str, compute) -> dict:
    folder = cache_dir()
    path = folder / f"{key}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    value = compute()
    try:
        from reconbench.core.io import atomic_path

        folder.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps(value), encoding="utf-8")
    except OSError as exc:  # a read-only home: compute again next time
        log.info("baselines: cannot cache %s (%s)", path, exc)
    return value


def track_baselines(track, gaps: bool = True) -> list[dict]:
    """Reference rows of one track: dicts with kind, label, training, data, scenario cell and metrics
    (and "membership": each metric's gap against the holdout, when `gaps` and the track has one)."""
    from reconbench.image.track_files import load_splits

    from reconbench.image.track_files import track_holdout

    splits = load_splits(track)
    rows = []
    cells = sorted({(s.split("/")[0], s.split("/")[2]) for s in track.scenarios})
    for training in sorted({t for t, _ in cells}):
        target = splits.update if training == "dynamic" else splits.target
        if target is None:
            continue
        # |D_tar| reconstructions: a sealed track's target split is its pool of 2 |D_tar| images
        n, tsha = len(target.images) if training == "dynamic" else track.train_size, _sha(target.images, target.labels)
        holdout = track_holdout(track, training == "dynamic") if gaps else None
        wanted = [("noise", None)] + [(k, d) for t, d in cells if t == training and d != "none" for k in ("aux", "aux-mean")]
        for kind, data in wanted:
            aux = None if data is None else (splits.aux_same if data == "same" else splits.aux_similar)
            if data is not None and aux is None:
                continue
            if aux is not None and (aux.labels < 0).any():
                aux = pseudo_labelled(track, aux)
            key = "-".join([f"v{VERSION}", kind, tsha[:32]] + ([_sha(aux.images, aux.labels)[:16]] if aux is not None else [])
                           + ([_sha(holdout.images, holdout.labels)[:16]] if holdout is not None else []))

            def compute(kind=kind, aux=aux):
                images, labels = baseline_images(kind, n, tuple(track.input_shape), track.num_classes, aux)
                return _score(images, labels, target, holdout)

            metrics = _cached(key, compute)
            membership = metrics.pop("membership", {})
            label = KINDS[kind] + (f" ({data}-distribution aux)" if data else "")
            rows.append(dict(kind=kind, label=label, short=SHORT[kind], training=training, data=data or "any",
                             cell=f"{training}/*/{data or '*'}", metrics=metrics, membership=membership))
    return rows


_PSEUDO: dict[tuple, np.ndarray] = {}  # (track, its model, the aux set) -> labels: the site build asks twice


def pseudo_labelled(track, aux):
    """The aux set labelled by the target model's top-1 prediction (for unlabelled aux data)."""
    import torch

    from reconbench.image.data.arrays import ArraySet
    from reconbench.image.track_files import load_target_model

    key = (track.id, track.target_model_sha256, _sha(aux.images))
    if key in _PSEUDO:
        return ArraySet(aux.images, _PSEUDO[key].copy())
    model = load_target_model(track)
    with torch.no_grad():  # a batch at a time, converted as it goes (as_float's pixels): 1,024 at once took
        # ~590 MB of activations on fashion-split5, the site build's peak (issue 37)
        predicted = torch.cat([model(torch.from_numpy(aux.images[i:i + PSEUDO_BATCH]).float() / 255.0).argmax(1)
                               for i in range(0, len(aux), PSEUDO_BATCH)])
    _PSEUDO[key] = predicted.numpy().astype(np.int64)
    return ArraySet(aux.images, _PSEUDO[key].copy())


PSEUDO_BATCH = 128


def all_baselines(tracks, gaps_for=None, only=None, progress=None) -> dict[str, list[dict]]:
    """track id -> reference rows, for the tracks whose data can be loaded here (others: none). gaps_for:
    the track ids whose rows also get their membership gaps (the tracks with entries; None: all). only:
    the track ids to score at all (None: all): a board scores the tracks with entries, since a reference
    row stands beside entries (an empty track's page has no table, and its charts no points).
    progress(done, total, track id): called after each track (the site build's progress lines)."""
    out = {}
    chosen = [t for t in tracks if t.status != "unpublished" and (only is None or t.id in only)]
    for done, track in enumerate(chosen, 1):
        try:
            out[track.id] = track_baselines(track, gaps=gaps_for is None or track.id in gaps_for)
        except Exception as exc:  # noqa: BLE001 - a Hub track offline: its board shows no reference rows
            log.info("baselines of track '%s' unavailable (%s)", track.id, exc)
        heap.trim()  # one track's scoring arrays do not stay resident under the next's
        if progress is not None:
            progress(done, len(chosen), track.id)
    return out


def for_entries(references: dict[str, list[dict]], rows) -> list[dict]:
    """The reference rows that stand beside a set of entries of several tracks (an attack's page): per
    track and training type of those entries, noise, and the aux baselines of the data access they had."""
    cells = {(r.track, r.training, r.data) for r in rows[["track", "training", "data"]].itertuples()}
    return [ref for track_id in sorted({c[0] for c in cells}) for ref in references.get(track_id, [])
            if any(t == track_id and ref["training"] == training and ref["data"] in ("any", data)
                   for t, training, data in cells)]
