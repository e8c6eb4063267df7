"""A perfect honest text score is a valid result (issue 24, point 9): sacrebleu's corpus BLEU of
identical texts is 100.00000000000004 / 100 = 1.0000000000000004, and a float32 cosine of identical
texts can exceed 1 by ~1e-7; score_text puts such round-off on the range's edge where it computes
the score, so the signed payload passes the schema. Anything further out is left for the schema."""

from __future__ import annotations

import pytest

from reconbench.text.metrics import score as score_module
from reconbench.text.metrics.bleu import corpus_bleu
from reconbench.text.metrics.score import within_range

TEXTS = ["The West Bank town of Hebron was quiet today .", "Police said the man was arrested on Tuesday night ."]


def test_identical_texts_give_bleu_above_one_before_the_edge_rule():
    assert corpus_bleu(TEXTS, TEXTS) > 1.0  # the round-off this guards against is real (sacrebleu)


def test_score_text_puts_round_off_on_the_edge_and_the_payload_validates(monkeypatch):
    from reconbench.text.results import TextPayload

    # MiniLM stands aside here (its agreement with sentence-transformers is tested elsewhere)
    monkeypatch.setattr(score_module, "mean_similarity", lambda recs, tars, device="cpu": 1.000000001)
    scored = score_module.score_text(TEXTS, TEXTS)
    assert scored["bleu"].value == 1.0 and scored["similarity"].value == 1.0
    assert scored["rouge_l"].value == 1.0 and scored["exact_match"].value == 1.0
    TextPayload._known_and_plausible(scored)  # the schema's range check accepts them


def test_only_round_off_is_moved():
    assert within_range("bleu", 1.0000000000000004) == 1.0
    assert within_range("similarity", -1.0000000001) == -1.0
    assert within_range("bleu", 0.37) == 0.37
    assert within_range("bleu", 1.01) == 1.01  # a bug, not round-off: the schema refuses it
    from reconbench.core.report import MetricResult
    from reconbench.text.results import TextPayload

    with pytest.raises(ValueError, match="outside its range"):
        TextPayload._known_and_plausible({"bleu": MetricResult(value=1.01, status="computed")})
