"""Text side of the membership gap: every reconstruction against the target texts + the holdout texts.

The board's text metrics score each reconstruction against its own target (by id); a holdout text
has no id in common with a reconstruction, so the gap is measured on best matches, as for images: for
each metric, best_T(i) is reconstruction i's best score over the 500 targets and best_H(i) over the
500 holdout texts, with the same per-pair engine (pairs.py). vs_target is therefore the mean
best-match score, which can exceed the board's own-target value (a reconstruction may sit closer to
another target than to its own) and, for BLEU, is a mean of sentence BLEU where the board reports
corpus BLEU. One group (texts have no classes); core/membership.py gives the gap, interval and p.

Complete's reconstructions begin with their target's first words (the prompt, which the threat model
hands the attacker): that knowledge would show as a gap without any leakage (a run that appends
"said on Tuesday" to each lee-news prompt: ROUGE-L gap +0.050 [+0.026, +0.074], p 3e-5; BLEU +0.014,
p 0.0015), so against the generator the caller leaves the first prompt words out of every text,
reconstruction and pool alike (without_prompt; the same run then: ROUGE-L +0.036 [-0.028, +0.071],
p 0.26; BLEU 0, p 1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from reconbench.core.membership import Group, membership_gap
from reconbench.core.report import GapResult

from .pairs import bleu_matrix, exact_matrix, rouge_l_matrix, similarity_matrix

NOTES = {
    "bleu": "best-match sentence BLEU (13a, exp smoothing) against each side: the board's BLEU is corpus BLEU "
            "against each reconstruction's own target",
    "rouge_l": "best-match ROUGE-L F against each side",
    "similarity": "best-match MiniLM cosine against each side",
    "exact_match": "share of reconstructions equal to some text of each side",
}


def without_prompt(text: str, words: int) -> str:
    """The text without its first `words` whitespace-separated words (the prompt Complete is given)."""
    return " ".join(text.split()[words:]) if words else text


def text_gaps(recs: Sequence[str], targets: Sequence[str], holdout: Sequence[str], *, device: str = "cpu") -> dict:
    """metric -> (GapResult, membership.Gap) for bleu, rouge_l, similarity, exact_match."""
    pool = list(targets) + list(holdout)
    members = np.r_[np.ones(len(targets), bool), np.zeros(len(holdout), bool)]
    matrices = {
        "bleu": lambda: bleu_matrix(recs, pool),
        "rouge_l": lambda: rouge_l_matrix(recs, pool),
        "similarity": lambda: similarity_matrix(recs, targets, holdout, device=device),
        "exact_match": lambda: exact_matrix(recs, pool),
    }
    out = {}
    for name, make in matrices.items():
        gap = membership_gap([Group.from_matrix("all", make(), members, larger_is_better=True)], True)
        note = NOTES[name] + ("" if gap.p_method == "permutation" else f"; p: {gap.p_method}")
        out[name] = (GapResult.of(gap, note=note), gap)
    return out
