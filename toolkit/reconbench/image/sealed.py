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

The attack never sees the pool: its view (image/knowledge.py) holds the model or its queries and the
aux block, which is disjoint from the sealed block.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from reconbench.core.seal import open_draw
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


def pool(track: Track) -> ArraySet:
    """The draw's pool (both halves), checked against the registry's pin."""
    from reconbench.image.data.fashion_splits import sealed_pool

    from reconbench.image.data.fashion_splits import sealed_update_pool

    seal = seal_of(track)
    # an update twin's members are its update set (D_tar of a dynamic track); a static twin's, its training set
    got = sealed_update_pool(track.dataset, track.update_size) if track.update_size else \
        sealed_pool(track.dataset, track.train_size)
    if got.sha256 != seal.pool_sha256:
        raise TrackError(f"track '{track.id}': the sealed pool's sha256 is {got.sha256}, the registry pins {seal.pool_sha256}")
    return got


def sealed_splits(track: Track) -> TrackSplits:
    """The splits of a sealed draw: target = the pool (what evaluate scores against publicly), no
    holdout (non-members are the pool's other half, known only with the key), the open twin's aux and test."""
    from reconbench.image.data.arrays import TrackSplits
    from reconbench.image.data.fashion_splits import fashion_splits

    opened = fashion_splits(track.dataset, track.train_size)
    if track.update_size:  # an update twin: the model before the update is the open twin's (public target set)
        return TrackSplits(target=opened.target, update=pool(track), aux_same=opened.aux_same, test=opened.test,
                           aux_similar=opened.aux_similar)
    return TrackSplits(target=pool(track), update=None, aux_same=opened.aux_same, test=opened.test,
                       aux_similar=opened.aux_similar)


def open_public(track: Track) -> np.ndarray:
    """The open twin's target set and holdout (public data the copy rules also compare with)."""
    from reconbench.image.data.fashion_splits import fashion_splits

    opened = fashion_splits(track.dataset, track.train_size)
    return np.concatenate([opened.target.images, opened.holdout.images])


def members(track: Track, key: bytes) -> np.ndarray:
    """(2n,) bool over the pool: the draw's members, after the key has opened the published commitment."""
    seal = seal_of(track)
    return open_draw(key, seal.group, seal.draw, seal.pool_sha256, pool(track).labels, seal.commitment)


def member_set(track: Track, key: bytes) -> ArraySet:
    return pool(track).subset(np.flatnonzero(members(track, key)))


