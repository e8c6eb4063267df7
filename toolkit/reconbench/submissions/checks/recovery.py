"""rescore.recovery: the recovery count (core/recovery.py) of an open image track's entry, computed at
re-scoring from the reconstructions, the target set, the holdout and the track's public dataset.

Never claimed and never signed: a result file carries no recovery (adding one to the payload would
change the canonical form of every committed signature), so validation computes it, as it re-computes
the extraction count, and the board reads it from here (EntryReport.recovery, the validation cache).
The check only informs ("pass" with the count, or "not-run" with why); the tier reads ctx.recovery.
Sealed draws are left out: their members open only with the board's key (checks/sealed.py).
"""

from __future__ import annotations

from functools import partial

from reconbench.submissions.checks.base import Check, Context


def check(ctx: Context, report, target, holdout) -> list[Check]:
    ctx.recovery = None
    if getattr(ctx.track, "seal", None) is not None:
        return [Check("rescore.recovery", "not-run", "a sealed draw: its members open only with the board's key")]
    if holdout is None:
        return [Check("rescore.recovery", "not-run", "the track pins no holdout: no recovery count")]
    from reconbench.core.recovery import RecoveryResult
    from reconbench.image.metrics.recovery import image_recovery, pool_public_nearest, ssim_from_matrices

    key = ctx.track.dataset  # tracks of one dataset and view share the public images (and their nn)
    public = partial(_public, ctx.track)
    nn_tar = pool_public_nearest(key, target.images, public)
    nn_hold = pool_public_nearest(key, holdout.images, public)
    found = image_recovery(ctx.images, ctx.labels, target.images, target.labels, holdout.images, holdout.labels,
                           nn_tar, nn_hold, ssim_from_matrices((report.matrices or {}).get("ssim"), ctx.images,
                                                               target.images, holdout.images, ctx.device),
                           public=public, public_key=key)
    ctx.recovery = RecoveryResult.of(found)
    return [Check("rescore.recovery", "pass", f"computed here (never claimed): {ctx.recovery.sentence()}")]


_PUBLIC: dict[str, object] = {}  # the last dataset's public images (70,000 Fashion-MNIST images: 72 MB)


def _public(track):
    from reconbench.image.track_files import public_dataset

    if track.dataset not in _PUBLIC:
        _PUBLIC.clear()
        _PUBLIC[track.dataset] = public_dataset(track)[0]
    return _PUBLIC[track.dataset]


def release() -> None:
    """Free the kept public images (the board's build calls it with the other public pools' release)."""
    _PUBLIC.clear()
