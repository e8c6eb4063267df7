"""The text membership gap: all-pairs BLEU and ROUGE-L equal the libraries' per-pair values, and the
gap separates the target texts from the aux texts (text/metrics/pairs.py, text/metrics/leakage.py)."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

from reconbench.text.metrics.pairs import bleu_matrix, exact_matrix, lcs_matrix, rouge_l_matrix


@pytest.fixture(scope="module")
def lee():
    from reconbench.text.files import load_text_splits
    from reconbench.text.tracks import get_text_track

    return load_text_splits(get_text_track("lee-news"), ["target", "aux", "test"])


def _odd_texts(lee):
    long = " ".join(f"w{i}" for i in range(80))  # past one 64-bit word: the textbook LCS table
    return (lee["target"].texts[:12] + ["", "a b", "the the the the the", lee["test"].texts[5], long,
                                         lee["target"].texts[3].upper(), "Prime Minister John Howard said"],
            lee["test"].texts[:25] + [lee["target"].texts[2], "", "the the the", long + " w3 w2", lee["target"].texts[3]])


def test_all_pairs_bleu_equals_sacrebleu_sentence_bleu(lee):
    from sacrebleu.metrics import BLEU

    from reconbench.text.metrics.bleu import SETTINGS

    recs, pool = _odd_texts(lee)
    scorer = BLEU(tokenize=SETTINGS["tokenize"], smooth_method=SETTINGS["smooth_method"], lowercase=SETTINGS["lowercase"],
                  effective_order=SETTINGS["use_effective_order"])
    with contextlib.redirect_stderr(io.StringIO()):  # sacrebleu advises effective_order for sentence BLEU
        ref = np.array([[scorer.sentence_score(r, [t]).score / 100 for t in pool] for r in recs])
    got = bleu_matrix(recs, pool)
    assert np.abs(got - ref).max() < 1e-12
    assert got.max() == pytest.approx(1.0) and (got == 0).any()


def test_all_pairs_rouge_l_equals_rouge_score(lee):
    from rouge_score.rouge_scorer import RougeScorer

    recs, pool = _odd_texts(lee)
    scorer = RougeScorer(["rougeL"], use_stemmer=False)
    ref = np.array([[scorer.score(t, r)["rougeL"].fmeasure for t in pool] for r in recs])
    assert np.abs(rouge_l_matrix(recs, pool) - ref).max() < 1e-12


def test_bit_parallel_lcs_equals_the_table_on_random_sequences():
    from reconbench.text.metrics.pairs import _lcs_table

    rng = np.random.default_rng(0)
    hyp = [[f"t{x}" for x in rng.integers(0, 6, rng.integers(0, 70))] for _ in range(30)]
    ref = [[f"t{x}" for x in rng.integers(0, 6, rng.integers(0, 70))] for _ in range(30)]
    got = lcs_matrix(hyp, ref)
    assert all(got[i, j] == _lcs_table(hyp[i], ref[j]) for i in range(30) for j in range(30))


def test_exact_matrix_normalises_as_the_exact_match_metric():
    m = exact_matrix(["a  b ", "c"], ["a b", "C", "c"])
    assert m.tolist() == [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]


def test_the_targets_leak_and_aux_texts_do_not(lee):
    """On 120 targets and 120 holdout texts: the targets themselves sit at the largest gap, p at its bound;
    aux texts (the attacker's own public data, from other documents) show a gap whose interval holds 0."""
    from reconbench.text.metrics.leakage import text_gaps

    targets, holdout = lee["target"].texts[:120], lee["test"].texts[:120]
    copied = text_gaps(targets, targets, holdout)
    aux = text_gaps(lee["aux"].texts[:120], targets, holdout)
    for name in ("bleu", "rouge_l", "similarity", "exact_match"):
        g, a = copied[name][0], aux[name][0]
        # no permutation reaches the copied targets' gap: p is reported as its bound 1/(B+1)
        assert g.vs_target == pytest.approx(1.0, abs=1e-6) and g.p == pytest.approx(1 / 2001) and g.low > 0, (name, g)
        assert "no permutation reached" in g.note
        assert a.low <= 0.0 <= a.high, (name, a.format())
        assert g.gap > a.high


def test_the_text_count_finds_recovered_targets_and_moves_documents_whole(lee):
    """issue 33, text: target sentences recovered verbatim or within the edit margin (a word changed)
    count, aux sentences do not; the relabelling moves a document's sentences together."""
    from reconbench.text.metrics.extraction import document_of, text_extraction

    target, holdout, aux = lee["target"], lee["test"], lee["aux"]
    t_texts, t_ids = target.texts[:120], target.ids[:120]
    h_texts, h_ids = holdout.texts[:120], holdout.ids[:120]
    words = t_texts[5].split()
    edited = " ".join(words[:-1] + ["zebra"]) if len(words) > 12 else t_texts[5]
    recs = aux.texts[:97] + [t_texts[0], t_texts[1].upper(), edited]
    got = text_extraction(recs, t_texts, t_ids, h_texts, h_ids, margin=0.186, rate=1e-6)
    assert got.members == 3 and got.holdout == 0 and got.extracted == {"all": [0, 1, 5]}
    assert got.p < 0.01 and got.extracts
    # the relabelling unit is the document of an id lee-DDD-SS (tests/test_extraction.py checks the unit rule)
    assert document_of(t_ids[0]) == t_ids[0].split("-")[1] and document_of("no-doc") == "no-doc"
    none = text_extraction(aux.texts[:100], t_texts, t_ids, h_texts, h_ids, margin=0.186, rate=1e-6)
    assert none.members == 0 and none.holdout == 0 and not none.extracts
