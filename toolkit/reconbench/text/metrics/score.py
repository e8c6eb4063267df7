"""score_text: the four text metrics of one set of reconstructions, each against its own target."""

from __future__ import annotations

from collections.abc import Sequence

from reconbench.core.report import MetricResult

from .bleu import corpus_bleu
from .exact import exact_match_rate
from .info import RANGES
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
    return {name: MetricResult(value=within_range(name, float(v)), status="computed") for name, v in values.items()}


ROUND_OFF = 1e-6  # sacrebleu's 100.00000000000004 / 100 for identical texts; a float32 cosine of 1.0000001


def within_range(name: str, value: float) -> float:
    """Round-off just outside a metric's range is put on its edge, here where the score is computed
    (the result schema refuses 1.0000000000000004 as out of range); anything further out is a bug,
    left for the schema to refuse."""
    low, high = RANGES[name]
    if low <= value <= high:
        return value
    edge = low if value < low else high
    return edge if abs(value - edge) <= ROUND_OFF else value
