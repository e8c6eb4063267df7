"""Loading a track's files: splits and target model, embedded or from the Hub, hash-checked.

Below the registry (reconbench.core.tracks) in the import graph: this module imports the registry and
the loaders (reconbench.image.data, reconbench.zoo.loading); the registry imports neither, so there is
no circle. Attacks never import this: they get a knowledge view (reconbench.image.knowledge).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from reconbench.core.tracks import Track, TrackError, embedded_file

if TYPE_CHECKING:
    import numpy as np
    import torch
    from torch import nn

    from reconbench.image.data.arrays import ArraySet, TrackSplits


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check(what: str, path_or_name: str, actual: str | None, expected: str | None) -> None:
    if expected is not None and actual != expected:
        raise TrackError(f"{path_or_name}: {what} sha256 is {actual}, the registry pins {expected}")


def load_splits(track: Track, parts: Collection[str] | None = None) -> TrackSplits:
    """The evaluator's view of the data: all splits, hash-checked. Never handed to an attack whole.

    `parts` (of target, update, aux_same, aux_similar, test, holdout, update_holdout): a Hub track
    downloads only these, the others are None (the knowledge view never fetches the target set);
    embedded tracks return all.
    """
    track.require_runnable()
    if track.source is not None and track.source.kind == "hub":
        from reconbench.zoo.loading import load_hub_splits  # the Hub zoo

        splits = load_hub_splits(track, parts)
    elif track.seal is not None:  # a sealed draw: its public target set is the pool (image/sealed.py)
        from reconbench.image.sealed import sealed_splits

        splits = sealed_splits(track)
    elif track.dataset == "sklearn-digits":
        from reconbench.image.data.digits import digits_splits

        splits = digits_splits()
    elif track.dataset == "sklearn-digits-0v1":
        from reconbench.image.data.digits import binary_digits_splits

        splits = binary_digits_splits()
    elif track.dataset.startswith("fashion-mnist"):
        from reconbench.image.data.fashion_splits import fashion_splits

        splits = fashion_splits(track.dataset, track.train_size, track.update_size)
    else:
        raise TrackError(f"track '{track.id}': no loader for dataset '{track.dataset}'")
    if splits.target is not None:
        _check("target set", track.id, splits.target.sha256, track.target_set_sha256)
    if splits.update is not None:
        _check("update set", track.id, splits.update.sha256, track.update_set_sha256)
    if splits.holdout is not None:
        _check("holdout", track.id, splits.holdout.sha256, track.holdout_set_sha256)
    if splits.update_holdout is not None:
        _check("update holdout", track.id, splits.update_holdout.sha256, track.update_holdout_set_sha256)
    return splits


def load_holdout(track: Track, dynamic: bool = False) -> ArraySet:
    """The holdout matched to D_tar of the setting (the target set, or the update set when `dynamic`),
    checked against the registry's pin. The evaluator's side only, like the target set: no knowledge
    view ever asks for it (tests/test_holdout.py checks every attack's view)."""
    pinned = track.update_holdout_set_sha256 if dynamic else track.holdout_set_sha256
    what = "update holdout" if dynamic else "holdout"
    if pinned is None:
        raise TrackError(f"track '{track.id}' pins no {what} split (registry field "
                         f"{'update_holdout_set_sha256' if dynamic else 'holdout_set_sha256'}): no membership gap")
    part = "update_holdout" if dynamic else "holdout"
    split = getattr(load_splits(track, [part]), part)
    if split is None:
        raise TrackError(f"track '{track.id}': its loader gives no {what} split although the registry pins one")
    return split


def track_holdout(track: Track, dynamic: bool = False) -> ArraySet | None:
    """load_holdout, or None where the track pins no holdout (its results then carry no gap)."""
    pinned = track.update_holdout_set_sha256 if dynamic else track.holdout_set_sha256
    return None if pinned is None else load_holdout(track, dynamic)


def model_file(track: Track) -> Path:
    track.require_runnable()
    if track.seal is not None and track.seal.scheme == "v2" and "model" in track.seal.files:
        from reconbench.image.sealed import require_opened

        require_opened(track)  # outside the board's run: the one line that says the draw is sealed
        raise TrackError(f"track '{track.id}': a v2 draw's model has no plaintext file; it is opened in memory "
                         "(track_files.load_target_model)")
    if track.source is None:
        raise TrackError(f"track '{track.id}' names no source for its target model")
    if track.source.kind == "embedded":
        path = embedded_file(track.source.model_file)
    else:
        from reconbench.zoo.loading import download_model_file

        path = download_model_file(track)
    if not path.is_file():
        raise TrackError(f"{path}: target model weight file of track '{track.id}' is missing")
    _check("target model", str(path), sha256_bytes(path.read_bytes()), track.target_model_sha256)
    return path


def load_target_model(track: Track, device: str | torch.device = "cpu") -> nn.Module:
    """The track's target model, hash-checked. A v2 draw's is decrypted in memory with the key in context
    (image/sealed.open_weights; refused outside the board's sealed run); an update twin's model before the
    update is its open twin's, public."""
    from reconbench.image.models import load_model

    if track.seal is not None and track.seal.scheme == "v2" and "model" in track.seal.files:
        from reconbench.image.models.registry import load_model_bytes
        from reconbench.image.sealed import open_weights, require_opened

        require_opened(track)
        plain = open_weights(track, "model")
        _check("target model", track.seal.files["model"].file, sha256_bytes(plain), track.target_model_sha256)
        return load_model_bytes(track.architecture, plain, f"{track.id}/model (decrypted)", device=device,
                                **track.arch_kwargs)
    return load_model(track.architecture, model_file(track), device=device, **track.arch_kwargs)


def target_model_sha256(track: Track) -> str:
    """The sha256 of the track's target model as a result names it: the file's, or for a v2 draw the plaintext
    hash the registry pins (load_target_model checked the decrypted bytes against it)."""
    if track.seal is not None and track.seal.scheme == "v2" and "model" in track.seal.files:
        return str(track.target_model_sha256)
    return sha256_bytes(model_file(track).read_bytes())


def public_pool(track: Track) -> np.ndarray:
    """Every image of the track's dataset that the toolkit ships or downloads (uint8 N x C x H x W):
    the pool the copy and near-copy rules compare reconstructions with."""
    import numpy as np

    if track.seal is not None and track.seal.scheme == "v2":  # the pool is secret, the whole block is public
        from reconbench.image.sealed import public_images

        return public_images(track)
    splits = load_splits(track)
    # update_holdout is drawn from holdout (data/arrays.py), so holdout covers both
    parts = [splits.target, splits.update, splits.aux_same, splits.test, splits.holdout, splits.aux_similar]
    images = [p.images for p in parts if p is not None]
    if track.seal is not None:  # a sealed draw: its open twin's target set and holdout are public too
        from reconbench.image.sealed import open_public

        images.append(open_public(track))
    return np.concatenate(images)


def public_dataset(track: Track) -> tuple[np.ndarray, np.ndarray]:
    """The whole public dataset the track's splits were drawn from (uint8 N x C x H x W in the track's
    image format, and each image's class in that dataset): 1,797 digits, 70,000 Fashion-MNIST images
    (train and test, every class, padded as the track's view pads). What the extraction threshold is
    calibrated on and what the non-member copy check searches (submissions/checks/copies.py). A track
    of another dataset gets its splits' pool (public_pool) with the splits' labels."""
    import numpy as np

    if track.dataset.startswith("sklearn-digits"):
        from reconbench.image.data.digits import load_digits_arrays

        full = load_digits_arrays()
        return full.images, full.labels
    if track.dataset.startswith("fashion-mnist"):
        from reconbench.image.data.fashion import fashion_mnist
        from reconbench.image.data.fashion_splits import _view

        view, data = _view(track.dataset), fashion_mnist()
        images = np.concatenate([data["train"].images, data["test"].images])
        if view.pad:
            images = np.pad(images, ((0, 0), (0, 0), (view.pad, view.pad), (view.pad, view.pad)))
        return np.ascontiguousarray(images), np.concatenate([data["train"].labels, data["test"].labels])
    splits = load_splits(track)
    parts = [p for p in (splits.target, splits.update, splits.aux_same, splits.test, splits.holdout) if p is not None]
    return np.concatenate([p.images for p in parts]), np.concatenate([p.labels for p in parts])
