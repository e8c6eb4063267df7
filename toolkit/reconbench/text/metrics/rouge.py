"""ROUGE-L F-measure (Lin, ACL 2004 workshop) with Google's rouge-score package, averaged over pairs.

Settings: RougeScorer(["rougeL"], use_stemmer=False) with its default tokenizer (lowercases, keeps
[a-z0-9] runs only, so non-ASCII words do not count). use_stemmer=False is the default of Hugging Face
evaluate's "rouge", which Vec2Text's official trainer calls; the SoK does not state it.
"rougeL" (not "rougeLsum"): one LCS over the whole text, no sentence splitting.
Each reconstruction is scored against its own target; a pair where either side has no token scores 0.
"""

from __future__ import annotations

from collections.abc import Sequence

USE_STEMMER = False


def rouge_l_scores(reconstructions: Sequence[str], targets: Sequence[str]) -> list[float]:
    from rouge_score.rouge_scorer import RougeScorer

    scorer = RougeScorer(["rougeL"], use_stemmer=USE_STEMMER)
    # score(target, prediction): the first argument is the reference
    return [scorer.score(t, r)["rougeL"].fmeasure for r, t in zip(reconstructions, targets, strict=True)]


def mean_rouge_l(reconstructions: Sequence[str], targets: Sequence[str]) -> float:
    scores = rouge_l_scores(reconstructions, targets)
    return sum(scores) / len(scores)
