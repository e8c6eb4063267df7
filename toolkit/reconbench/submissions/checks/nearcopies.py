"""Check 8, near-copies: how many reconstructions are near-copies of public images (the whole public
dataset of the track, every split), under the track's calibrated thresholds (submissions/nearcopy.py).

Exact copies already failed check 7. Here a reconstruction is flagged when it is closer to a public
image than all but ~1% of public images are to their nearest other public image, in pixel space or
in the structure space. A real attack can come that close to its targets (Bias-Rec on small nets
can), so a flagged entry is not failed: with more than HELD_SHARE flagged it is *held* — listed
with the evidence (which reconstructions, which public images, side by side on its page), never
ranked, until it is reproduced. Extraordinary claims wait for reproduction (DESIGN.md, Trust).
"""

from __future__ import annotations

import numpy as np

from reconbench.hub import HubError
from reconbench.io import FileFormatError
from reconbench.submissions.checks.base import Check, Context
from reconbench.submissions.nearcopy import HELD_SHARE, public_space
from reconbench.tracks import TrackError

EVIDENCE_ROWS = 32  # shown on the entry page (all flagged indices are in the check's details)


def check(ctx: Context) -> list[Check]:
    try:
        space, thresholds = public_space(ctx.track)
    except (TrackError, HubError, FileFormatError, ImportError) as exc:
        return [Check("nearcopies", "fail", f"cannot load the public data pool: {exc}")]
    flags = space.flag(ctx.images, thresholds)
    hits = np.flatnonzero(flags.hit)
    limits = f"pixel MSE <= {thresholds.pixel_mse:.3g} or structure distance <= {thresholds.structure:.3g}"
    if flags.share <= HELD_SHARE:
        return [Check("nearcopies", "pass", f"{hits.size} of {len(flags.hit)} reconstructions near a public image "
                                            f"({limits}); an entry is held above {HELD_SHARE:.0%}")]
    order = hits[np.argsort(flags.structure[hits])]
    rows = [dict(index=int(i), public=int(flags.where[i]), pixel=float(flags.pixel[i]),
                 structure=float(flags.structure[i])) for i in order[:EVIDENCE_ROWS]]
    ctx.evidence = {"flagged": int(hits.size), "total": len(flags.hit), "rows": rows}
    ctx.held_reason = (f"near-copies of public images: {hits.size} of {len(flags.hit)} reconstructions "
                       f"({flags.share:.1%}, more than {HELD_SHARE:.0%}) are within the track's calibrated "
                       f"near-copy thresholds ({limits}); not ranked until reproduced")
    details = [f"reconstruction {e['index']} ~ public image {e['public']} (pixel MSE {e['pixel']:.2e}, "
               f"structure {e['structure']:.2e})" for e in rows]
    return [Check("nearcopies", "warn", f"held: {ctx.held_reason}", details)]
