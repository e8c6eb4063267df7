"""The text copy rule: a reconstruction equal or nearly equal to a public text that is not its target.

A text attack answers one target per id, so the question is not "is this close to *a* public
text" (Complete recovering its own target exactly is the attack working) but "is it a copy of
*another* public text": an aux sentence returned verbatim, another target's text put under this
id, a test sentence. The public pool is every split of the track (target, aux, test: the whole
public corpus the toolkit ships or downloads), as for images (checks/copies.py).

- normalise(t): Unicode NFKC, case-folded, every run of characters that are not letters or digits
  replaced by one space, stripped. So punctuation, spacing, case and width variants do not make a
  copy "new".
- copy (fails the entry, as an exact image copy does): normalise(reconstruction) equals
  normalise(p) for a public text p outside the target split (aux, test) whose normal form differs
  from that of the reconstruction's own target. A public text identical to the reconstruction's own
  target is its target, not something else.
- cross-target copy: equal to *another target's* text. A generator that memorised D_tar emits
  other training sentences for a prompt (Complete on lee-news at the default budget does for 18 of
  500 targets), so this is an attack outcome, not a copy of outside data: it counts with the near
  copies below (held above HELD_SHARE), never fails the entry on its own.
- near copy: similarity = Jaccard index of the two texts' sets of word 1- and 2-grams (of the
  normal form). A reconstruction r of target t is near a public text p != t when
  sim(r, p) >= THRESHOLD and sim(r, p) > sim(r, t): closer to another public text than to its own
  target. THRESHOLD is calibrated on the public pool itself like the image near-copy thresholds
  (submissions/nearcopy.py): the PERCENTILE-th percentile, from the top, of each distinct public
  text's similarity to its most similar other public text, so only ~1% of public texts are that
  close to another one. An entry with more than HELD_SHARE of its reconstructions near a public
  text is held (listed with the evidence, not ranked) until reproduced, as for images.
Empty reconstructions are never copies (they copy nothing).
A reconstruction equal to its own target is no copy of anything else, but the target split is public:
checks/text_scores.py holds such an entry until it is reproduced, as checks/copies.py does for images.
- close to its own target (held like an exact one): edit(r, t) <= EDIT margin, where edit is the
  Levenshtein distance of the two normal forms divided by the longer one's length. Without it a pasted
  target with one character changed would rank while an honest run recovering it verbatim is held.
  The margin is half the PERCENTILE-th percentile of each distinct public text's distance to its
  nearest other public text (searched among its EDIT_CANDIDATES most similar by shingles): closer to
  its own target than that, a reconstruction is nearer to it than ~99% of public texts are to any
  other, i.e. the target with a word or so changed. On lee-news the percentile is 0.372 and the margin
  0.186 (a word of 10 letters changed in a 100-character sentence is 0.1); the registry pins it
  (text track `edit_margin`; `python -m reconbench.submissions.textcopy` recomputes it).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from reconbench.submissions.nearcopy import HELD_SHARE  # noqa: F401 - the same share as images (checks/text_copies.py)

PERCENTILE = 1.0  # from the top: the 99th percentile of nearest-neighbour similarity (as nearcopy.PERCENTILE)
_NON_WORD = re.compile(r"[\W_]+")


def normalise(text: str) -> str:
    return _NON_WORD.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def shingles(text: str) -> set[str]:
    """Word 1- and 2-grams of the normal form."""
    words = normalise(text).split()
    return set(words) | {f"{a} {b}" for a, b in zip(words, words[1:])}


class ShingleSpace:
    """Jaccard similarity of query texts against a fixed list of texts, as sparse matrix products."""

    def __init__(self, texts: list[str], in_target: list[bool] | None = None):
        self.texts = texts
        self.in_target = in_target or [False] * len(texts)  # which rows are target-split texts
        self.normal = [normalise(t) for t in texts]
        self.index: dict[str, list[int]] = {}  # normal form -> rows holding it
        for j, norm in enumerate(self.normal):
            self.index.setdefault(norm, []).append(j)
        self.vocab: dict[str, int] = {}
        self.matrix = self._rows([shingles(t) for t in texts], grow=True)
        self.sizes = np.asarray(self.matrix.sum(axis=1)).ravel()

    def _rows(self, sets: list[set[str]], grow: bool = False):
        from scipy.sparse import csr_matrix

        rows, cols = [], []
        for i, s in enumerate(sets):
            for g in s:
                j = self.vocab.get(g)
                if j is None and grow:
                    j = self.vocab[g] = len(self.vocab)
                if j is not None:
                    rows.append(i)
                    cols.append(j)
        return csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(sets), max(len(self.vocab), 1)))

    def similarity(self, queries: list[str]) -> np.ndarray:
        """len(queries) x len(texts) Jaccard indices (a query's shingles unknown here only enlarge its union)."""
        sets = [shingles(q) for q in queries]
        inter = (self._rows(sets) @ self.matrix.T).toarray()
        union = np.array([len(s) for s in sets], dtype=float)[:, None] + self.sizes[None, :] - inter
        return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def calibrate(space: ShingleSpace) -> float:
    """The similarity above which only ~PERCENTILE % of distinct public texts have another public text."""
    distinct = sorted({n: i for i, n in reversed(list(enumerate(space.normal)))}.values())
    best = []
    for lo in range(0, len(distinct), 512):
        rows = distinct[lo:lo + 512]
        sim = space.similarity([space.texts[i] for i in rows])
        for k, i in enumerate(rows):
            sim[k, space.index[space.normal[i]]] = -1.0  # itself and its exact duplicates
        best.append(sim.max(axis=1))
    return float(np.percentile(np.concatenate(best), 100.0 - PERCENTILE))


@dataclass(frozen=True)
class TextFlags:
    copy: np.ndarray  # bool per reconstruction: equal (normal form) to an aux/test text that is not its target
    near: np.ndarray  # bool: near copy or another target's text (see the module docstring), copies excluded
    where: np.ndarray  # index into the pool of the public text it copies / is nearest to (-1: none)
    similarity: np.ndarray  # sim(r, that public text)
    own: np.ndarray  # sim(r, its own target)
    exact: np.ndarray  # bool: equal (normal form, non-empty) to its own target: held until reproduced
    threshold: float
    close: np.ndarray | None = None  # bool: not equal, but within the edit margin of its own target: held too
    edit: np.ndarray | None = None  # normalised edit distance to its own target

    @property
    def near_share(self) -> float:
        return float(self.near.mean()) if len(self.near) else 0.0


EDIT_CANDIDATES = 5


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (unit costs), one DP row at a time with numpy; the row's left-to-right
    dependency cur[j] = min(cur[j-1] + 1, best[j]) is a running minimum of best[j] - j, plus j."""
    if not a or not b:
        return max(len(a), len(b))
    codes = np.array([ord(c) for c in b])
    steps = np.arange(len(b) + 1)
    prev = steps.copy()
    for i, ch in enumerate(a, 1):
        best = np.minimum(prev[:-1] + (codes != ord(ch)), prev[1:] + 1)
        prev = np.minimum.accumulate(np.concatenate([[i], best]) - steps) + steps
    return int(prev[-1])


def within_edit(a: str, b: str, margin: float) -> bool:
    """edit_distance(a, b) / the longer length <= margin, exactly; the DP runs only for pairs that two
    lower bounds cannot rule out: the length difference, and the larger side of the character-count
    difference (an edit changes one character's count by one in each direction at most)."""
    longest = max(len(a), len(b), 1)
    if abs(len(a) - len(b)) / longest > margin:
        return False
    ca, cb = Counter(a), Counter(b)
    if max(sum((ca - cb).values()), sum((cb - ca).values())) / longest > margin:
        return False
    return edit_distance(a, b) / longest <= margin


def relative_edit(a: str, b: str) -> float:
    """edit_distance of the normal forms / the longer normal form's length (0: equal)."""
    a, b = normalise(a), normalise(b)
    return edit_distance(a, b) / max(len(a), len(b), 1)


def nearest_public(space: ShingleSpace):
    """For each distinct public text (by normal form): its normal form, its shingle similarity to every
    public text (its own form set to -1), and its EDIT_CANDIDATES most similar others; in blocks of 256."""
    distinct = sorted({n: i for i, n in reversed(list(enumerate(space.normal)))}.values())
    for lo in range(0, len(distinct), 256):
        rows = distinct[lo:lo + 256]
        sim = space.similarity([space.texts[i] for i in rows])
        for k, i in enumerate(rows):
            sim[k, space.index[space.normal[i]]] = -1.0
            yield space.normal[i], sim[k], np.argsort(-sim[k], kind="stable")[:EDIT_CANDIDATES]


def calibrate_edit(space: ShingleSpace) -> float:
    """Half the PERCENTILE-th percentile of distinct public texts' relative edit distance to their
    nearest other public text (among the EDIT_CANDIDATES most similar by shingles)."""
    nearest = [min(edit_distance(a, space.normal[j]) / max(len(a), len(space.normal[j]), 1) for j in candidates)
               for a, _, candidates in nearest_public(space)]
    return float(np.percentile(nearest, PERCENTILE)) / 2


def flag(space: ShingleSpace, threshold: float, recs: list[str], targets: list[str],
         edit_margin: float | None = None) -> TextFlags:
    n = len(recs)
    copy, near = np.zeros(n, bool), np.zeros(n, bool)
    where, best, own, exact = np.full(n, -1), np.zeros(n), np.zeros(n), np.zeros(n, bool)
    close, edit = np.zeros(n, bool), np.ones(n)
    index = space.index
    for lo in range(0, n, 256):
        sim = space.similarity(recs[lo:lo + 256])
        for k in range(sim.shape[0]):
            i = lo + k
            r, t = normalise(recs[i]), normalise(targets[i])
            if not r:
                continue
            exact[i] = r == t
            edit[i] = edit_distance(r, t) / max(len(r), len(t), 1)
            close[i] = not exact[i] and edit_margin is not None and edit[i] <= edit_margin
            own[i] = _jaccard(shingles(recs[i]), shingles(targets[i]))
            others = [j for j in index.get(r, []) if space.normal[j] != t]
            if others and r != t:
                outside = [j for j in others if not space.in_target[j]]
                where[i], best[i] = (outside or others)[0], 1.0
                copy[i], near[i] = bool(outside), not outside  # another target's text: see the docstring
                continue
            row = sim[k].copy()
            row[index.get(t, [])] = -1.0  # the target itself (and its exact duplicates) is no "other" text
            j = int(row.argmax())
            where[i], best[i] = j, max(row[j], 0.0)
            near[i] = row[j] >= threshold and row[j] > own[i]
    return TextFlags(copy, near, where, best, own, exact, threshold, close, edit)


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


@lru_cache(maxsize=4)
def public_text_space(track_id: str, target_sha256: str | None) -> tuple[ShingleSpace, float, list[str]]:
    """(space of the track's public pool, calibrated threshold, pool texts' split names); cached per pin."""
    from reconbench.text.files import SPLITS, load_text_splits
    from reconbench.text.tracks import get_text_track

    splits = load_text_splits(get_text_track(track_id), SPLITS)
    texts, names = [], []
    for part in SPLITS:
        texts += splits[part].texts
        names += [f"{part} {i}" for i in splits[part].ids]
    space = ShingleSpace(texts, [n.startswith("target ") for n in names])
    return space, calibrate(space), names


def track_edit_margin(track) -> float:
    """The track's pinned edit margin (registry `edit_margin`), else calibrated on its public pool here."""
    if getattr(track, "edit_margin", None) is not None:
        return float(track.edit_margin)
    return _calibrated_edit(track.id, track.splits_sha256.get("target"))


@lru_cache(maxsize=4)
def _calibrated_edit(track_id: str, target_sha256: str | None) -> float:
    return calibrate_edit(public_text_space(track_id, target_sha256)[0])


if __name__ == "__main__":
    import json
    import sys

    from reconbench.text.tracks import all_text_tracks

    wanted = sys.argv[1:] or [t.id for t in all_text_tracks() if t.status != "unpublished"]
    print(json.dumps({t: round(_calibrated_edit(t, None), 4) for t in wanted}, indent=2))
