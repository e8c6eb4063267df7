"""Check 7, copies: exact copies of images of the track's public data pool.

The pool is every split of the track (target, update, auxiliary, test, holdout): for digits, all
1,797 scikit-learn digits. The holdout is public data too (it stays off the attack's view only so
that it can serve as the membership gap's reference): an entry returning holdout images copies. A perfect score is otherwise free: the target set of a public dataset can be
submitted as its own "reconstruction". Threshold: per-pixel MSE <= 1e-4 on [0, 1] pixels, i.e. an
RMS difference of at most 0.01 ~ 2.55/255, about one grey level of uint8 rounding noise per pixel.

- An exact copy of a public image that is NOT one of the entry's own targets (the target set; the
  update set in dynamic scenarios) fails the entry: an attack recovers its targets, so such an
  image can only have been copied.
- An exact copy of one of its own targets is what a perfect attack produces too (Deep Leakage
  recovers some update images exactly): a copy and a perfect reconstruction look alike, and only
  reproduction tells them apart. Such an entry is *held* (checks/nearcopies.py sets the state, with
  the evidence) until a reproducer's record lifts it to "reproduced"; it is never ranked before.

The search against the pool is the public near-copy search's (submissions/publicspace.py): a
lower bound from projected pixels screens the pairs, and each pair within the threshold gets its
exact MSE from the grey levels (the full N x M comparison in float64 cost a Fashion-MNIST entry
seconds and held 140 MB per track: issue 37). Against the entry's own targets (a few hundred
images, only for the hits) the distances are batched tensor algebra, ||x||^2 + ||t||^2 - 2 x.t, in
float64: in float32 the cancellation errs by ~0.2% near the threshold (measured on 8x8 images).
"""

from __future__ import annotations

import numpy as np
import torch

from reconbench.submissions.checks.base import Check, CheckFailed, Context
from reconbench.core.hub import HubError
from reconbench.core.io import FileFormatError
from reconbench.core.tracks import TrackError
from reconbench.image.track_files import load_splits
from reconbench.submissions.publicspace import nearest_of_each, public_space

COPY_MSE = 1e-4
CHUNK_ELEMENTS = 1 << 23  # rows x pool entries per block: 64 MB of float64 distances at most
SHOW = 10

_POOLS: dict[tuple[str, str | None, str], torch.Tensor] = {}  # the entries' own targets, per track


def nearest_copies(rec: np.ndarray, pool: torch.Tensor, device: str = "cpu") -> tuple[np.ndarray, np.ndarray]:
    """For each reconstruction: the smallest per-pixel MSE to a pool image, and that image's index."""
    x = torch.from_numpy(rec.reshape(len(rec), -1)).to(device).double() / 255.0
    pool = pool.to(device=device, dtype=torch.float64)
    d = x.shape[1]
    pool_sq = (pool * pool).sum(1)
    rows = max(1, CHUNK_ELEMENTS // max(1, pool.shape[0]))
    best, where = [], []
    for lo in range(0, x.shape[0], rows):
        xb = x[lo:lo + rows]
        dist = ((xb * xb).sum(1, keepdim=True) + pool_sq[None, :] - 2.0 * xb @ pool.T).clamp_min_(0) / d
        value, index = dist.min(dim=1)
        best.append(value.cpu())
        where.append(index.cpu())
    return torch.cat(best).numpy(), torch.cat(where).numpy()


def _targets_tensor(ctx: Context) -> torch.Tensor:
    """The entry's own targets: the target set, or the update set in dynamic scenarios."""
    part = "update" if ctx.scenario.training == "dynamic" else "target"
    key = (ctx.track.id, ctx.track.target_set_sha256, part)
    if key not in _POOLS:
        images = getattr(load_splits(ctx.track, [part]), part).images
        _POOLS[key] = torch.from_numpy(images.reshape(len(images), -1)).double() / 255.0
    return _POOLS[key]


def _shown(hits: np.ndarray) -> str:
    return ", ".join(str(int(i)) for i in hits[:SHOW]) + (", ..." if hits.size > SHOW else "")


def sealed(track) -> bool:
    """A sealed draw's refusals give counts only (issue 43): which outputs copy a non-member tells the
    submitter which are members, and validate's messages and details reach a CI log."""
    return getattr(track, "seal", None) is not None


def check(ctx: Context) -> list[Check]:
    try:
        pool, _ = public_space(ctx.track)
        targets = _targets_tensor(ctx)
    except (TrackError, HubError, FileFormatError, ImportError) as exc:
        return [Check("copies", "fail", f"cannot load the public data pool: {exc}")]
    non_members(ctx, targets)
    rows, cols, mse = pool.pixel_pairs(ctx.images, COPY_MSE)
    best, where = np.full(len(ctx.images), np.inf), np.full(len(ctx.images), -1, dtype=np.int64)
    first = nearest_of_each(rows, cols, mse)  # each row's nearest pool image within the threshold
    best[rows[first]], where[rows[first]] = mse[first], cols[first]
    hits = np.flatnonzero(best <= COPY_MSE)
    if not hits.size:
        return [Check("copies", "pass", f"no reconstruction within per-pixel MSE {COPY_MSE:g} of the {len(pool)} "
                                        f"public images (closest: {pool.closest_pixel(ctx.images):.2e}); "
                                        f"{_non_member_note(ctx)}")]
    # Is each copied image one of the entry's own targets? (The same image may sit in two splits.)
    own_best, own_where = nearest_copies(ctx.images[hits], targets, ctx.device)
    own, other = hits[own_best <= COPY_MSE], hits[own_best > COPY_MSE]
    if other.size:
        if sealed(ctx.track):
            raise CheckFailed(f"{other.size} of {len(best)} reconstructions are exact copies of public {ctx.track.dataset} "
                              f"images that are not among the entry's targets (per-pixel MSE <= {COPY_MSE:g}; a sealed "
                              "draw's refusal gives counts only); an attack recovers its targets, so these can only be copies")
        lines = [f"reconstruction {int(i)} ~ public image {int(where[i])} (per-pixel MSE {best[i]:.2e})" for i in other]
        raise CheckFailed(f"{other.size} of {len(best)} reconstructions are exact copies of public {ctx.track.dataset} "
                          f"images that are not among the entry's targets (per-pixel MSE <= {COPY_MSE:g}): indices "
                          f"{_shown(other)}; an attack recovers its targets, so these can only be copies", lines)
    target_of = dict(zip(hits.tolist(), own_where.tolist()))
    ctx.exact_copies = {int(i): int(target_of[int(i)]) for i in own}
    lines = [f"reconstruction {int(i)} = target {target_of[int(i)]} (per-pixel MSE {best[i]:.2e})" for i in own]
    return [Check("copies", "warn", f"{own.size} of {len(best)} reconstructions are exact copies of the entry's own "
                                    f"targets (per-pixel MSE <= {COPY_MSE:g}): indices {_shown(own)}; a perfect attack "
                                    "and a copy look alike, so the entry is held until it is reproduced", lines)]


def _split_names(track) -> dict[bytes, str]:
    """image bytes -> the track split holding it (the splits an attacker's view or the gap use)."""
    key = (track.id, track.target_set_sha256, "names")
    if key not in _POOLS:
        splits = load_splits(track)
        names: dict[bytes, str] = {}
        for name in ("test", "aux_similar", "aux_same", "holdout", "update_holdout", "update", "target"):
            part = getattr(splits, name)
            for img in ([] if part is None else part.images):
                names[img.tobytes()] = name
        _POOLS[key] = names
    return _POOLS[key]


def _non_member_note(ctx: Context) -> str:
    from reconbench.core.tracks import extraction_calibration

    cal = extraction_calibration(ctx.track)
    if cal is None:
        return "the track has no extraction threshold: copies of non-members within it not searched"
    return f"none within the extraction threshold (per-pixel MSE {cal.threshold:.3g}) of a public non-member image"


def non_members(ctx: Context, targets: torch.Tensor) -> None:
    """Refuse copies of non-members (submissions/publiccopy.py): a reconstruction within the track's
    extraction threshold of a public image of the whole dataset, and of none of its own targets. The
    threshold is the count's (core/tracks.extraction_calibration): a sealed draw takes its dataset's, and
    without the key its "targets" are its whole public pool, so a copy of any image outside the pool is
    refused here, and a copy of the pool's non-members by the keyed check (checks/sealed.py)."""
    from reconbench.core.tracks import extraction_calibration
    from reconbench.image.data.fashion import FashionMNISTMissing
    from reconbench.submissions.publiccopy import non_member_copies, public_index

    cal = extraction_calibration(ctx.track)
    if cal is None:
        return
    try:
        index = public_index(ctx.track)
    except (TrackError, HubError, FileFormatError, ImportError, OSError, RuntimeError, FashionMNISTMissing) as exc:
        raise CheckFailed(f"cannot load the public {ctx.track.dataset} dataset to search for copies of non-members: "
                          f"{exc}") from None
    members = (targets * 255.0).round().to(torch.uint8).numpy().reshape((-1,) + tuple(ctx.images.shape[1:]))
    found = non_member_copies(ctx.images, members, index, cal.threshold)
    if not found:
        return
    if sealed(ctx.track):
        raise CheckFailed(f"{len(found)} of {len(ctx.images)} reconstructions are within the extraction threshold "
                          f"(per-pixel MSE {cal.threshold:.3g}) of public {ctx.track.dataset} images outside the draw's "
                          "pool (a sealed draw's refusal gives counts only); an attack recovers members, so copies of "
                          "non-members are evidence of carried data")
    names = _split_names(ctx.track)
    images = index.pixels
    lines = [f"reconstruction {h.reconstruction} ~ public {ctx.track.dataset} image {h.public} "
             f"({names.get(images[h.public].reshape(ctx.images.shape[1:]).tobytes(), 'not in any split of the track')}; "
             f"per-pixel MSE {h.mse:.2e})" for h in found]
    where = sorted({names.get(images[h.public].reshape(ctx.images.shape[1:]).tobytes(), "rest of the dataset")
                    for h in found})
    raise CheckFailed(f"{len(found)} of {len(ctx.images)} reconstructions are within the extraction threshold "
                      f"(per-pixel MSE {cal.threshold:.3g}) of public {ctx.track.dataset} images that are not members "
                      f"({', '.join(where)}): indices {_shown(np.array([h.reconstruction for h in found]))}; an attack "
                      "recovers members, so copies of non-members are evidence of carried data", lines)
