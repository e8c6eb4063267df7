"""Text metrics (SoK App. B): BLEU, ROUGE-L, MiniLM embedding similarity, exact match.

    from reconbench.text.metrics import score_text, TEXT_METRICS
    results = score_text(reconstructions, targets)   # {"bleu": MetricResult, ...}

One file per metric (bleu.py, rouge.py, similarity.py, exact.py), the table in info.py, score_text in
score.py. Importing this package is light (no torch, transformers, sacrebleu or rouge-score): each
metric imports its library when it runs.
"""

from .info import TEXT_METRICS, TextMetricInfo
from .score import TextMetricError, score_text

__all__ = ["TEXT_METRICS", "TextMetricInfo", "TextMetricError", "score_text"]
