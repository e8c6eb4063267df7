"""Extraordinary leakage waits for reproduction: the held rule on the membership gap.

Anything derived from the targets (blurred, shifted, flipped, noised, re-encoded images; texts with a
word changed) sits far closer to the targets than to the holdout, and the copy checks only catch what
is near a public item. So: an entry whose gap on a metric lies beyond what any *reproduced* entry of
its track has shown is held (listed, not ranked) until it is reproduced itself.

    held  <=>  for some metric:  low(metric) > max(0, max gap(metric) of the track's reproduced entries)
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
interval from +0.0016, p 0.010; test_site_hostile's noise entries). The
reference is per metric and per track: the recomputed gaps of the reproduced entries validated in
the same run, and the signed (CI-verified when they were merged) gaps of reproduced entries on the
board that this run did not validate. A reproduced entry is never held: reproduction is what lifts it.
"""

from __future__ import annotations

from pathlib import Path

from reconbench.core.membership import ALPHA

GAP_METRICS = ("mse", "psnr", "ssim", "lpips", "knn_dist", "bleu", "rouge_l", "similarity", "exact_match")


def _track(report) -> str | None:
    return report.result.payload.track if report.result is not None else None


def board_reproduced_gaps(root: Path, skip: set[str]) -> dict[str, dict[str, float]]:
    """track -> metric -> largest signed gap among entries under `root` that carry a reproduction
    record (entries in `skip`, validated in this run, are taken from their reports instead)."""
    from reconbench.reproduction.record import RECORD_FILE
    from reconbench.core.envelope import RESULT_FILE, ResultError
    from reconbench.text.results import parse_any_result

    out: dict[str, dict[str, float]] = {}
    for record in sorted(Path(root).glob(f"*/*/{RECORD_FILE}")):
        if record.parent.name in skip:
            continue
        try:
            payload = parse_any_result(record.parent / RESULT_FILE).payload
        except (ResultError, OSError):
            continue
        if payload.membership is None:
            continue
        _merge(out.setdefault(payload.track, {}), payload.membership.metrics)
    return out


def _merge(into: dict[str, float], gaps: dict) -> None:
    for name, g in gaps.items():
        if name in GAP_METRICS and g.status == "computed":
            into[name] = max(into.get(name, g.gap), g.gap)


def reproduced_gaps(reports, root: Path) -> dict[str, dict[str, float]]:
    validated = {r.entry_id for r in reports if r.is_entry}
    maxima = board_reproduced_gaps(root, validated)
    for r in reports:
        if r.is_entry and r.trust == "reproduced" and r.membership:
            _merge(maxima.setdefault(_track(r), {}), r.membership)
    return maxima


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
    maxima = reproduced_gaps(reports, root)
    for r in reports:
        if not r.is_entry or r.trust not in ("re-scored", "signed") or not r.membership:
            continue
        reference = maxima.get(_track(r), {})
        mirrored = getattr(r, "mirrored", {}) or {}
        k = tested(r.membership) + tested(mirrored)
        over = [(name, g, ref, "") for name, g, ref in beyond(r.membership, reference, k)]
        over += [(name, g, ref, " (reconstructions mirrored)") for name, g, ref in beyond(mirrored, reference, k)]
        if not over:
            continue
        parts = [f"{name} gap{how} {g.gap:+.4g} (95% interval from {g.low:+.4g}, p {g.p:.2g} of {k} tested) beyond {ref:+.4g}"
                 for name, g, ref, how in over]
        r.trust = "held"
        r.held_reason = (f"extraordinary leakage: {'; '.join(parts)}, the largest gap any reproduced entry of track "
                         f"'{_track(r)}' has shown (0 where none is larger); not ranked until reproduced")
