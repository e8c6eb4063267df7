"""Check 6, re-score: recompute every metric from the submitted reconstructions and compare.

The target set (the update set in dynamic scenarios) is loaded here, on the evaluator's side, and
`reconbench.image.metrics.score` runs exactly as `evaluate` ran it. One check per metric:
  pass     claimed and recomputed agree within the metric's tolerance (or nothing was claimed);
  fail     they differ (or one side has a value and the other has none);
  not-run  it cannot be recomputed here (e.g. LPIPS/FID backbone weights are not on this
           machine): a claimed value stays unverified and the entry's trust stays "signed".

Tolerances: re-scoring on the same device reproduces the numbers bit for bit; the slack only
absorbs float32 reduction order between devices (a GPU submission re-scored on a CPU runner).
"""

from __future__ import annotations

from dataclasses import dataclass

from reconbench.core.labels import labels_wrong
from reconbench.core.membership import PERMUTATIONS, SEED
from reconbench.image.metrics import MetricResult, score
from reconbench.image.metrics.weights import NEEDS_WEIGHTS
from reconbench.submissions.checks import recovery
from reconbench.submissions.checks.base import Check, Context
from reconbench.core.hub import HubError
from reconbench.core.io import FileFormatError
from reconbench.core.tracks import TrackError
from reconbench.image.track_files import load_splits, track_holdout


@dataclass(frozen=True)
class Tolerance:
    abs: float = 0.0
    rel: float = 0.0
    why: str = ""
    items: int = 0  # for shares of |D_rec|: this many reconstructions may flip (abs = items / |D_rec|)

    def for_count(self, n_rec: int) -> "Tolerance":
        return Tolerance(abs=self.abs + self.items / max(n_rec, 1) + 1e-12, rel=self.rel, why=self.why) if self.items else self

    def ok(self, claimed: float, actual: float) -> bool:
        return abs(claimed - actual) <= self.abs + self.rel * abs(actual)

    def __str__(self) -> str:
        return f"{self.rel:g} relative" if self.rel else f"{self.abs:g} absolute"


TOLERANCES = {
    # S-Dis values are means over |D_rec| of per-image distances; float32 reordering moves them by ~1e-8.
    "mse": Tolerance(abs=1e-6, why="pixels in [0,1]; typical values 1e-2..1e-1"),
    "psnr": Tolerance(abs=1e-4, why="dB"),
    "ssim": Tolerance(abs=1e-4, why="in [-1, 1]"),
    "lpips": Tolerance(abs=1e-4, why="AlexNet features in float32"),
    # FID takes a matrix square root of 2048x2048 covariances: relative, not absolute, agreement.
    "fid": Tolerance(rel=1e-3, why="sqrtm of Inception covariances"),
    # PRDC counts samples inside k-NN balls of Inception features: a borderline sample may flip
    # between devices; 0.01 is 5 samples in 500.
    "prdc_precision": Tolerance(abs=0.01, why="share of samples in k-NN balls"),
    "prdc_recall": Tolerance(abs=0.01, why="share of samples in k-NN balls"),
    "prdc_density": Tolerance(abs=0.01, why="mean count in k-NN balls / k"),
    "prdc_coverage": Tolerance(abs=0.01, why="share of samples in k-NN balls"),
    # Shares of |D_rec| labelled correctly by the evaluation model: identical inputs give identical
    # labels; a near-tie of two logits may flip one reconstruction on another device.
    "acc_top1": Tolerance(items=1, why="one reconstruction's label"),
    "acc_top5": Tolerance(items=1, why="one reconstruction's label"),
    # squared feature distances in float32, accumulated in float64
    "knn_dist": Tolerance(rel=1e-4, why="float32 features of the evaluation model"),
    # Text metrics (reconbench.text.metrics): BLEU, ROUGE-L and exact match count strings, so any
    # machine recomputes them exactly; similarity averages float32 MiniLM cosines.
    "bleu": Tolerance(abs=1e-9, why="n-gram counts: exact"),
    "rouge_l": Tolerance(abs=1e-9, why="longest common subsequences: exact"),
    "exact_match": Tolerance(abs=1e-9, why="string equality: exact"),
    "similarity": Tolerance(abs=1e-4, why="float32 MiniLM embeddings"),
}


def coverage_tolerance(n_targets: int) -> float:
    """Coverage alpha is a count / |D_tar|. Identical inputs give identical counts; a near-tie between
    two targets may resolve differently on another device, which moves alpha by exactly one target."""
    return 1.0 / n_targets + 1e-9


def _fmt(result: MetricResult | None) -> str:
    if result is None:
        return "not claimed"
    if result.status != "computed":
        return "not computed"
    return f"{result.value:.6g}" + (f" (coverage {100 * result.coverage:.2f}%)" if result.coverage is not None else "")


def _labels_text(wrong) -> str:
    if wrong is None:
        return "every label has its targets"
    return wrong.text() + ("" if wrong.worst is None else f" (scored {wrong.worst:g})")


def compare(name: str, claimed: MetricResult | None, actual: MetricResult, n_targets: int, n_rec: int = 0,
            always: bool = False) -> Check:
    """always: evaluate computes this metric for every result (it needs no downloaded weights), so a
    result that leaves it out, or says it was not computed, hides a number the board would show."""
    check_name = f"rescore.{name}"
    claimed_on = claimed is not None and claimed.status == "computed"
    if actual.status != "computed":
        why = actual.note or "not computable here"
        if claimed_on:
            return Check(check_name, "not-run", f"claimed {_fmt(claimed)}; not re-scored here ({why}): unverified")
        return Check(check_name, "not-run", f"not claimed and not computable here ({why})")
    if not claimed_on and always:
        said = "left out" if claimed is None else f"claimed as {claimed.status}"
        return Check(check_name, "fail", f"{said}, but {name} needs no downloaded weights: evaluate computes it for "
                                         f"every result; re-scored here: {_fmt(actual)}")
    if not claimed_on:
        return Check(check_name, "pass", f"not claimed by the entry; re-scored here: {_fmt(actual)}")
    tol = TOLERANCES.get(name, Tolerance(abs=1e-6)).for_count(n_rec)
    problems = []
    if not tol.ok(claimed.value, actual.value):
        problems.append(f"value {claimed.value:.8g} claimed, {actual.value:.8g} recomputed "
                        f"(|diff| {abs(claimed.value - actual.value):.3g} > tolerance {tol})")
    if (claimed.coverage is None) != (actual.coverage is None):
        problems.append(f"coverage {claimed.coverage} claimed, {actual.coverage} recomputed")
    elif claimed.coverage is not None and abs(claimed.coverage - actual.coverage) > coverage_tolerance(n_targets):
        problems.append(f"coverage {claimed.coverage:.6f} claimed, {actual.coverage:.6f} recomputed "
                        f"(tolerance one target: {coverage_tolerance(n_targets):.2g})")
    said, found = labels_wrong(claimed.note), labels_wrong(actual.note)
    if said != found:  # the board shows quality without the wrong labels' worst values: from this count
        problems.append(f"note claims {_labels_text(said)}, recomputed: {_labels_text(found)}")
    if problems:
        return Check(check_name, "fail", "; ".join(problems))
    return Check(check_name, "pass", f"{_fmt(actual)} as claimed (tolerance {tol})")


def check(ctx: Context) -> list[Check]:
    if not ctx.rescore:
        return [Check("rescore", "not-run", "re-scoring switched off (--no-rescore): metrics unverified")]
    try:
        splits = load_splits(ctx.track)
    except (TrackError, HubError, FileFormatError, ImportError) as exc:
        return [Check("rescore", "fail", f"cannot load the target set to re-score: {exc}")]
    target = splits.update if ctx.scenario.training == "dynamic" else splits.target
    try:
        holdout = track_holdout(ctx.track, ctx.scenario.training == "dynamic")
    except (TrackError, HubError, FileFormatError) as exc:
        return [Check("rescore", "fail", f"cannot load the holdout to re-score the membership gap: {exc}")]
    report = score(ctx.images, ctx.labels, target.images, target.labels, device=ctx.device, weights_dir=ctx.weights_dir,
                   track=ctx.track, holdout_images=None if holdout is None else holdout.images,
                   holdout_labels=None if holdout is None else holdout.labels)
    claimed = ctx.result.payload.metrics
    checks = [compare(name, claimed.get(name), actual, len(target), len(ctx.labels), always=name not in NEEDS_WEIGHTS)
              for name, actual in report.metrics.items()]
    checks = retired_classifier(ctx, claimed, checks, target)
    if holdout is not None:
        checks += membership_checks(ctx, holdout.sha256, report.membership, len(ctx.labels), report.gaps)
        checks += extraction_check(ctx, report.extraction)
        checks += recovery.check(ctx, report, target, holdout)
        ctx.gaps = dict(report.gaps)
        # the mirrored gaps serve only the held rule, which never looks at a reproduced entry: an entry
        # whose own reproduction record is accepted gets them later, only if it ends up not lifted
        # (leakage.hold_extraordinary calls deferred_mirrored); the rule itself is unchanged
        lifted = ctx.record_lifts is not None and ctx.record_lifts()
        ctx.mirrored = None if lifted else mirrored(ctx, target, holdout)
    for name in sorted(set(claimed) - set(report.metrics)):
        checks.append(Check(f"rescore.{name}", "fail", f"claimed {_fmt(claimed[name])}, but this toolkit has no such metric"))
    ctx.unverified = [n for n, actual in report.metrics.items()
                      if actual.status != "computed" and n in claimed and claimed[n].status == "computed"]
    ctx.rescored = all(c.status != "fail" for c in checks) and not ctx.unverified
    return checks


CLASSIFIER_METRICS = ("acc_top1", "acc_top5", "knn_dist")


def retired_classifier(ctx: Context, claimed: dict, checks: list[Check], target) -> list[Check]:
    """An entry scored before the track's evaluation classifier was replaced (digits: retrained without
    the holdout, issue 21) claims Acc@1/Acc@5/KNN of the earlier one: when the current classifier
    disagrees, each retired one (registry retired_evaluation_models) is tried, and claims that match one
    pass with a note naming it. Gaps are always measured with the current classifier."""
    failed = [c for c in checks if c.status == "fail" and c.name.removeprefix("rescore.") in CLASSIFIER_METRICS]
    retired = getattr(ctx.track, "retired_evaluation_models", None) or []
    if not failed or not retired:
        return checks
    from reconbench.image.metrics.classifier import classifier_metrics, track_evaluator

    names = [n for n in CLASSIFIER_METRICS if claimed.get(n) is not None and claimed[n].status == "computed"]
    for spec in retired:
        evaluator, _ = track_evaluator(ctx.track, spec)
        if evaluator is None:
            continue
        got = classifier_metrics(evaluator, ctx.images, ctx.labels, target.images, target.labels, ctx.device)
        again = {n: compare(n, claimed.get(n), got[n], len(target), len(ctx.labels)) for n in names}
        if all(c.status == "pass" for c in again.values()):
            note = (f"; scored with the track's retired evaluation classifier {spec.sha256[:12]}... ({spec.trained_on}): "
                    f"the current one, {ctx.track.evaluation_model.sha256[:12]}..., scores entries made since")
            return [Check(c.name, "pass", again[c.name.removeprefix("rescore.")].message + note)
                    if c.name.removeprefix("rescore.") in again else c for c in checks]
    return checks


# The gap's numbers are differences and quantiles of the metric's own values: the metric's tolerance.
# p counts permutations (2,000, fixed seed) whose gap reaches the observed one: identical scores give
# identical counts; float reordering between devices may move a permuted gap across the observed one.
P_TOLERANCE = Tolerance(abs=0.002, rel=0.01, why="a few of 2,000 permutations")


def membership_checks(ctx: Context, holdout_sha256: str, actual: dict, n_rec: int, raw: dict | None = None) -> list[Check]:
    """rescore.membership.<metric>: each claimed gap against the recomputed one. An entry written
    before the gap existed claims none: it is computed here and shown (re-scored, not refused)."""
    ctx.membership = dict(actual)
    claimed = ctx.result.payload.membership
    if claimed is None:
        shown = "; ".join(f"{n} {g.format()}" for n, g in actual.items() if g.status == "computed")
        return [Check("rescore.membership", "pass", f"no gap claimed (a result written before the membership gap "
                                                    f"existed); re-scored here against the holdout: {shown}")]
    if claimed.holdout_sha256 != holdout_sha256:
        return [Check("rescore.membership", "fail", f"the gap was measured against holdout {claimed.holdout_sha256[:12]}..., "
                                                    f"the registry pins {holdout_sha256[:12]}...")]
    if (claimed.permutations, claimed.seed) != (PERMUTATIONS, SEED):
        # the p's are re-scored at the protocol's test: a claim of another one would be shown beside them
        return [Check("rescore.membership", "fail", f"the gap's test claims {claimed.permutations} permutations from seed "
                                                    f"{claimed.seed}; the board's test (re-scored here) draws {PERMUTATIONS} "
                                                    f"from seed {SEED}")]
    checks = []
    for name, got in actual.items():
        checks.append(compare_gap(name, claimed.metrics.get(name), got, n_rec, (raw or {}).get(name)))
    for name in sorted(set(claimed.metrics) - set(actual)):
        checks.append(Check(f"rescore.membership.{name}", "fail", f"a gap is claimed for '{name}', which this toolkit "
                                                                  "does not compute"))
    return checks


def mirrored(ctx: Context, target, holdout) -> dict:
    """The held rule's second look (submissions/leakage.py): the gaps of the reconstructions mirrored."""
    import torch

    from reconbench.image.metrics.leakage import mirrored_gaps

    rec, hold, tar = (torch.from_numpy(x) for x in (ctx.images, holdout.images, target.images))
    return mirrored_gaps(rec, ctx.labels, tar, target.labels, hold, holdout.labels, shape=tuple(ctx.images.shape[1:]),
                         device=ctx.device)


def deferred_mirrored(ctx: Context) -> dict:
    """mirrored() for an entry whose rescore deferred it (see check)."""
    dynamic = ctx.scenario.training == "dynamic"
    splits = load_splits(ctx.track)
    return mirrored(ctx, splits.update if dynamic else splits.target, track_holdout(ctx.track, dynamic))


def compare_gap(name: str, claimed, actual, n_rec: int, raw=None) -> Check:
    """raw: the recomputed membership.Gap; its p_initial (the first B permutations, the same stream) is what
    a result signed before p was refined near the verdict's level claims, and is accepted as well."""
    check_name = f"rescore.membership.{name}"
    if actual.status != "computed":
        if claimed is not None and claimed.status == "computed":
            return Check(check_name, "not-run", f"gap claimed ({claimed.format()}); not re-scored here "
                                                f"({actual.note or actual.status}): unverified")
        return Check(check_name, "pass" if actual.status == "not_applicable" else "not-run", actual.note or actual.status)
    if claimed is None or claimed.status != "computed":
        return Check(check_name, "fail", f"gap not claimed, but computable: {actual.format()}")
    tol = TOLERANCES.get(name, Tolerance(abs=1e-6)).for_count(n_rec)
    # A gap is a difference of two means: a relative error of the means is an absolute error of the
    # gap, scaled by the means, not by the (small) gap (knn_dist: means ~10, a class's gap ~1e-3).
    scale = abs(actual.vs_target or 0.0) + abs(actual.vs_holdout or 0.0)
    diff_tol = Tolerance(abs=tol.abs + tol.rel * scale, why=tol.why) if tol.rel else tol
    problems = []
    for field in ("vs_target", "vs_holdout", "gap", "low", "high", "p"):
        c, a = getattr(claimed, field), getattr(actual, field)
        field_tol = P_TOLERANCE if field == "p" else tol if field.startswith("vs_") else diff_tol
        if (c is None) != (a is None):
            problems.append(f"{field} {c} claimed, {a} recomputed")
        elif c is not None and not field_tol.ok(c, a) and not (
                field == "p" and getattr(raw, "p_initial", None) is not None and field_tol.ok(c, raw.p_initial)):
            problems.append(f"{field} {c:.8g} claimed, {a:.8g} recomputed")
    for key in sorted(set(claimed.per_class or {}) | set(actual.per_class or {})):
        c, a = (claimed.per_class or {}).get(key), (actual.per_class or {}).get(key)
        if c is None or a is None or not diff_tol.ok(c, a):
            problems.append(f"class {key}: gap {c} claimed, {a} recomputed")
    if problems:
        return Check(check_name, "fail", "; ".join(problems[:5]) + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""))
    return Check(check_name, "pass", f"gap {actual.format()}, p {actual.p:.3g} as claimed")


def extraction_check(ctx: Context, actual) -> list[Check]:
    """rescore.extraction: the count (core/extraction.py) recomputed. Its distances are exact (float64
    from integer grey levels), so k and j must match exactly and p within P_TOLERANCE; an entry
    written before the count existed claims none, and one signed at an earlier calibration of the
    track's threshold (one the registry lists in retired_extraction) claims other constants: both are
    computed here and shown, never trusted. A count at constants the registry never held fails."""
    ctx.extraction = actual
    if actual is None:
        return [Check("rescore.extraction", "not-run", "the track has no extraction calibration in the registry")]
    claimed = ctx.result.payload.membership.extraction if ctx.result.payload.membership is not None else None
    if claimed is None:
        return [Check("rescore.extraction", "pass", f"no count claimed (a result written before it existed); "
                                                    f"re-scored here: {actual.sentence()}")]
    moved = [f"{f} {getattr(claimed, f):.8g}" for f in ("threshold", "pair_rate") if getattr(claimed, f) != getattr(actual, f)]
    if moved:
        # Signed at an earlier calibration that the registry records (retired_extraction: digits' moved
        # once): re-scored at the current one and shown so. Any other constants are refused (issue 43): a
        # count at a threshold of the entry's choosing is a claim the board never made.
        retired = [(r.threshold, r.pair_rate) for r in getattr(ctx.track, "retired_extraction", [])]
        if (claimed.threshold, claimed.pair_rate) not in retired:
            return [Check("rescore.extraction", "fail", f"count claimed at a calibration the registry never held for "
                                                        f"track '{ctx.track.id}' ({', '.join(moved)}; the registry's: "
                                                        f"threshold {actual.threshold:.8g}, pair_rate {actual.pair_rate:.8g})")]
        return [Check("rescore.extraction", "pass", f"count claimed at an earlier calibration of the track "
                                                    f"({', '.join(moved)}); re-scored at the registry's: {actual.sentence()}")]
    problems = [f"{f} {getattr(claimed, f)} claimed, {getattr(actual, f)} recomputed"
                for f in ("members", "n_members", "holdout", "n_holdout", "extracted") if getattr(claimed, f) != getattr(actual, f)]
    problems += [f"{f} {getattr(claimed, f):.6g} claimed, {getattr(actual, f):.6g} recomputed" for f in ("p", "p_relabel")
                 if not P_TOLERANCE.ok(getattr(claimed, f), getattr(actual, f))]
    if problems:
        return [Check("rescore.extraction", "fail", "; ".join(problems[:5]))]
    return [Check("rescore.extraction", "pass", f"{actual.sentence()}, as claimed")]
