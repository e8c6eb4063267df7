"""Text side of the extraction count (core/extraction.py): target sentences recovered verbatim or
within the track's edit margin, against the holdout's, relabelled by document.

- Distance: the relative edit distance of the normal forms (submissions/textcopy.py: NFKC,
  case-folded, runs of non-word characters one space; Levenshtein over the longer length), 0 for a
  verbatim recovery. Threshold: the track's edit margin (the copy rule's: half the 1st percentile
  of each public text's distance to its nearest other public text).
- Search: for each reconstruction, the pool texts with its normal form, and its EDIT_CANDIDATES
  most similar pool texts by word 1-2-gram shingles, as the margin itself was calibrated
  (textcopy.calibrate_edit); a text within the margin shares most of its shingles.
- Pair rate: the share of ordered pairs of distinct public texts within the margin, found the same
  way, (within + 1) / (pairs + 1).
- Relabelling unit: the document. The text splits were dealt by whole documents (text/corpus.py),
  so a relabelling moves a document's sentences together; the unit is the DDD of an id lee-DDD-SS.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from reconbench.core.extraction import Extraction, ExtractionGroup, extraction_count, pair_rate
from reconbench.submissions.textcopy import EDIT_CANDIDATES, ShingleSpace, edit_distance, normalise


def document_of(text_id: str) -> str:
    """The document of a corpus id `name-DDD-SS` (an id without one is its own document)."""
    parts = text_id.rsplit("-", 2)
    return parts[1] if len(parts) == 3 else text_id


def _relative(a: str, b: str) -> float:
    return edit_distance(a, b) / max(len(a), len(b), 1)


def nearest_to_pool(recs: list[str], pool: list[str]) -> np.ndarray:
    """(P,) the smallest relative edit distance from any reconstruction to each pool text (inf: none searched)."""
    space = ShingleSpace(pool)
    nearest = np.full(len(pool), np.inf)
    for lo in range(0, len(recs), 256):
        sim = space.similarity(recs[lo:lo + 256])
        for k, text in enumerate(recs[lo:lo + 256]):
            r = normalise(text)
            if not r:
                continue
            for j in space.index.get(r, []):
                nearest[j] = 0.0
            for j in np.argsort(-sim[k], kind="stable")[:EDIT_CANDIDATES]:
                nearest[j] = min(nearest[j], _relative(r, space.normal[j]))
    return nearest


def text_extraction(recs: list[str], targets: list[str], target_ids: list[str], holdout: list[str],
                    holdout_ids: list[str], margin: float, rate: float) -> Extraction:
    pool = list(targets) + list(holdout)
    members = np.r_[np.ones(len(targets), bool), np.zeros(len(holdout), bool)]
    docs = [f"t{document_of(i)}" for i in target_ids] + [f"h{document_of(i)}" for i in holdout_ids]
    _, units = np.unique(docs, return_inverse=True)
    group = ExtractionGroup("all", nearest_to_pool(list(recs), pool), members, len(recs), units)
    return extraction_count([group], margin, rate)


@lru_cache(maxsize=4)
def public_pair_rate(track_id: str, target_sha256: str | None, margin: float) -> float:
    """The pair rate of the track's public texts (module docstring), once per process."""
    from reconbench.submissions.textcopy import nearest_public, public_text_space, within_edit

    space = public_text_space(track_id, target_sha256)[0]
    within = distinct = 0
    for a, sim, candidates in nearest_public(space):
        distinct += 1
        seen = set()
        for j in candidates:
            if space.normal[j] not in seen and sim[j] >= 0 and within_edit(a, space.normal[j], margin):
                within += 1
            seen.add(space.normal[j])
    return pair_rate(within, distinct * (distinct - 1))
