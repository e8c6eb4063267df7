"""Check 10, sealed: a sealed track's membership numbers, scored at validation (reconbench.image.sealed).

A result on a sealed track carries no membership gap: its members are drawn from the board's key
(core/seal.py). This check:

- without the key (a contributor's machine, the site): passes with a note; an entry's sealed.json, if
  present, counts only under the signature of the draw's record signer pinned in the registry
  (core/sealed_records.py): a record written or changed by hand fails, rather than being shown as
  CI's numbers (re-checked by every keyed validation and, after the reveal, by anyone: `seal verify`);
- always: the result names its draw (track id, entry id, the marker's group, draw, pool and commitment;
  the registry check holds target.model_sha256 and target_set_sha256 to the draw's model and pool), and
  carries no `membership` block: a sealed result's gap and count are the board's, computed with the
  key, never read from the entry (a forged block was read by the findings page: issue 43);
- with the key (`validate --seal-key PATH`: CI, maintainers): opens the published commitment, fails
  the entry when a reconstruction is within the extraction threshold (the count's) of a Fashion-MNIST
  image that is not a member of the draw (only data carried into the run gives one; the message gives
  counts only, never which outputs), computes the gap and the extraction count,
  and compares them with sealed.json (a record that differs, or is not signed, fails); `write_sealed`
  writes a missing one, signed, and signs one whose numbers match but that has no valid signature.
"""

from __future__ import annotations

import hashlib
import json

from reconbench.submissions.checks.base import Check, CheckFailed, Context
from reconbench.submissions.layout import SEALED_FILE


def _payload_sha256(ctx: Context) -> str:
    from reconbench.core.signing import canonical

    return hashlib.sha256(canonical(ctx.result.payload.model_dump(mode="json"))).hexdigest()


def _read_record(ctx: Context) -> dict | None:
    path = ctx.entry_dir / SEALED_FILE
    if not path.is_file():
        return None
    from reconbench.core.io import strict_json_loads

    try:
        record = strict_json_loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CheckFailed(f"{path}: not a readable sealed record ({exc})") from None
    if not isinstance(record, dict) or record.get("payload_sha256") != _payload_sha256(ctx):
        raise CheckFailed(f"{path}: this sealed record is not for this entry's signed payload")
    return record


def relabel_problem(payload, track) -> str | None:
    """Why a result on sealed draw `track` is not a result of that draw as evaluate writes one, or None.
    A draw is named by its model's and pool's hashes (the registry check holds target.* to them); the
    entry id evaluate made begins with the draw's track id; and the membership gap and the extraction
    count are the board's (scored with the key): a `membership` block in a sealed result is forged."""
    if payload.target.model_sha256 != track.target_model_sha256:
        return (f"target.model_sha256 {payload.target.model_sha256[:12]}… is not the model of sealed draw "
                f"'{track.id}' ({str(track.target_model_sha256)[:12]}…): a run of another draw, relabelled")
    if payload.target.target_set_sha256 != track.seal.pool_sha256 and payload.target.target_set_sha256 != track.update_set_sha256:
        return f"target.target_set_sha256 is not the pool of sealed draw '{track.id}'"
    if not payload.entry_id.startswith(f"{track.id}-"):
        return (f"entry_id '{payload.entry_id}' does not begin with its draw's track id '{track.id}-' as evaluate writes "
                "it: a result of another draw, relabelled")
    if getattr(payload, "membership", None) is not None:
        return ("a sealed result carries a `membership` block; on a sealed draw the membership gap and the extraction "
                "count are computed by the board with the key (sealed.json), never read from the entry")
    return None


def check(ctx: Context) -> list[Check]:
    seal = getattr(ctx.track, "seal", None)
    marker = getattr(ctx.result.payload, "sealed", None)
    if seal is None:
        if (ctx.entry_dir / SEALED_FILE).exists():
            raise CheckFailed(f"{ctx.entry_dir / SEALED_FILE}: a sealed record on track '{ctx.track.id}', which is not sealed")
        return []
    if marker is None or (marker.group, marker.draw, marker.pool_sha256, marker.commitment) != \
            (seal.group, seal.draw, seal.pool_sha256, seal.commitment):
        raise CheckFailed(f"result.json: track '{ctx.track.id}' is sealed, but the payload's sealed marker does not name "
                          f"its draw, pool and commitment ({seal.group} draw {seal.draw}, commitment {seal.commitment[:12]}…)")
    problem = relabel_problem(ctx.result.payload, ctx.track)
    if problem:
        raise CheckFailed(f"result.json: {problem}")
    from reconbench.core.sealed_records import sign_record, signature_problem, unsigned

    recorded = _read_record(ctx)
    unsigned_why = signature_problem(recorded, seal.record_signer) if recorded is not None else None
    if ctx.seal_key is None:
        if unsigned_why:
            raise CheckFailed(f"{ctx.entry_dir / SEALED_FILE}: not CI's record: {unsigned_why}; sealed.json is written "
                              "by a validation with the board's key (validate --seal-key --write-sealed)")
        ctx.sealed = unsigned(recorded) if recorded is not None else None
        state = "sealed.json holds the numbers CI scored with the key" if recorded else "no sealed record yet"
        from reconbench.core.sealed_next import draws_in

        have = draws_in(ctx.team_dir, ctx.result.payload)  # how far this run is from the K the verdict needs
        return [Check("sealed", "pass", f"sealed track ({seal.group}, draw {seal.draw}; draw {seal.draw + 1} of "
                                        f"{seal.draws}, {have} of {seal.draws} draws of this run on the board): the "
                                        "membership gap and the extraction count are scored at validation with the "
                                        "board's key, by CI after the pull request, and published on the twin's "
                                        f"board; {state}; the key is revealed after {seal.reveal_after}, and then "
                                        "anyone can recompute them")]
    from reconbench.core.seal import SealError
    from reconbench.image import sealed_scores as sealed

    from reconbench.submissions.publiccopy import non_member_copies, public_index

    def search(images, members, threshold):  # the open tracks' public-copy search, on this draw's dataset
        return non_member_copies(images, members, public_index(ctx.track), threshold)

    try:
        own, other = sealed.carried(ctx.track, ctx.seal_key, ctx.images, search)
    except SealError as exc:
        raise CheckFailed(str(exc)) from None
    if other.size:
        # A count only: which outputs copy a non-member would tell the submitter which are members, and
        # this message reaches the sealed job's log (issue 43).
        threshold = sealed.calibration(ctx.track).threshold
        raise CheckFailed(f"{other.size} of {len(ctx.images)} reconstructions are within the extraction threshold "
                          f"(per-pixel MSE {threshold:.3g}) of Fashion-MNIST images that are not members of sealed draw "
                          f"{seal.draw} of {seal.group}, and of no member: no reconstruction comes that close to a "
                          "non-member, so these were carried into the run (a smuggled candidate set). Which ones is "
                          "not said: that would tell members apart")
    fresh = sealed.record(ctx.track, ctx.seal_key, ctx.result.payload.entry_id, _payload_sha256(ctx), ctx.images,
                          ctx.labels, ctx.device)
    if recorded is not None and not sealed.same_numbers(unsigned(recorded), fresh):
        raise CheckFailed(f"{ctx.entry_dir / SEALED_FILE}: differs from the numbers recomputed with the key")
    if unsigned_why and not ctx.write_sealed:
        raise CheckFailed(f"{ctx.entry_dir / SEALED_FILE}: the numbers match, but {unsigned_why} (--write-sealed signs it)")
    write = ctx.write_sealed and (recorded is None or unsigned_why is not None)
    if write:
        from reconbench.core.io import atomic_path

        with atomic_path(ctx.entry_dir / SEALED_FILE) as tmp:
            tmp.write_text(json.dumps(sign_record(fresh, ctx.seal_key), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    ctx.sealed = fresh
    gap = fresh["membership"]["ssim"]
    said = ("written" if recorded is None else "signed") if write else "matches sealed.json" if recorded else "not recorded"
    return [Check("sealed", "pass", f"scored with the key: draw {seal.draw} of {seal.group}, SSIM gap "
                                    f"{gap.get('gap')}, p {gap.get('p')}; {own.size} exact member copies; {said}")]
