"""The text metrics' table: what each number means (shown by `recon-submit metrics` and on the site).

No heavy imports here: listing the metrics must not load torch, transformers, sacrebleu or rouge-score.
Every metric scores each reconstruction against its OWN target (same id): the text attacks are
per-sample (SoK App. B), unlike the image metrics' nearest-neighbour matching, so there is no coverage.
"""

from __future__ import annotations

from typing import NamedTuple, Literal

SOK_APP_B = "Wen, Liu, Backes, Zhang, SoK: Data Reconstruction Attacks Against ML Models, USENIX Security 2025, App. B"


# Each metric's range (what a result may claim): shares and F-measures in [0, 1]; similarity is a
# mean cosine, which can be negative. score_text puts round-off just outside on the edge.
RANGES: dict[str, tuple[float, float]] = {"bleu": (0.0, 1.0), "rouge_l": (0.0, 1.0), "similarity": (-1.0, 1.0),
                                          "exact_match": (0.0, 1.0)}


class TextMetricInfo(NamedTuple):
    title: str
    direction: Literal["↑"]  # every text metric: higher = closer to the targets = stronger attack
    range: str
    definition: str


TEXT_METRICS: dict[str, TextMetricInfo] = {
    "bleu": TextMetricInfo(
        "BLEU",
        "↑",
        "[0, 1]",
        "corpus BLEU of the reconstructions against their own targets (one reference each): "
        "sacrebleu.corpus_bleu, tokenize 13a, smooth exp, case-sensitive, 4-grams, brevity penalty; "
        "sacrebleu's 0-100 score / 100, as the SoK's Table 9 reports it (0.169)",
    ),
    "rouge_l": TextMetricInfo(
        "ROUGE-L",
        "↑",
        "[0, 1]",
        "mean over pairs of the ROUGE-L F-measure (longest common subsequence) of reconstruction and its "
        "target: rouge_score.RougeScorer(['rougeL'], use_stemmer=False), its default tokenizer "
        "(lowercase, ASCII letters and digits only)",
    ),
    "similarity": TextMetricInfo(
        "Similarity",
        "↑",
        "[-1, 1]",
        "mean over pairs of the cosine of the sentence-transformers/all-MiniLM-L6-v2 embeddings "
        "(mean pooling, L2-normalised, 256 tokens) of reconstruction and its target (pinned weights)",
    ),
    "exact_match": TextMetricInfo(
        "Exact match",
        "↑",
        "[0, 1]",
        "share of reconstructions equal to their target after Unicode NFC, whitespace runs -> one space, "
        "strip (case and punctuation count): a memorised text reproduced verbatim",
    ),
}
