"""One verdict per board run of a sealed twin (core/sealed_runs.SealedRun), from the numbers its record holds.

The run's tier is computed from the record's own (rounded) per-draw numbers, so anyone holding the record
recomputes it without the key (validation does, `submissions/sealed_run_check.py`), and the twin page shows
the same: per metric the mean gap across the K draws with its 95% interval and Fisher's combined p
(core/draws.across_draws), the extraction count pooled over the draws (core/draws.count_across_draws), and
the tier word of core/verdict. "Extracts" needs the pooled count's p below ALPHA, and the pooled membership
relabelling p as well wherever core/draws computes one (issue 43, item 4: members against the pool's other
half, not only against natural data).

A run gives a verdict only when every draw of the twin was scored: a held or failed draw gives none.

The record's numbers are rounded (`rounded`): a number the board publishes is a channel from the attack's
process, which sees the draw's model, to the public before the reveal; DIGITS significant digits carry about
10 bits each, and the run limit bounds how many runs a team has (docs/sealed.md, "Threat model").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from reconbench.core.draws import AcrossDraws, CountAcrossDraws, across_draws, count_across_draws, verdict
from reconbench.core.membership import ALPHA
from reconbench.core.verdict import EXTRACTS, Tier, label, tier

DIGITS = 3
METRICS = ("ssim", "psnr", "mse")
POOLED = ("members", "n_members", "holdout", "n_holdout", "expected_members", "expected_holdout")


GAP_FIELDS = ("status", "gap", "low", "high", "p")  # of a draw's GapResult: what the verdict and the page read


def published(numbers: dict) -> dict:
    """What a run record publishes of a draw's sealed numbers (image/sealed_scores.sealed_numbers): per metric the
    gap with its interval and p (not the per-class gaps, nor the two sides), the extraction count without its
    sentence; every float rounded. The fewer numbers, the narrower the channel out of the attack's process."""
    membership = {m: {k: g.get(k) for k in GAP_FIELDS} for m, g in (numbers.get("membership") or {}).items()}
    extraction = numbers.get("extraction")
    extraction = None if extraction is None else {k: v for k, v in extraction.items() if k != "text"}
    return rounded({"membership": membership, "extraction": extraction})


def rounded(value):
    """Every float in `value` (dicts and lists walked) to DIGITS significant digits; ints, strings and None as they are."""
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    if isinstance(value, float) and not isinstance(value, bool):
        if value == 0.0 or not math.isfinite(value):
            return value
        return float(f"{value:.{DIGITS}g}")
    return value


@dataclass(frozen=True)
class RunVerdict:
    tier: Tier | None
    word: str | None  # "extracts 3", "membership signal", ...
    members: int | None  # members extracted over the draws, when the tier is "extracts"
    per_metric: dict[str, AcrossDraws]
    pooled: CountAcrossDraws | None
    relabel_p: float | None  # the pooled membership relabelling p, where core/draws computes one


def _relabel_p(pooled, counts: list[dict]) -> float | None:
    """The pooled relabelling p (issue 43, item 4) where the toolkit has it: core/draws' pooled count carries it,
    or a pooling function for it exists. None where neither does."""
    for name in ("relabel_p", "p_relabel"):
        found = getattr(pooled, name, None)
        if found is not None:
            return float(found)
    from reconbench.core import draws

    pool = getattr(draws, "relabel_across_draws", None)
    if pool is not None:
        got = pool(counts)
        return float(getattr(got, "p", got))
    return None


def run_verdict(draws: list[dict]) -> RunVerdict:
    """The verdict of a run from its draws' outcomes (DrawOutcome as dicts); tier None unless every draw was scored."""
    if not draws or any(d.get("status") != "scored" for d in draws):
        return RunVerdict(None, None, None, {}, None, None)
    per_metric = {}
    for metric in METRICS:
        found = [(d.get("membership") or {}).get(metric) or {} for d in draws]
        if all(f.get("status") == "computed" and f.get("p") is not None for f in found):
            per_metric[metric] = across_draws([f["gap"] for f in found], [f["p"] for f in found])
    counts = [d.get("extraction") or {} for d in draws]
    pooled = count_across_draws(counts) if all(all(k in c for k in POOLED) for c in counts) else None
    relabel = _relabel_p(pooled, counts) if pooled is not None else None
    extraction = pooled
    if pooled is not None and pooled.extracts and relabel is not None and not relabel < ALPHA:
        extraction = _NotExtracted()  # closer than natural data, but not to members rather than the pool's other half
    t = tier(verdict(per_metric) if per_metric else None, extraction)
    members = pooled.members if t is EXTRACTS else None
    return RunVerdict(t, label(t, members), members, per_metric, pooled, relabel)


class _NotExtracted:
    extracts = False
