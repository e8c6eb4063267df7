"""Checks 6-8 for a text entry: re-score, copies, near-copies.

rescore: reconbench.text.metrics.score_text on (reconstruction, its own target) pairs aligned by id,
exactly as evaluate_text ran it; each claimed metric is compared under checks/rescore.py's policy
and tolerances (strings are scored exactly; the MiniLM similarity within 1e-4).
copies / nearcopies: the text copy rule (submissions/textcopy.py): a copy of a public text that is
not the reconstruction's own target fails the entry; more than HELD_SHARE near copies hold it. A
reconstruction equal to its own target (after normalisation) is no copy of anything else, but it is
also what a forger who read the public target split would submit: as for images (checks/copies.py),
one such reconstruction holds the entry until a reproducer's record shows the attack produces it.
"""

from __future__ import annotations

import numpy as np

from reconbench.submissions.checks.base import Check, CheckFailed, Context
from reconbench.submissions.checks.rescore import compare, extraction_check, membership_checks
from reconbench.submissions.nearcopy import HELD_SHARE

SHOW = 10
EVIDENCE_ROWS = 32


def rescore(ctx: Context) -> list[Check]:
    if not ctx.rescore:
        return [Check("rescore", "not-run", "re-scoring switched off (--no-rescore): metrics unverified")]
    from reconbench.text.evaluation import score_against

    try:
        report = score_against(ctx.texts, ctx.target_texts, device=ctx.device)
    except (ImportError, OSError) as exc:
        return [Check("rescore", "fail", f"cannot re-score the texts here: {exc}")]
    claimed = ctx.result.payload.metrics
    n = len(ctx.target_texts)
    # score_text computes every text metric for every result (its MiniLM is a pinned track file)
    checks = [compare(name, claimed.get(name), actual, n, n, always=True) for name, actual in report.items()]
    for name in sorted(set(claimed) - set(report)):
        checks.append(Check(f"rescore.{name}", "fail", f"claimed {claimed[name].value}, but this toolkit has no such text metric"))
    from reconbench.text.evaluation import text_membership

    got = text_membership(ctx.track, ctx.texts, ctx.target_texts, ctx.result.payload.role, device=ctx.device)
    if got is not None:
        info, ctx.gaps = got
        checks += membership_checks(ctx, info.holdout_sha256, info.metrics, n, ctx.gaps)
        checks += extraction_check(ctx, info.extraction)
    ctx.unverified = [k for k, a in report.items() if a.status != "computed" and k in claimed and claimed[k].status == "computed"]
    ctx.rescored = all(c.status != "fail" for c in checks) and not ctx.unverified
    return checks


def _pool(ctx: Context):
    from reconbench.submissions.textcopy import public_text_space

    return public_text_space(ctx.track.id, ctx.track.splits_sha256.get("target"))


def _flags(ctx: Context):
    if ctx.text_flags is None:
        from reconbench.submissions.textcopy import flag, track_edit_margin

        space, threshold, names = _pool(ctx)
        ctx.text_flags = (flag(space, threshold, ctx.texts.texts, ctx.target_texts.texts, track_edit_margin(ctx.track)),
                          names)
    return ctx.text_flags


def _id(ctx: Context, i: int) -> str:
    return ctx.texts.ids[i]


def copies(ctx: Context) -> list[Check]:
    flags, names = _flags(ctx)
    hits = np.flatnonzero(flags.copy)
    if hits.size:
        lines = [f"reconstruction {_id(ctx, i)!r} = public text {names[flags.where[i]]!r} (not its target; "
                 "equal after normalisation)" for i in hits]
        shown = ", ".join(repr(_id(ctx, i)) for i in hits[:SHOW]) + (", ..." if hits.size > SHOW else "")
        raise CheckFailed(f"{hits.size} of {len(flags.copy)} reconstructions are copies of public "
                          f"{ctx.track.dataset} texts outside the target split (not their targets): ids {shown}", lines)
    close = flags.close if flags.close is not None else np.zeros_like(flags.exact)
    exact = np.flatnonzero(flags.exact | close).tolist()
    if not exact:
        return [Check("copies", "pass", f"no reconstruction equals (after normalisation) an aux or test text, among "
                                        f"{len(names)} public texts (another target's text counts as a near copy); none "
                                        "is equal or within the edit margin of its own target")]
    ctx.exact_copies = {i: i for i in exact}
    shown = ", ".join(repr(_id(ctx, i)) for i in exact[:SHOW]) + (", ..." if len(exact) > SHOW else "")
    lines = [f"reconstruction {_id(ctx, i)!r} = its own target (equal after normalisation)" if flags.exact[i] else
             f"reconstruction {_id(ctx, i)!r} ~ its own target (relative edit distance {flags.edit[i]:.3f}, within "
             "the margin)" for i in exact]
    n_close = int(close.sum())
    return [Check("copies", "warn", f"no copy of an aux or test text; {len(exact)} of {len(flags.copy)} reconstructions "
                                    f"equal their own target after normalisation{f' or lie within the edit margin of it ({n_close})' if n_close else ''} "
                                    f"(ids {shown}): a perfect attack and a copy of the public target split look alike, "
                                    "so the entry is held until it is reproduced", lines)]



def nearcopies(ctx: Context) -> list[Check]:
    flags, names = _flags(ctx)
    hits = np.flatnonzero(flags.near)
    limit = (f"another target's text, or word 1-2-gram Jaccard >= {flags.threshold:.3g} and above the similarity "
             "to its own target")
    exact = (f"{len(ctx.exact_copies)} of {len(flags.near)} reconstructions equal their own target or lie within "
             "the edit margin of it (exact recoveries and copies of the public target split look alike)"
             ) if ctx.exact_copies else None
    if flags.near_share <= HELD_SHARE:
        near = (f"{hits.size} of {len(flags.near)} reconstructions near a public text that is not their target "
                f"({limit}); an entry is held above {HELD_SHARE:.0%}")
        if not exact:
            return [Check("nearcopies", "pass", near)]
        ctx.held_reason = f"{exact}; not ranked until reproduced"
        return [Check("nearcopies", "warn", f"held: {ctx.held_reason} ({near})")]
    order = hits[np.argsort(-flags.similarity[hits])]
    rows = [dict(index=int(i), id=_id(ctx, i), public=names[flags.where[i]], similarity=float(flags.similarity[i]),
                 own=float(flags.own[i])) for i in order[:EVIDENCE_ROWS]]
    ctx.evidence = {"flagged": int(hits.size), "total": len(flags.near), "rows": rows, "modality": "text"}
    ctx.held_reason = (f"near-copies of public texts: {hits.size} of {len(flags.near)} reconstructions "
                       f"({flags.near_share:.1%}, more than {HELD_SHARE:.0%}) are nearer another public text than "
                       f"their own target ({limit})" + (f"; {exact}" if exact else "") + "; not ranked until reproduced")
    details = [f"reconstruction {r['id']!r} ~ public text {r['public']!r} (similarity {r['similarity']:.3f}, "
               f"to its own target {r['own']:.3f})" for r in rows]
    return [Check("nearcopies", "warn", f"held: {ctx.held_reason}", details)]
