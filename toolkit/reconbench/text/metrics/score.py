"""score_text: the four text metrics of one set of reconstructions, each against its own target."""

from __future__ import annotations

from collections.abc import Sequence

from reconbench.metrics.report import MetricResult

from .bleu import corpus_bleu
from .exact import exact_match_rate
from .rouge import mean_rouge_l
from .similarity import mean_similarity


class TextMetricError(ValueError):
    """The inputs cannot be scored (no pairs, mismatched lengths, a non-string)."""


def _check(reconstructions: Sequence[str], targets: Sequence[str]) -> tuple[list[str], list[str]]:
    recs, tars = list(reconstructions), list(targets)
    if len(recs) != len(tars):
        raise TextMetricError(f"{len(recs)} reconstructions for {len(tars)} targets: pairs must be aligned by id")
    if not recs:
        raise TextMetricError("no reconstructions to score")
    for what, texts in (("reconstruction", recs), ("target", tars)):
        bad = next((i for i, t in enumerate(texts) if not isinstance(t, str)), None)
        if bad is not None:
            raise TextMetricError(f"{what} {bad} is a {type(texts[bad]).__name__}, not a string")
    return recs, tars


def score_text(reconstructions: Sequence[str], targets: Sequence[str], *, device: str = "cpu",
               ) -> dict[str, MetricResult]:
    """{bleu, rouge_l, similarity, exact_match} -> MetricResult (coverage None); see info.TEXT_METRICS.

    reconstructions[i] answers targets[i] (the caller aligns them by id). Empty strings score (0 for
    BLEU and ROUGE-L unless the target is empty too); they never raise.
    """
    recs, tars = _check(reconstructions, targets)
    values = {
        "bleu": corpus_bleu(recs, tars),
        "rouge_l": mean_rouge_l(recs, tars),
        "similarity": mean_similarity(recs, tars, device=device),
        "exact_match": exact_match_rate(recs, tars),
    }
    return {name: MetricResult(value=float(v), status="computed") for name, v in values.items()}
