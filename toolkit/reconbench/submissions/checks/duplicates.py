"""Check 9, duplicates: first come, first served (board.py says how arrival is ordered).

An entry fails only when an entry that reached the board *before* it has
  - the same entry_id (a replayed signature under another team, or a clash of names);
  - the same reconstruction file (sha256), whatever the ids; or
  - near-duplicate reconstructions: more than DUPLICATE_SHARE of this entry's reconstructions are
    within the track's calibrated near-copy thresholds (submissions/nearcopy.py, the same two
    spaces as the public-image check) of an earlier entry's reconstructions, on the same target
    set, when that entry belongs to another team; or, for the same team's earlier entry of the same
    configuration (board.setting_of), more than DUPLICATE_SHARE are seed copies of its reconstructions
    (submissions/seedcopy.py: a second seed of one configuration must be an independent run).
The message names the original (the earliest, when several are). Another team's candidates come
from a nearest-neighbour index over every entry of the target set (submissions/nearindex.py), which
bounds each entry's share from above; the exact comparison runs on the entries whose bound is above
DUPLICATE_SHARE only, so the verdict is the one a comparison with every earlier entry would give.
The earlier entry is never failed by a later one: a newcomer can
never knock an entry off the board. When the original ran the same run (same attack, settings and
seed), the entry is a re-run of it, also when only every metric agrees within the reproduction
tolerances: the message says "this reproduces entry X; nothing new to rank" and what to do instead
(submissions/reproduces.py). The same run with other reconstructions (an honest run at another
thread count or on another device) is not failed: it is a *replicate* of X, held (listed beside X,
never ranked: the setting ranks once), and said plainly to be a failed reproduction attempt where its
metrics differ too. A registered attack's near-duplicate of an earlier entry of the same attack under
other options (MI-Face converges: 50 iterations and the default give near-identical images) is
held until reproduced, not failed: a reproduction re-runs the toolkit's own code, which tells an honest
convergence from a copy. A file attack's is failed as before (its own code could carry the copy).
The board is every other entry under the root whose result.json parses and whose signature verifies
under its team's keys (an unsigned stray file cannot claim a real entry's hash).
"""

from __future__ import annotations

from pathlib import Path

from reconbench.submissions.board import setting_of
from reconbench.submissions.checks.base import Check, CheckFailed, Context
from reconbench.submissions import reproduces
from reconbench.submissions.nearcopy import HELD_SHARE, public_thresholds
from reconbench.submissions.nearindex import first_near_duplicate
from reconbench.submissions.validation_cache import near_key

# The same share as holding: an honest entry has at most ~2% of its reconstructions this close to
# any public image (measured on the digits examples), so more than 5% shared with one earlier
# entry is a copy of it, not a coincidence.
DUPLICATE_SHARE = HELD_SHARE


def _rel(ctx: Context, path) -> str:
    return f"{path.parent.name}/{path.name}"


def _seed_copy(ctx: Context, candidates: list) -> tuple[Path, float] | None:
    """The first of the team's own earlier runs of this configuration that more than DUPLICATE_SHARE of
    this entry's reconstructions are seed copies of (submissions/seedcopy.py; a seed group is small)."""
    from reconbench.submissions.seedcopy import seed_copy_share

    try:
        public_thresholds(ctx.track)
    except Exception:  # noqa: BLE001 - as the near-copy test: no public pool, no near test of either kind
        return None
    for other in candidates:
        space = ctx.board.space(other)
        if space is None:
            continue
        share = seed_copy_share(space.images, ctx.images)
        if share > DUPLICATE_SHARE:
            return other, share
    return None


def _reproduction(ctx: Context, found: reproduces.Finding) -> CheckFailed:
    mine = Path(ctx.root.name) / ctx.entry_dir.relative_to(ctx.root)  # the entry is a run folder too
    line, options = reproduces.advice(found, ctx.result.payload, ctx.root, run_dir=str(mine),
                                      first=ctx.board.how_first(found.original))
    return CheckFailed(line, options)


def _converges(ctx: Context, other: Path) -> bool:
    """A near-duplicate of `other` that a re-run of the toolkit's own code can settle: this entry runs a
    registered attack (not a file), the same attack as `other`, under other options (a budget or a
    configuration value; another seed alone is not enough: a seed that changes nothing is the same point,
    reproduces.seed_note)."""
    from reconbench.core.attack_source import is_file_attack

    payload, theirs = ctx.result.payload, ctx.board.payload(other)
    if reproduces.configured(payload) is None or is_file_attack(payload.attack.code) \
            or theirs.attack.name != payload.attack.name:
        return False
    mine, its = reproduces.run_settings(payload), reproduces.run_settings(theirs)
    mine.pop("seed"), its.pop("seed")
    return mine != its


def _replicate(ctx: Context, found: reproduces.Finding) -> list[Check]:
    """The same run as an earlier entry, other bytes: held beside it, never ranked (_trust in validate.py)."""
    ctx.replicate_of = found.original
    line = reproduces.replicate_line(found, first=ctx.board.how_first(found.original))
    _hold(ctx, line)
    return [Check("duplicates", "warn", f"held: {line}")]


def _hold(ctx: Context, reason: str) -> None:
    ctx.held_reason = f"{ctx.held_reason}; {reason}" if ctx.held_reason else reason


def _near_duplicate(ctx: Context, earlier: list) -> tuple[Path, float] | None:
    """The first of `earlier` (arrival order) that more than DUPLICATE_SHARE of the images copy, by the
    track's near-copy thresholds."""
    if not earlier:
        return None
    try:
        thresholds = public_thresholds(ctx.track)
    except Exception:  # noqa: BLE001 - no thresholds, no near-duplicate test (exact ones still apply)
        return None
    payload = ctx.result.payload
    board = ctx.board
    key = None
    if board.cache is not None:  # the same board answers the same: validation_cache.near_key
        key = near_key(payload.reconstructions.sha256, [(board.recon_sha256(e), board.readable(e)) for e in earlier],
                       thresholds, DUPLICATE_SHARE)
        record = board.cache.load_record("near", key)
        if record is not None and (record["sha256"] is None or isinstance(record.get("share"), float)):
            if record["sha256"] is None:
                return None
            other = next((e for e in earlier if board.recon_sha256(e) == record["sha256"]), None)
            if other is not None:
                return other, record["share"]
    index = board.near_index(ctx.track, payload.scenario.split("/")[0])
    mine = board.features_of(payload.reconstructions.sha256, ctx.images)
    found = first_near_duplicate(ctx.images, mine, earlier, index, board.space, thresholds, DUPLICATE_SHARE)
    if key is not None:
        board.cache.store_record("near", key, {"sha256": board.recon_sha256(found[0]) if found else None,
                                               "share": float(found[1]) if found else None})
    return (found[0], found[1]) if found else None


def check(ctx: Context) -> list[Check]:
    payload = ctx.result.payload
    me = ctx.entry_dir
    board = ctx.board
    problems = []
    converged = None  # a registered attack's near-duplicate under other options: held, not failed
    same_id = board.earlier(me, board.by_entry_id(payload.entry_id))
    if same_id:
        problems.append(f"entry_id '{payload.entry_id}' is already on the board as {_rel(ctx, same_id[0])}, "
                        f"which came first ({board.how_first(same_id[0])})")
    same_target = board.earlier(me, board.same_target(payload.track, payload.scenario.split("/")[0]))
    same_file = board.earlier(me, board.by_sha256(payload.reconstructions.sha256))
    if same_file and not same_id and reproduces.same_run(payload, board.payload(same_file[0])):
        raise _reproduction(ctx, reproduces.Finding(same_file[0], "the same reconstruction file"))
    if same_file:
        problems.append(f"the same reconstruction file (sha256 {payload.reconstructions.sha256[:16]}...) is already "
                        f"on the board as {_rel(ctx, same_file[0])}, which came first ({board.how_first(same_file[0])})"
                        + reproduces.seed_note(board.payload(same_file[0])))
    if not same_file and ctx.images is not None:
        # Another team's entries, by the track's near-copy thresholds. The team's own entries of the same
        # configuration (seed groups) too, as seed copies: seeds of one configuration must differ as
        # independent runs do, or copies with a few pixels changed become a seed group with a std of 0
        # (honest seeds can be within the public thresholds of each other: submissions/seedcopy.py).
        # A team's runs at OTHER settings can be this close to each other (MI-Face at 12 and 40
        # iterations share half their images) and hurt nobody. Byte-identical files are duplicates
        # whoever holds them (above).
        earlier = board.earlier(me, board.same_target(payload.track, payload.scenario.split("/")[0]))
        mine = setting_of(payload)
        near = _near_duplicate(ctx, [e for e in earlier if board.team_of(e) != ctx.unit.team])
        own = _seed_copy(ctx, [e for e in earlier if board.team_of(e) == ctx.unit.team and board.setting(e) == mine])
        for found in (near, own):  # the same run again, other bytes: a replicate of it (submissions/reproduces.py)
            if found and not same_id and reproduces.same_run(payload, board.payload(found[0])):
                how = f"other bytes, but {found[1]:.0%} of the reconstructions are near-duplicates of its reconstructions"
                return _replicate(ctx, reproduces.Finding(found[0], how, reproduces.REPLICATE))
        if near and _converges(ctx, near[0]):  # held, not failed: a reproduction tells convergence from a copy
            converged = (f"{near[1]:.0%} of the reconstructions are near-duplicates of those of {_rel(ctx, near[0])}, "
                         f"which came first, an entry of the same attack ({payload.attack.name}) under other options; "
                         "the toolkit's own attack can converge to the same images, so the entry is held until a "
                         "reproduction re-runs it; not ranked until reproduced")
            _hold(ctx, converged)
            near = None
        if near:
            problems.append(f"{near[1]:.0%} of the reconstructions are near-duplicates of those of {_rel(ctx, near[0])}, "
                            f"which came first (more than {DUPLICATE_SHARE:.0%} within the track's near-copy "
                            "thresholds)")
        if own:
            problems.append(f"{own[1]:.0%} of the reconstructions are near-identical twins of those of "
                            f"{_rel(ctx, own[0])}, the same team's earlier run of the same configuration (more than "
                            f"{DUPLICATE_SHARE:.0%}): another seed must be an independent run, not a copy")
    if not problems:  # no copy found, but maybe the same run again, every metric within tolerance
        found = reproduces.finding(payload, [(e, board.payload(e)) for e in same_target], near=reproduces.near_share(board, ctx.track, ctx.images),
                                   share=DUPLICATE_SHARE)
        if found and found.kind == reproduces.REPLICATE:  # an honest re-run with other images: listed, not ranked
            return _replicate(ctx, found)
        if found:
            raise _reproduction(ctx, found)
    if problems:
        raise CheckFailed(problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""), problems)
    notes = ""
    others = sorted(board.key_owners(ctx.result.signature.public_key) - {ctx.unit.team})
    if others:
        notes = f"; note: its signing key is also listed by team(s) {', '.join(others)}"
    if converged:
        return [Check("duplicates", "warn", f"held: {converged}")]
    return [Check("duplicates", "pass", f"first on the board with this entry_id and these reconstructions among "
                                        f"{board.size()} signed entries{notes}")]
