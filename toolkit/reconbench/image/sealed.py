"""Sealed twins of the Fashion tracks: the pool and a draw's members (core/seal.py draws and commits;
image/sealed_scores.py scores at validation; docs/sealed.md says what is public).

A sealed draw is a track of its own (`<group>-d<i>`, registry/sealed.json) whose public target set is
its whole pool of 2n images: `evaluate` scores what needs no membership (each reconstruction's nearest
pool item of its class, the evaluation classifier's metrics) and marks the rest "scored at
validation". Only `validate --seal-key` opens the draw: the membership gap (members against
non-members of the same pool, core/membership.py's test), the extraction count, and the carried-data
rule: a reconstruction within the count's extraction threshold of a Fashion-MNIST image that is not a
member of the draw can only have been carried into the run (a member-inference pick over a smuggled
candidate set returns such copies; a reconstruction never does).

An update twin (`<open update track>-sealed`) draws its update set the same way, from a pool of 2k
images (fashion_splits.sealed_update_pool); its model before the update is the open twin's, and what the
attack observes is published by the key holder (image/dynamic.observed_update).

Season 2026-s2 on (scheme v2, issue 43): the pool itself is drawn from the whole sealed block with the
season's key, and the draw's weights ship only encrypted. Such a draw opens only where the board's key is
in context (core/sealed_weights.opening(master) in the board's sealed run, `recon-submit seal run`;
opening_season(season, key) after the reveal); anywhere else `require_opened` refuses it with one line
naming the open twin and the practice draws to develop on. `is_board_run` tells these draws apart.

The attack never sees the pool: its view (image/knowledge.py) holds the model or its queries and the
aux block, which is disjoint from the sealed block.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from reconbench.core.seal import SealError, open_block_draw, open_draw, season_key
from reconbench.core.tracks import Track, TrackError

if TYPE_CHECKING:
    from reconbench.image.data.arrays import ArraySet, TrackSplits

SCORED_AT_VALIDATION = "scored at validation"
PENDING = ("membership gap", "extraction count")  # what a sealed result cannot carry: it needs the members


def seal_of(track: Track):
    """The track's Seal, or TrackError when it is not sealed."""
    if track.seal is None:
        raise TrackError(f"track '{track.id}' is not sealed")
    return track.seal


def is_board_run(track: Track) -> bool:
    """A draw of a v2 season: its model and pool never leave the board before the reveal, so only the board's
    sealed run (`recon-submit seal run`) runs an attack on it."""
    return track.seal is not None and track.seal.scheme == "v2"


def practice_twins(track: Track) -> list[str]:
    """The twins of burned seasons with the same open twin: public practice draws (core/seasons.py)."""
    from reconbench.core.seasons import burned
    from reconbench.core.tracks import all_tracks

    seal = seal_of(track)
    return sorted({t.seal.group for t in all_tracks() if t.seal is not None and t.seal.open_twin == seal.open_twin
                   and burned(t.seal.season)})


def sealed_message(track: Track, name: str | None = None) -> str:
    """The one line that refuses a v2 draw outside the board's sealed run."""
    seal = seal_of(track)
    practice = practice_twins(track)
    where = f"the open twin {seal.open_twin}" + (f" or the practice draws {' or '.join(practice)}" if practice else "")
    return (f"{name or track.id}: this draw's model is sealed (season {seal.season}, revealed after "
            f"{seal.reveal_after}); only the board's sealed run opens it (`recon-submit seal run`). "
            f"Develop on {where}")


def require_opened(track: Track, name: str | None = None) -> bytes:
    """The season key of a v2 draw, from the key in context (core/sealed_weights), or TrackError with
    `sealed_message`: what every loader of a v2 draw calls first."""
    from reconbench.core.sealed_weights import season_key_in_context

    key = season_key_in_context(seal_of(track).season)
    if key is None:
        raise TrackError(sealed_message(track, name))
    return key


def _season_keys(track: Track, key: bytes | None) -> list[bytes]:
    """The candidate season keys of a v2 draw: the context's, or from `key`, which is the board's master (validate
    --seal-key, the sealed run) or, after the reveal, the season key itself; the commitment tells which opens."""
    if key is None:
        return [require_opened(track)]
    return [season_key(key, seal_of(track).season), key]


def block(track: Track) -> ArraySet:
    """A v2 draw's sealed block (public), checked against the registry's block_sha256."""
    from reconbench.image.data.fashion_splits import sealed_block

    seal = seal_of(track)
    got = sealed_block(track.dataset)
    if got.sha256 != seal.block_sha256:
        raise TrackError(f"track '{track.id}': the sealed block's sha256 is {got.sha256}, the registry pins {seal.block_sha256}")
    return got


def opened_draw(track: Track, key: bytes | None = None) -> tuple[np.ndarray, np.ndarray, bytes]:
    """A v2 draw opened: (the pool's block indices, which of them are members, the season key that opened the
    commitment). SealError when no candidate key opens it."""
    seal = seal_of(track)
    labels = block(track).labels
    failed = None
    for k in _season_keys(track, key):
        try:
            indices, inside = open_block_draw(k, seal.group, seal.draw, seal.block_sha256, labels,
                                              dict(seal.per_class), seal.commitment)
            return indices, inside, k
        except SealError as exc:
            failed = exc
    raise failed


def pool(track: Track, key: bytes | None = None) -> ArraySet:
    """The draw's pool (both halves): v1, the public pool checked against the registry's pin; v2, the block's
    items the commitment opens to (with `key` or the key in context)."""
    from reconbench.image.data.fashion_splits import sealed_pool, sealed_update_pool

    seal = seal_of(track)
    if seal.scheme == "v2":
        indices, _, _ = opened_draw(track, key)
        return block(track).subset(indices)
    # an update twin's members are its update set (D_tar of a dynamic track); a static twin's, its training set
    got = sealed_update_pool(track.dataset, track.update_size) if track.update_size else \
        sealed_pool(track.dataset, track.train_size)
    if got.sha256 != seal.pool_sha256:
        raise TrackError(f"track '{track.id}': the sealed pool's sha256 is {got.sha256}, the registry pins {seal.pool_sha256}")
    return got


def sealed_splits(track: Track) -> TrackSplits:
    """The splits of a sealed draw: target = the pool (what evaluate scores against publicly), no
    holdout (non-members are the pool's other half, known only with the key), the open twin's aux and test.
    A v2 draw opens only with the key in context (require_opened)."""
    from reconbench.image.data.arrays import TrackSplits
    from reconbench.image.data.fashion_splits import fashion_splits

    drawn = pool(track)  # v2: refused here, before anything else loads, outside the board's run
    opened = fashion_splits(track.dataset, track.train_size)
    if track.update_size:  # an update twin: the model before the update is the open twin's (public target set)
        return TrackSplits(target=opened.target, update=drawn, aux_same=opened.aux_same, test=opened.test,
                           aux_similar=opened.aux_similar)
    return TrackSplits(target=drawn, update=None, aux_same=opened.aux_same, test=opened.test,
                       aux_similar=opened.aux_similar)


def v2_splits(track: Track) -> TrackSplits:
    """sealed_splits of a v2 draw (inside core/sealed_weights.opening): the board's sealed run's splits."""
    if not is_board_run(track):
        raise TrackError(f"track '{track.id}' is not a draw of a v2 season")
    return sealed_splits(track)


def open_public(track: Track) -> np.ndarray:
    """The open twin's target set and holdout (public data the copy rules also compare with)."""
    from reconbench.image.data.fashion_splits import fashion_splits

    opened = fashion_splits(track.dataset, track.train_size)
    return np.concatenate([opened.target.images, opened.holdout.images])


def public_images(track: Track) -> np.ndarray:
    """Every image a v2 draw's dataset publishes, without the key: the open twin's splits (its update set and
    holdouts included) and the whole sealed block (public: only the draw's choice in it is secret)."""
    from reconbench.image.data.fashion_splits import fashion_splits, sealed_block

    opened = fashion_splits(track.dataset, track.train_size, track.update_size)
    parts = [opened.target, opened.update, opened.aux_same, opened.test, opened.holdout, opened.aux_similar]
    return np.concatenate([p.images for p in parts if p is not None] + [sealed_block(track.dataset).images])


def members(track: Track, key: bytes | None = None) -> np.ndarray:
    """(2n,) bool over the pool: the draw's members, after the key has opened the published commitment
    (v1: `key` is the season's; v2: the board's master or the season key, or None for the key in context)."""
    seal = seal_of(track)
    if seal.scheme == "v2":
        return opened_draw(track, key)[1]
    if key is None:
        raise SealError(f"sealed track '{track.id}': opening a season {seal.season} draw needs its key")
    return open_draw(key, seal.group, seal.draw, seal.pool_sha256, pool(track).labels, seal.commitment)


def member_set(track: Track, key: bytes | None = None) -> ArraySet:
    return pool(track, key).subset(np.flatnonzero(members(track, key)))


def open_weights(track: Track, role: str, key: bytes | None = None) -> bytes:
    """The plaintext bytes of a v2 draw's encrypted file (role: model, gradients, updated_model), decrypted in
    memory with the season key and checked against the registry's plaintext hash. Nothing is written."""
    import hashlib

    from reconbench.core.seal import weights_key
    from reconbench.core.sealed_weights import label, open_file

    seal = seal_of(track)
    if role not in seal.files:
        raise TrackError(f"track '{track.id}' has no sealed {role} file")
    pinned = seal.files[role]
    _, _, k = opened_draw(track, key)  # the season key that opens the commitment opens the files
    path = sealed_path(pinned.file)
    if not path.is_file():
        raise TrackError(f"{path}: the sealed {role} file of track '{track.id}' is missing")
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != pinned.sha256:
        raise TrackError(f"{path}: the sealed {role} file's sha256 is not the {pinned.sha256} the registry pins")
    plain = open_file(path, weights_key(k, seal.group, seal.draw), label(track.id, role))
    if hashlib.sha256(plain).hexdigest() != pinned.plain_sha256:
        raise SealError(f"{path}: the decrypted {role} of track '{track.id}' is not the {pinned.plain_sha256} "
                        "the registry pins")
    return plain


def sealed_path(name: str):
    """Where a v2 draw's encrypted file lies: the package's data folder (tests point it at a throwaway season's)."""
    from reconbench.core.tracks import embedded_file

    return embedded_file(name)
