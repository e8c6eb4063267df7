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
gaps of accepted reproduced entries this run did not validate. A reproduced entry is never held:
reproduction is what lifts it.
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


def board_reproduced_gaps(root: Path, skip: set[str]) -> Reference:
    """cell -> (team, metric -> signed gap) of each entry under `root` whose reproduction record lifts
    it (checks/reproduction.record_accepted: a listed reproducer's signature, this payload, numbers
    accepted); entries in `skip`, validated in this run, are taken from their reports instead. A record
    that is merely present, forged, for another payload or contradicted by its numbers counts for nothing."""
    from reconbench.core.envelope import RESULT_FILE, ResultError
    from reconbench.reproduction.record import RECORD_FILE
    from reconbench.submissions.checks.reproduction import record_accepted
    from reconbench.text.results import parse_any_result

    out: Reference = {}
    for record in sorted(Path(root).glob(f"*/*/{RECORD_FILE}")):
        if record.parent.name in skip:
            continue
        try:
            result = parse_any_result(record.parent / RESULT_FILE)
        except (ResultError, OSError):
            continue
        if getattr(result.payload, "sealed", None) is not None:
            continue  # a sealed result's gap is the board's, never its own block (checks/sealed.py refuses one)
        if result.payload.membership is None or not record_accepted(record.parent, result, record.parent.parent.name):
            continue
        out.setdefault(_cell(result.payload), []).append((record.parent.parent.name, _gaps(result.payload.membership.metrics)))
    return out


def _gaps(gaps: dict) -> dict[str, float]:
    return {name: g.gap for name, g in gaps.items() if name in GAP_METRICS and g.status == "computed"}


def reproduced_gaps(reports, root: Path) -> Reference:
    validated = {r.entry_id for r in reports if r.is_entry}
    cells = board_reproduced_gaps(root, validated)
    for r in reports:
        if r.is_entry and r.trust == "reproduced" and r.membership:
            cells.setdefault(_cell(r.result.payload), []).append((getattr(r, "team", ""), _gaps(r.membership)))
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
    """Set trust "held" (with the reason) on ranked entries whose gap is beyond their track's reproduced ones."""
    cells = reproduced_gaps(reports, root)
    for r in reports:
        if not r.is_entry or r.trust not in ("re-scored", "signed") or not r.membership:
            continue
        reference = reference_for(r, cells)
        mirrored = getattr(r, "mirrored", {})
        if mirrored is None:  # deferred by rescore (its own record looked accepted, yet it was not lifted)
            mirrored = r.mirrored = r.mirrored_later()
        k = tested(r.membership) + tested(mirrored)
        over = [(name, g, ref, "") for name, g, ref in beyond(r.membership, reference, k)]
        over += [(name, g, ref, " (reconstructions mirrored)") for name, g, ref in beyond(mirrored, reference, k)]
        if not over:
            continue
        parts = [f"{name} gap{how} {g.gap:+.4g} (95% interval from {g.low:+.4g}, p {g.p:.2g} of {k} tested) beyond {ref:+.4g}"
                 for name, g, ref, how in over]
        r.trust = "held"
        r.held_reason = (f"extraordinary leakage: {'; '.join(parts)}, the largest gap any other team's reproduced entry "
                         f"of track '{_track(r)}' ({_cell(r.result.payload)[1] or 'its scenario'}) has shown (0 where "
                         "none is larger); not ranked until reproduced")
