"""The validator: every check, in order, for each entry; the entry stops at its first failure.

    1 structure  2 schema  3 identity (the team's slug and name look like no other's)  4 signature
    4b paths (no machine path in a signed or published file: checks/machine_paths.py)  5 registry  6 reconstructions  7 rescore  8 copies  9 nearcopies  10 sealed (a sealed track's numbers,
    with the board's key: checks/sealed.py)  11 duplicates  12 reproduction (the shipped attack source; a reproducer's signed record lifts trust
    to "reproduced")
A modality may run a stage its own way (its plug-in's validation_stages, reconbench.modalities): a
text entry runs the text versions of 5-9 (checks/text_entry.py, checks/text_scores.py; the copy rule
is submissions/textcopy.py).

Trust (docs/architecture.md): "failed" if any check fails; "held" if more than a stated share of the
reconstructions are near-copies of public images, or any is an exact copy of one of the entry's own
targets (checks/copies.py, checks/nearcopies.py; for text, within a small edit distance of its own
target: checks/text_scores.py), or its membership gap lies beyond every reproduced entry's of its
track (submissions/leakage.py), unless reproduced;
"re-scored" if all pass, every claimed metric was recomputed within tolerance and no reconstruction is a copy of a public image; otherwise "signed"
(re-scoring switched off, or a claimed metric not computable on this machine). "reproduced": all
checks pass and a reproducer listed by the maintainers signed a record for this payload.

Reuse (validation_cache.py): the outcome of rescore, copies and nearcopies, which depend on the entry's
own signed content only, is kept under a key of that content and the toolkit; the near-duplicate
features of every reconstruction file are kept by its sha256. The other checks run every time. The
cache is used only with its HMAC secret set and outside the checkout (trusted_cache): else nothing
is reused.
`cache=False` (validate --no-cache) is the full re-validation.

Errors of any kind in the input become failed checks with a message that names the file; one
entry's problems never stop the others from being checked.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from functools import partial
from pathlib import Path

import numpy as np

from reconbench.core.extraction import ExtractionResult
from reconbench.core.recovery import RecoveryResult
from reconbench.core.membership import Gap
from reconbench.core.report import GapResult
from reconbench.modalities import for_result

from reconbench.image.results import ResultFile
from reconbench.text.results import TextResultFile
from reconbench.submissions.board import Board
from reconbench.submissions.checks import (
    copies,
    duplicates,
    identity,
    machine_paths,
    nearcopies,
    reconstructions,
    registry,
    reproduction,
    rescore,
    schema,
    sealed,
    signature,
    structure,
)
from reconbench.submissions.checks.rescore import deferred_mirrored
from reconbench.submissions.keys import key_changes
from reconbench.submissions.leakage import hold_extraordinary
from reconbench.submissions.checks.base import Check, CheckFailed, Context, TrustLevel
from reconbench.submissions.layout import DEFAULT_ROOT, Selection, Unit, all_units, lexical, select, show
from reconbench.submissions.team import Team
from reconbench.core.threads import one_torch_thread
from reconbench.submissions.validation_cache import CACHED_STAGES, ValidationCache, checks_key, enabled_by_env

STAGES: list[tuple[str, Callable[[Context], list[Check]]]] = [
    ("structure", structure.check),
    ("schema", schema.check),
    ("identity", identity.check),
    ("signature", signature.check),
    ("paths", machine_paths.check),
    ("registry", registry.check),
    ("reconstructions", reconstructions.check),
    ("rescore", rescore.check),
    ("copies", copies.check),
    ("nearcopies", nearcopies.check),
    ("sealed", sealed.check),
    ("duplicates", duplicates.check),
    ("reproduction", reproduction.check),
]
TEAM_STAGES = STAGES[:3]  # a team folder without entries: its layout, its team.toml, its identity
Progress = Callable[[int, int, "EntryReport", float], None]  # (done, total, the unit's report, its seconds)


@dataclass
class EntryReport:
    team: str
    entry_id: str  # "" for a team folder without entries, or a stray file at the root
    path: Path
    trust: TrustLevel
    checks: list[Check]
    result: ResultFile | TextResultFile | None = None
    team_info: Team | None = None
    readme: str | None = None
    unverified: list[str] = field(default_factory=list)  # claimed metrics not recomputable here
    verified: list[str] = field(default_factory=list)  # claimed metrics CI recomputed within tolerance
    held_reason: str | None = None  # why a trust level "held" entry is not ranked
    evidence: dict = field(default_factory=dict)  # held: flagged, total, rows (reconstruction, public image)
    membership: dict = field(default_factory=dict)  # metric -> GapResult re-scored against the holdout
    gaps: dict = field(default_factory=dict)  # metric -> metrics.membership.Gap (per-reconstruction values, for plots)
    mirrored: dict | None = field(default_factory=dict)  # metric -> GapResult of the mirrored reconstructions (held rule)
    mirrored_later: Callable[[], dict] | None = None  # where rescore deferred them: computes them (leakage.py)
    from_cache: bool = False  # the costly stages' outcome came from the validation cache (nothing re-scored)
    sealed: dict | None = None  # a sealed track's record (checks/sealed.py): the gap scored with the board's key
    extraction: object | None = None  # core.extraction.ExtractionResult re-scored (the count beside the gap)
    recovery: object | None = None  # core.recovery.RecoveryResult computed at re-scoring ("recovers k"; never signed)

    @property
    def failed(self) -> bool:
        return self.trust == "failed"

    @property
    def is_entry(self) -> bool:
        return bool(self.entry_id)

    def to_dict(self) -> dict:
        return {
            "team": self.team, "entry_id": self.entry_id, "path": str(self.path), "trust": self.trust,
            "team_name": self.team_info.name if self.team_info else None,
            "unverified": list(self.unverified), "verified": list(self.verified), "held_reason": self.held_reason,
            "checks": [c.to_dict() for c in self.checks],
        }


@dataclass
class BoardReport:
    entries: list[EntryReport]  # entries first, then team folders / stray files that failed
    outside: list[str] = field(default_factory=list)  # given paths that are not under the root
    removed: list[str] = field(default_factory=list)  # given paths whose entry is gone (deleted)
    # explicit paths (typed on the command line) that hold no entry: a typo must not read "OK"
    empty: list[str] = field(default_factory=list)
    # keys added to / removed from existing teams vs the base branch: maintainer review required
    key_changes: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.outside and not self.empty and not any(e.failed for e in self.entries)


def _trust(ctx: Context, checks: list[Check]) -> TrustLevel:
    if any(c.status == "fail" for c in checks):
        return "failed"
    if not ctx.unit.entry_id:
        return "signed"  # a team folder that checks out (it has no entry to re-score)
    if ctx.replicate_of is not None:  # the setting ranks once, by the entry that ran it first, reproduced or not
        return "held"
    if ctx.reproduced:  # a reproducer's signed record, for this very payload (checks/reproduction.py)
        return "reproduced"  # a held entry waits for exactly this
    if ctx.held_reason:
        return "held"  # near-copies of public images: listed with the evidence, never ranked
    copies_ok = any(c.name == "copies" and c.status == "pass" for c in checks)
    return "re-scored" if ctx.rescored and copies_ok else "signed"


def _cache_key(ctx: Context) -> str | None:
    from reconbench.core.signing import canonical

    if ctx.board.cache is None or ctx.result is None:
        return None
    payload = hashlib.sha256(canonical(ctx.result.payload.model_dump(mode="json"))).hexdigest()
    return checks_key(payload, rescore=ctx.rescore, device=ctx.device, weights_dir=ctx.weights_dir)


def _restore(ctx: Context, record: dict) -> list[Check]:
    """The cached stages' checks, and what they left in the context for the later checks and the trust level."""
    ctx.rescored = bool(record["rescored"])
    ctx.unverified = [str(n) for n in record["unverified"]]
    ctx.exact_copies = {int(k): int(v) for k, v in record["exact_copies"].items()}
    ctx.held_reason = record["held_reason"]
    ctx.evidence = dict(record["evidence"])
    # the re-scored membership gaps: the held rule (hold_extraordinary) and the board read them
    ctx.membership = {n: GapResult.model_validate(g) for n, g in record["membership"].items()}
    ctx.mirrored = None if record["mirrored"] is None else \
        {n: GapResult.model_validate(g) for n, g in record["mirrored"].items()}
    ctx.gaps = {n: _gap_from(g) for n, g in record["gaps"].items()}
    ctx.extraction = None if record.get("extraction") is None else ExtractionResult.model_validate(record["extraction"])
    ctx.recovery = None if record.get("recovery") is None else RecoveryResult.model_validate(record["recovery"])
    return [Check(c["name"], c["status"], c["message"], tuple(c["details"])) for c in record["checks"]]


def _record(ctx: Context, checks: list[Check]) -> dict:
    return {"checks": [c.to_dict() for c in checks], "rescored": ctx.rescored, "unverified": list(ctx.unverified),
            "exact_copies": {str(k): v for k, v in ctx.exact_copies.items()}, "held_reason": ctx.held_reason,
            "evidence": ctx.evidence,
            "membership": {n: g.model_dump(mode="json") for n, g in ctx.membership.items()},
            "mirrored": None if ctx.mirrored is None else {n: g.model_dump(mode="json") for n, g in ctx.mirrored.items()},
            "gaps": {n: _gap_to(g) for n, g in ctx.gaps.items()},
            "extraction": None if ctx.extraction is None else ctx.extraction.model_dump(mode="json"),
            "recovery": None if ctx.recovery is None else ctx.recovery.model_dump(mode="json")}


def _gap_to(gap: Gap) -> dict:
    """A membership.Gap as JSON (its per-reconstruction best values are the entry page's plot)."""
    out = {f.name: getattr(gap, f.name) for f in fields(gap)}
    for name in ("best_target", "best_holdout"):
        out[name] = None if out[name] is None else np.asarray(out[name], dtype=np.float64).tolist()
    return out


def _gap_from(data: dict) -> Gap:
    arrays = {n: None if data[n] is None else np.asarray(data[n], dtype=np.float64) for n in ("best_target", "best_holdout")}
    return Gap(**{**data, **arrays})


def run_checks(unit: Unit, root: Path, board: Board, *, rescore: bool = True, device: str = "cpu",
               weights_dir: Path | None = None, stages: tuple[str, ...] | None = None,
               seal_key: bytes | None = None, write_sealed: bool = False) -> EntryReport:
    """One unit's checks, in order; `stages`: only these (`check` on a run folder: those needing no board)."""
    ctx = Context(unit=unit, root=lexical(root), board=board, rescore=rescore, device=device, weights_dir=weights_dir,
                  seal_key=seal_key, write_sealed=write_sealed)
    ctx.record_lifts = lambda: reproduction.record_accepted(ctx.entry_dir, ctx.result, ctx.unit.team)
    checks: list[Check] = []
    stopped = False
    chosen = STAGES if unit.entry_id else TEAM_STAGES if unit.team else STAGES[:1]
    stages = [(name, stage) for name, stage in chosen if stages is None or name in stages]
    cached_from = len(checks)
    key = record = None
    for name, stage in stages:
        if stopped:
            checks.append(Check(name, "not-run", "skipped: an earlier check failed"))
            continue
        if name == CACHED_STAGES[0]:
            cached_from, key = len(checks), _cache_key(ctx)
            record = board.cache.load_checks(key) if key else None
        if record is not None and name in CACHED_STAGES:
            if name == CACHED_STAGES[-1]:
                checks += _restore(ctx, record)
            continue
        if ctx.result is not None:  # a modality may do a stage its own way (text: its registry, files and scores)
            stage = for_result(ctx.result).validation_stages().get(name, stage)
        try:
            produced = stage(ctx)
        except CheckFailed as exc:
            produced = [Check(name, "fail", exc.message, exc.details)]
        except Exception as exc:  # noqa: BLE001 - a bug must not cost the other entries their report
            produced = [Check(name, "fail", f"internal error in the {name} check ({type(exc).__name__}: "
                                            f"{show(str(exc))[:300]}); please report this")]
        checks += produced
        stopped = any(c.status == "fail" for c in produced)
        if name == CACHED_STAGES[-1] and key and not any(c.status == "fail" for c in checks[cached_from:]):
            board.cache.store_checks(key, _record(ctx, checks[cached_from:]))
    # Messages name files as submissions/<team>/<entry>/<file>, not by this machine's absolute path.
    prefix = str(ctx.root.parent).rstrip(os.sep) + os.sep
    checks = [Check(c.name, c.status, c.message.replace(prefix, ""), tuple(d.replace(prefix, "") for d in c.details))
              for c in checks]
    trust = _trust(ctx, checks)
    claimed = ctx.result.payload.metrics if ctx.result is not None else {}
    verified = [n for n, m in claimed.items() if m.status == "computed" and trust != "failed"
                and any(c.name == f"rescore.{n}" and c.status == "pass" for c in checks)]
    return EntryReport(team=unit.team, entry_id=unit.entry_id, path=unit.path, trust=trust,
                       checks=checks, result=ctx.result, team_info=ctx.team, readme=ctx.readme,
                       unverified=list(ctx.unverified), verified=verified,
                       held_reason=ctx.held_reason if trust == "held" else None,
                       evidence=dict(ctx.evidence) if trust == "held" else {},
                       membership=dict(ctx.membership), gaps=dict(ctx.gaps),
                       mirrored=None if ctx.mirrored is None else dict(ctx.mirrored),
                       mirrored_later=None if ctx.mirrored is not None else partial(deferred_mirrored, ctx),
                       from_cache=record is not None, sealed=ctx.sealed,
                       extraction=ctx.extraction, recovery=ctx.recovery)


def trusted_cache(cache, root: Path) -> ValidationCache | None:
    """The cache if it can hold evidence-free reuse: a secret to authenticate it, and a folder outside
    the checkout being validated (a cache folder inside it is content a pull request can commit)."""
    if not isinstance(cache, ValidationCache) or not cache.usable:
        return None
    if Path(os.path.abspath(cache.root)).is_relative_to(_checkout(root)):
        return None
    return cache


def _checkout(root: Path) -> Path:
    """The git work tree holding `root` (the nearest folder with a .git), else `root` itself."""
    here = Path(os.path.abspath(root))
    for folder in (here, *here.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return here


def validate_board(paths: list[Path] | None = None, root: Path = DEFAULT_ROOT, *, rescore: bool = True,
                   device: str = "cpu", weights_dir: Path | None = None, explicit: list[Path] | None = None,
                   base_root: Path | None = None, cache: bool | ValidationCache = True,
                   progress: Progress | None = None, seal_key: bytes | None = None,
                   write_sealed: bool = False) -> BoardReport:
    """Validate every unit under `root`, or only those the given paths touch (a pull request's diff).
    `progress(done, total, report, seconds)` is called after each unit (the site build's log lines).

    `explicit` paths are validated too, but each must select at least one entry: a path typed by a
    person that holds none (a typo, a deleted entry) is an error, not "OK: 0 entries checked". Paths
    from a pull request's diff go in `paths`, where a deleted entry is normal."""
    given = list(paths or []) + list(explicit or [])
    selection: Selection = all_units(root) if paths is None and explicit is None else select(given, root)
    empty = [show(str(p)) for p in explicit or [] if not any(u.entry_id for u in select([p], root).units)
             and show(str(p)) not in selection.outside]
    if cache is True:
        cache = ValidationCache.default() if enabled_by_env() else None
    board = Board(root, base_root, cache=trusted_cache(cache, root))
    reports = []
    with one_torch_thread():  # many small tensor ops: a second thread only adds synchronisation (threads.py)
        for unit in selection.units:
            t0 = time.perf_counter()
            reports.append(run_checks(unit, root, board, rescore=rescore, device=device, weights_dir=weights_dir,
                                       seal_key=seal_key, write_sealed=write_sealed))
            if progress is not None:
                progress(len(reports), len(selection.units), reports[-1], time.perf_counter() - t0)
    hold_extraordinary(reports, root)  # needs every report: the reference is the track's reproduced entries
    reports.sort(key=lambda r: (not r.is_entry, r.team, r.entry_id, str(r.path)))
    changes = key_changes(root, base_root)  # without a base branch: the git history's (key_history.py)
    return BoardReport(entries=reports, outside=selection.outside, removed=selection.removed, empty=empty,
                       key_changes=changes)


def validate_entries(paths: list[Path] | None = None, root: Path = DEFAULT_ROOT, *, rescore: bool = True,
                     device: str = "cpu", weights_dir: Path | None = None,
                     cache: bool | ValidationCache = True, progress: Progress | None = None,
                     seal_key: bytes | None = None, write_sealed: bool = False) -> list[EntryReport]:
    """One report per entry folder (team folders without entries and stray files are left out:
    see validate_board for those). With `paths`, only the entries those paths touch."""
    board = validate_board(paths, root, rescore=rescore, device=device, weights_dir=weights_dir, cache=cache,
                           progress=progress, seal_key=seal_key, write_sealed=write_sealed)
    return [r for r in board.entries if r.is_entry]
