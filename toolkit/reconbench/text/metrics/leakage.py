"""Text side of the membership gap: every reconstruction against the target texts + the holdout texts.

The board's text metrics score each reconstruction against its own target (by id); a holdout text
has no id in common with a reconstruction, so the gap is measured on best matches, as for images: for
each metric, best_T(i) is reconstruction i's best score over the 500 targets and best_H(i) over the
500 holdout texts, with the same per-pair engine (pairs.py). vs_target is therefore the mean
best-match score, which can exceed the board's own-target value (a reconstruction may sit closer to
another target than to its own) and, for BLEU, is a mean of sentence BLEU where the board reports
corpus BLEU. One group (texts have no classes); metrics/membership.py gives the gap, interval and p.

Complete's reconstructions begin with their target's first words (the prompt, which the threat model
hands the attacker): part of their gap is that knowledge, not leakage; the lift over the reference
rows (the board) separates the two.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from reconbench.metrics.membership import Group, membership_gap
from reconbench.metrics.report import GapResult

from .pairs import bleu_matrix, exact_matrix, rouge_l_matrix, similarity_matrix

NOTES = {
    "bleu": "best-match sentence BLEU (13a, exp smoothing) against each side: the board's BLEU is corpus BLEU "
            "against each reconstruction's own target",
    "rouge_l": "best-match ROUGE-L F against each side",
    "similarity": "best-match MiniLM cosine against each side",
    "exact_match": "share of reconstructions equal to some text of each side",
}


def text_gaps(recs: Sequence[str], targets: Sequence[str], holdout: Sequence[str], *, device: str = "cpu") -> dict:
    """metric -> (GapResult, membership.Gap) for bleu, rouge_l, similarity, exact_match."""
    pool = list(targets) + list(holdout)
    members = np.r_[np.ones(len(targets), bool), np.zeros(len(holdout), bool)]
    matrices = {
        "bleu": lambda: bleu_matrix(recs, pool),
        "rouge_l": lambda: rouge_l_matrix(recs, pool),
        "similarity": lambda: similarity_matrix(recs, pool, device=device),
        "exact_match": lambda: exact_matrix(recs, pool),
    }
    out = {}
    for name, make in matrices.items():
        gap = membership_gap([Group.from_matrix("all", make(), members, larger_is_better=True)], True)
        note = NOTES[name] + ("" if gap.p_method == "permutation" else f"; p: {gap.p_method}")
        out[name] = (GapResult.of(gap, note=note), gap)
    return out
