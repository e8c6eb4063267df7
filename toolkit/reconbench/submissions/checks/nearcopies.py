"""Check 8, near-copies: how many reconstructions are near-copies of public images (the whole public
dataset of the track, every split), under the track's calibrated thresholds (submissions/nearcopy.py).

Exact copies of public images that are not the entry's targets already failed check 7; exact copies
of its own targets (check 7 lists them in ctx.exact_copies) hold the entry here, whatever their
share: a perfect attack and a copy look alike until reproduced. Here a reconstruction is flagged when it is closer to a public
image than all but ~1% of public images are to their nearest other public image, in pixel space or
in the structure space. A real attack can come that close to its targets (Bias-Rec on small nets
can), so a flagged entry is not failed: with more than HELD_SHARE flagged it is *held* — listed
with the evidence (which reconstructions, which public images, side by side on its page), never
ranked, until it is reproduced. Extraordinary claims wait for reproduction (docs/architecture.md, Trust).
"""

from __future__ import annotations

import numpy as np

from reconbench.core.hub import HubError
from reconbench.core.io import FileFormatError
from reconbench.submissions.checks.base import Check, Context
from reconbench.submissions.nearcopy import HELD_SHARE
from reconbench.submissions.publicspace import public_space
from reconbench.core.tracks import TrackError

EVIDENCE_ROWS = 32  # shown on the entry page (all flagged indices are in the check's details)


def check(ctx: Context) -> list[Check]:
    try:
        space, thresholds = public_space(ctx.track)
    except (TrackError, HubError, FileFormatError, ImportError) as exc:
        return [Check("nearcopies", "fail", f"cannot load the public data pool: {exc}")]
    flags = space.flag(ctx.images, thresholds)
    exact = np.array(sorted(ctx.exact_copies), dtype=np.int64)
    hits = np.union1d(np.flatnonzero(flags.hit), exact)
    limits = f"pixel MSE <= {thresholds.pixel_mse:.3g} or structure distance <= {thresholds.structure:.3g}"
    share = hits.size / len(flags.hit)
    if share <= HELD_SHARE and not exact.size:
        return [Check("nearcopies", "pass", f"{hits.size} of {len(flags.hit)} reconstructions near a public image "
                                            f"({limits}); an entry is held above {HELD_SHARE:.0%}")]
    rest = np.setdiff1d(hits, exact)
    order = np.concatenate([exact, rest[np.argsort(flags.structure[rest])]])  # exact copies shown first
    rows = [dict(index=int(i), public=int(flags.where[i]), pixel=float(flags.pixel[i]),
                 structure=float(flags.structure[i])) for i in order[:EVIDENCE_ROWS]]
    ctx.evidence = {"flagged": int(hits.size), "total": len(flags.hit), "rows": rows, "exact": int(exact.size)}
    reasons = []
    if exact.size:
        reasons.append(f"exact copies of its own targets: {exact.size} of {len(flags.hit)} reconstructions equal "
                       "target images (a perfect attack and a copy look alike)")
    if share > HELD_SHARE:
        reasons.append(f"near-copies of public images: {hits.size} of {len(flags.hit)} reconstructions "
                       f"({share:.1%}, more than {HELD_SHARE:.0%}) are within the track's calibrated "
                       f"near-copy thresholds ({limits})")
    ctx.held_reason = "; ".join(reasons) + "; not ranked until reproduced"
    details = [f"reconstruction {e['index']} ~ public image {e['public']} (pixel MSE {e['pixel']:.2e}, "
               f"structure {e['structure']:.2e})" for e in rows]
    return [Check("nearcopies", "warn", f"held: {ctx.held_reason}", details)]
