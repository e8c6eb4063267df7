"""Extraordinary leakage waits for reproduction: the held rule on the membership gap.

Anything derived from the targets (blurred, shifted, flipped, noised, re-encoded images; texts with a
word changed) sits far closer to the targets than to the holdout, and the copy checks only catch what
is near a public item. So: an entry whose gap on a metric lies beyond what any *reproduced* entry of
its track has shown is held (listed, not ranked) until it is reproduced itself.

    held  <=>  for some metric:  low(metric) > max(0, max gap(metric) of the cell's reproduced entries of other teams)
                                  and  p(metric) * k < 0.01  (k: the entry's gaps tested, mirrored ones included)

and the same for the reconstructions mirrored left-right (MSE and SSIM; checks/rescore.py computes
them): a mirrored target is no nearer its target than any image of its class on 8x8 digits, so the
gap of the reconstructions as submitted would not see it.

`low` is the lower end of the entry's 95% interval, so an entry is held only when its gap is beyond
that reference with the interval's confidence (an honest run whose gap merely wobbles above the
reference by noise is not held). The second condition is the board's own verdict (membership.entry_leaks:
Bonferroni over the entry's gaps at 0.01): an entry the board does not call leaking is not extraordinary.
Without it each of an entry's six 95% intervals (four metrics, two mirrored) may miss 0 by chance, and
on a board with no reproduced entry to raise the reference, uniform noise was held (SSIM gap +0.010,
interval from +0.0016, p 0.010; test_site_hostile's noise entries).

The reference cannot be poisoned (issue 33: a forger's reproduced exact copy lifted the same team's
blurred and noised copies to #2 and #3):
- only an entry whose reproduction record lifts it counts: signed by a key the maintainers list,
  for this very payload, verdict reproduced, its numbers accepted by the comparison
  (checks/reproduction.record_accepted); a record file merely present counts for nothing;
- the reference is per cell (track and scenario), not per track;
- an entry's own team never lifts its other entries: the reference of an entry is the largest gap
  of a reproduced entry of its cell by another team.
The gaps are the recomputed ones of reproduced entries validated in the same run, and the signed
gaps of accepted reproduced entries this run did not validate.

Issue 43 (items 5 and 6) adds three things:
- Sealed draws are held like open entries: a sealed result carries no gap of its own, so the rule reads
  the draw's gap from the board's sealed.json record (scored with the key, signed by the draw's record
  signer: report.sealed), never the entry's block. Its reference is the same: the sealed gaps of
  reproduced entries of its cell (the draw and scenario) by other teams.
- On an open track an own attack (not a registered one: its code is the contributor's) can carry the
  public membership in any packing, and re-running the file reproduces it exactly. So reproduction no
  longer lifts it: its extraordinary gap (tier "membership signal") or any extraction ("extracts") is held
  until the board's sealed run of the same code (same attack source sha256) on the track's sealed twin
  has earned at least that tier (core/sealed_runs.confirmed, from run records signed by the draws'
  record signer; `recon-submit seal run`). A track without a sealed twin cannot confirm it: held.
- The reference comes only from registered attacks (the toolkit's code) and own attacks the sealed run
  confirmed at a membership signal or more: a reproduced own attack lifts nobody, so no team's entry can
  raise another team's reference (a second team's noised copy stays held after a first team's copy is
  reproduced). Registered attacks keep their open-track rule unchanged: a reproduced one is not held.
"""

from __future__ import annotations

from pathlib import Path

from reconbench.core.membership import ALPHA

GAP_METRICS = ("mse", "psnr", "ssim", "lpips", "knn_dist", "bleu", "rouge_l", "similarity", "exact_match")


def _track(report) -> str | None:
    return report.result.payload.track if report.result is not None else None


def _cell(payload) -> tuple[str | None, str]:
    """The board's cell: track and scenario (a reproduced entry of another scenario says nothing here)."""
    return getattr(payload, "track", None), getattr(payload, "scenario", "")


Reference = dict[tuple[str | None, str], list[tuple[str, dict[str, float]]]]  # cell -> [(team, metric -> gap)]


def board_reproduced_gaps(root: Path, skip: set[str], confirmations: dict | None = None) -> Reference:
    """cell -> (team, metric -> signed gap) of each entry under `root` whose reproduction record lifts
    it (checks/reproduction.record_accepted: a listed reproducer's signature, this payload, numbers
    accepted); entries in `skip`, validated in this run, are taken from their reports instead. A record
    that is merely present, forged, for another payload or contradicted by its numbers counts for nothing; nor
    does an own attack the board's sealed run did not confirm (lifts_others)."""
    from reconbench.core.envelope import RESULT_FILE, ResultError
    from reconbench.reproduction.record import RECORD_FILE
    from reconbench.submissions.checks.reproduction import record_accepted
    from reconbench.text.results import parse_any_result

    confirmations = sealed_confirmations(root) if confirmations is None else confirmations
    out: Reference = {}
    for record in sorted(Path(root).glob(f"*/*/{RECORD_FILE}")):
        if record.parent.name in skip:
            continue
        try:
            result = parse_any_result(record.parent / RESULT_FILE)
        except (ResultError, OSError):
            continue
        if not lifts_others(result.payload, confirmations):
            continue  # an own attack the sealed run did not confirm lifts nobody (issue 43, item 6)
        if getattr(result.payload, "sealed", None) is not None:
            # a sealed result's gap is the board's signed record, never its own block (checks/sealed.py refuses one)
            gaps = sealed_gaps(_signed_sealed(record.parent, result.payload))
        elif result.payload.membership is not None:
            gaps = result.payload.membership.metrics
        else:
            continue
        if not gaps or not record_accepted(record.parent, result, record.parent.parent.name):
            continue
        out.setdefault(_cell(result.payload), []).append((record.parent.parent.name, _gaps(gaps)))
    return out


def _signed_sealed(entry_dir: Path, payload) -> dict | None:
    """The entry's sealed.json when the draw's pinned record signer signed it (core/sealed_records.py), else None."""
    from reconbench.core.io import strict_json_loads
    from reconbench.core.sealed_records import signature_problem, unsigned
    from reconbench.core.tracks import TrackError, get_track
    from reconbench.submissions.layout import SEALED_FILE

    try:
        record = strict_json_loads((entry_dir / SEALED_FILE).read_text(encoding="utf-8"))
        seal = get_track(payload.track).seal
    except (OSError, UnicodeDecodeError, ValueError, TrackError):
        return None
    if not isinstance(record, dict) or seal is None or signature_problem(record, seal.record_signer) is not None:
        return None
    return unsigned(record)


def sealed_gaps(record: dict | None) -> dict:
    """metric -> GapResult of a sealed draw's record (the board's numbers, scored with the key); {} for none."""
    from pydantic import ValidationError

    from reconbench.core.report import GapResult

    out = {}
    for name, g in ((record or {}).get("membership") or {}).items():
        try:
            out[name] = GapResult.model_validate(g)
        except ValidationError:
            continue
    return out


# ---------------------------------------------------------------- own attacks (issue 43, item 6)


def own_attack(payload) -> bool:
    """The entry runs the contributor's code, not a registered attack's: an attack source, a file.py:Class
    reference, or a name the catalogue does not list (checks/registry.py holds a registered name to its
    toolkit code). A payload always has an attack (schema); an object without one is no entry's."""
    from reconbench.core.attack_source import is_file_attack
    from reconbench.core.catalogue import BY_NAME, TEXT_BY_NAME

    attack = getattr(payload, "attack", None)
    if attack is None:
        return False
    return bool(getattr(attack, "source_sha256", None)) or is_file_attack(str(getattr(attack, "code", ""))) \
        or (attack.name not in BY_NAME and attack.name not in TEXT_BY_NAME)


def sealed_confirmations(root: Path) -> dict[tuple[str, str], str]:
    """(attack source sha256, open track) -> the tier the board's sealed run of that source earned on the
    track's sealed twin (core/sealed_runs.confirmed), from run records that check out: readable, every draw
    a draw of the run's twin, season and open track in the registry, not of a burned season, the model the
    registry pins, every draw of the twin present, and signed by the draws' pinned record signer (as
    sealed.json records are: core/sealed_records.py), and passing every check validate makes of a run record
    (submissions/sealed_run_check.check_runs: its tier is what its own numbers give, within the run limit). A
    record in a pull request that fails any of these confirms nothing."""
    from pydantic import ValidationError

    from reconbench.core.io import strict_json_loads
    from reconbench.core.sealed_runs import RECORD_FILE, RUNS_DIR, SealedRun, confirmed

    from reconbench.submissions.sealed_run_check import check_runs

    # every check validate makes of a record (its path, its tier from its own numbers, the run limit), then this one's
    passed = {c.path for c in check_runs(root) if c.ok}
    runs = []
    for path in sorted((Path(root) / RUNS_DIR).glob(f"*/*/*/{RECORD_FILE}")):
        if str(path) not in passed:
            continue
        try:
            raw = strict_json_loads(path.read_text(encoding="utf-8"))
            run = SealedRun.model_validate(raw)
        except (OSError, UnicodeDecodeError, ValueError, ValidationError):
            continue
        if run_problem(raw, run) is None:
            runs.append(run)
    return confirmed(runs)


def run_problem(raw: dict, run) -> str | None:
    """Why a sealed run record confirms nothing, or None (sealed_confirmations)."""
    from reconbench.core.seasons import burned
    from reconbench.core.sealed_records import signature_problem
    from reconbench.core.tracks import TrackError, get_track

    if burned(run.season):
        return f"season {run.season} is burned"
    seen = set()
    for outcome in run.draws:
        try:
            seal = get_track(outcome.track).seal
            track = get_track(outcome.track)
        except TrackError:
            return f"draw '{outcome.track}' is not in the registry"
        if seal is None or (seal.group, seal.season, seal.open_twin) != (run.twin, run.season, run.open_twin):
            return f"'{outcome.track}' is not a draw of {run.twin} ({run.season}, twin of {run.open_twin})"
        if outcome.model_sha256 != track.target_model_sha256:
            return f"draw '{outcome.track}': another model than the registry pins"
        problem = signature_problem(raw, seal.record_signer)
        if problem:
            return f"draw '{outcome.track}': {problem}"
        seen.add(seal.draw)
    if not run.draws or seen != set(range(seal.draws)):
        return "not every draw of the twin was run"
    return None


def lifts_others(payload, confirmations: dict[tuple[str, str], str]) -> bool:
    """Whether a reproduced entry may raise the reference of other teams' entries: a registered attack's, or an
    own attack the board's sealed run confirmed at a membership signal or more."""
    if not own_attack(payload):
        return True
    return _rank(confirmations.get((payload.attack.source_sha256 or "", getattr(payload, "track", ""))) or "") >= _signal_rank()


def _rank(word: str) -> int:
    from reconbench.core.verdict import BY_WORD

    t = BY_WORD.get(word)
    return t.rank if t is not None else -1


def _signal_rank() -> int:
    from reconbench.core.verdict import SIGNAL

    return SIGNAL.rank


def _gaps(gaps: dict) -> dict[str, float]:
    return {name: g.gap for name, g in gaps.items() if name in GAP_METRICS and g.status == "computed"}


def report_gaps(report) -> dict:
    """metric -> GapResult the held rule reads for a validated report: a sealed draw's from the board's record
    (report.sealed, written or checked by the validator with the draw's signer), never the entry's own block."""
    payload = report.result.payload if getattr(report, "result", None) is not None else None
    if getattr(payload, "sealed", None) is not None:
        return sealed_gaps(getattr(report, "sealed", None))
    return dict(getattr(report, "membership", None) or {})


def reproduced_gaps(reports, root: Path, confirmations: dict | None = None) -> Reference:
    confirmations = sealed_confirmations(root) if confirmations is None else confirmations
    validated = {r.entry_id for r in reports if r.is_entry}
    cells = board_reproduced_gaps(root, validated, confirmations)
    for r in reports:
        if r.is_entry and r.trust == "reproduced" and lifts_others(r.result.payload, confirmations):
            gaps = report_gaps(r)
            if gaps:
                cells.setdefault(_cell(r.result.payload), []).append((getattr(r, "team", ""), _gaps(gaps)))
    return cells


def reference_for(report, cells: Reference) -> dict[str, float]:
    """metric -> the largest gap of a reproduced entry of the report's cell by ANOTHER team: a team's
    own reproduced entry never lifts its other entries (a reproduced twin would otherwise clear the
    way for its blurred and noised copies)."""
    out: dict[str, float] = {}
    for team, gaps in cells.get(_cell(report.result.payload), []):
        if team == getattr(report, "team", ""):
            continue
        for name, gap in gaps.items():
            out[name] = max(out.get(name, gap), gap)
    return out


def tested(membership: dict) -> int:
    """How many of these gaps carry a test (interval and p)."""
    return sum(1 for name in GAP_METRICS if (g := membership.get(name)) is not None and g.status == "computed"
               and g.p is not None and g.low is not None)


def beyond(membership: dict, reference: dict[str, float], tests: int | None = None) -> list[tuple[str, object, float]]:
    """(metric, its GapResult, the reference) for each metric whose interval lies above the reference and
    whose p stays below ALPHA after Bonferroni over `tests` gaps (default: those of `membership`)."""
    tests = max(1, tested(membership) if tests is None else tests)
    out = []
    for name in GAP_METRICS:
        g = membership.get(name)
        if g is None or g.status != "computed" or g.low is None or g.p is None:
            continue
        ref = max(0.0, reference.get(name, 0.0))
        if g.low > ref and g.p * tests < ALPHA:
            out.append((name, g, ref))
    return out


def hold_extraordinary(reports, root: Path) -> None:
    """Set trust "held" (with the reason) on entries whose gap is beyond their cell's reproduced ones (open and
    sealed draws alike), and on an own attack's leakage on an open track the board's sealed run has not
    confirmed (module docstring)."""
    confirmations = sealed_confirmations(root)
    cells = reproduced_gaps(reports, root, confirmations)
    for r in reports:
        if not r.is_entry or r.result is None:
            continue
        payload = r.result.payload
        sealed_draw = getattr(payload, "sealed", None) is not None
        own_open = own_attack(payload) and not sealed_draw
        if r.trust not in (("re-scored", "signed", "reproduced") if own_open else ("re-scored", "signed")):
            continue
        over = _beyond_reference(r, reference_for(r, cells), sealed_draw)
        if own_open:
            _hold_own(r, payload, over, confirmations)
            continue
        if over:
            r.trust = "held"
            r.held_reason = (f"extraordinary leakage: {_over_text(over)}, the largest gap any other team's reproduced "
                             f"entry of track '{_track(r)}' ({_cell(payload)[1] or 'its scenario'}) has shown (0 where "
                             "none is larger); not ranked until reproduced")


def _beyond_reference(r, reference: dict[str, float], sealed_draw: bool) -> list:
    membership = report_gaps(r)
    if not membership:
        return []
    mirrored = {} if sealed_draw else getattr(r, "mirrored", {})
    if mirrored is None:  # deferred by rescore (its own record looked accepted, yet it was not lifted)
        mirrored = r.mirrored = r.mirrored_later()
    k = tested(membership) + tested(mirrored)
    over = [(name, g, ref, "", k) for name, g, ref in beyond(membership, reference, k)]
    return over + [(name, g, ref, " (reconstructions mirrored)", k) for name, g, ref in beyond(mirrored, reference, k)]


def _over_text(over: list) -> str:
    return "; ".join(f"{name} gap{how} {g.gap:+.4g} (95% interval from {g.low:+.4g}, p {g.p:.2g} of {k} tested) beyond "
                     f"{ref:+.4g}" for name, g, ref, how, k in over)


def _hold_own(r, payload, over: list, confirmations: dict[tuple[str, str], str]) -> None:
    """An own attack on an open track: its extraction, or its extraordinary gap, waits for the sealed twin."""
    from reconbench.core.verdict import EXTRACTS, SIGNAL

    extraction = getattr(r, "extraction", None)
    claims = []
    if extraction is not None and bool(getattr(extraction, "extracts", False)):
        claims.append((EXTRACTS, f"extracts {int(extraction.members)} members (extraction count)"))
    if over:
        claims.append((SIGNAL, f"extraordinary leakage: {_over_text(over)}, the largest gap any registered attack's "
                               "or sealed-confirmed entry of another team has shown in this cell (0 where none is larger)"))
    if not claims:
        return
    claim = max(claims, key=lambda c: c[0].rank)[0]
    source = payload.attack.source_sha256
    earned = confirmations.get((source, _track(r))) if source else None
    if earned is not None and _rank(earned) >= claim.rank:
        return  # the board's sealed run of this very code earned at least this tier: the hold lifts
    if not source:
        why = "it ships no attack source, so the board cannot run it on the sealed twin"
    elif earned is None:
        why = (f"no sealed run of this code (attack source {source[:12]}…) on the sealed twin of '{_track(r)}' has been "
               "recorded by the board (`recon-submit seal run`; a track without a sealed twin cannot confirm it)")
    else:
        why = f"the board's sealed run of this code earned \"{earned}\", less than \"{claim.word}\""
    r.trust = "held"
    r.held_reason = (f"own attack on an open track, where membership is public: {'; '.join(t for _, t in claims)}. "
                     f"Held until the board's sealed run of the same code agrees: {why}. Reproducing it on the open "
                     "track does not lift this: a re-run proves that the code makes these bytes, not where its "
                     "knowledge came from")
