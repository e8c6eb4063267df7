"""Corpus BLEU (Papineni et al., ACL 2002) with sacrebleu (Post, WMT 2018), scaled to [0, 1].

The SoK (App. B, Table 9) reports BLEU as a fraction (0.169) without its settings; we use sacrebleu's
defaults for corpus_bleu, stated here so that a number can be recomputed:
  tokenize="13a" (the WMT mteval-v13a tokenizer), smooth_method="exp", lowercase=False,
  max n-gram order 4, uniform weights, brevity penalty over the corpus, use_effective_order=False,
  one reference per hypothesis: the reconstruction's own target (pairs aligned by id by the caller).
Vec2Text's trainer reports the mean of sentence-level BLEU instead; corpus BLEU is what the issue fixes.
"""

from __future__ import annotations

from collections.abc import Sequence

SETTINGS = {"tokenize": "13a", "smooth_method": "exp", "lowercase": False, "force": False,
            "use_effective_order": False}


def corpus_bleu(reconstructions: Sequence[str], targets: Sequence[str]) -> float:
    """sacrebleu's corpus BLEU / 100. An empty reconstruction counts as zero n-gram matches."""
    from sacrebleu.metrics import BLEU

    scorer = BLEU(tokenize=SETTINGS["tokenize"], smooth_method=SETTINGS["smooth_method"],
                  lowercase=SETTINGS["lowercase"], force=SETTINGS["force"],
                  effective_order=SETTINGS["use_effective_order"])
    return scorer.corpus_score(list(reconstructions), [list(targets)]).score / 100.0
