"""The embedded `lee-news` corpus: gensim's Lee news background corpus, split into sentences.

Source: `gensim/test/test_data/lee_background.cor` in the installed gensim wheel (300 Australian
news documents from 2001, one per line; Lee, Pincombe & Welsh, CogSci 2005), located through
importlib.metadata without importing gensim (slow; only the data file is needed) and pinned by sha256.

Sentences (deterministic, no NLTK data):
  1. whitespace runs collapse to one space;
  2. a sentence ends at ".", "!" or "?" (plus any closing quotes) followed by a space and a
     character that can start a sentence (an upper-case letter, a digit or an opening quote),
     unless the word before the "." is a single capital (an initial) or in ABBREVIATIONS;
  3. kept when it has MIN_WORDS..MAX_WORDS space-separated words: six so that Complete's
     three-word prompt leaves at least three words to complete, forty so that the generator's
     context stays short (and cheap) and fragments from odd punctuation are dropped;
  4. exact duplicates are dropped, keeping the first (document, position) occurrence, so no
     text can sit in two splits.

Splits are drawn by DOCUMENT (sentences of one story share names and phrasing; a split by sentence
would let test texts leak their neighbours' memorised words): the documents are permuted with
SPLIT_SEED and dealt in that order to target, then aux, then test, each taking whole documents until
it holds its size; the last document a split takes is cut at the size, and its remaining sentences
are not used. Documents left over after test are unused. Ids are `lee-DDD-SS` (document, sentence
index within its kept sentences), so an id says where the text came from; each split keeps the
dealing order (permuted documents, sentences in reading order).

Sizes (SPLIT_SIZES): target 500 is the SoK's smallest scale halved (its grid starts at 1,000
fine-tuning texts) so a tiny GPT-2 memorises it in minutes on two CPU cores; aux 1,000 is the
attacker's public same-distribution text (Vec2Text's inversion model trains on it, so it gets the
most); test 500 matches target so the target-vs-test comparison of an attack has equal footing.

The test split is also the track's holdout (registry `holdout_split`; the membership gap of
reconbench.core.membership): as many texts as target, dealt the same way, and seen by no shipped
model: the generator and the embedder trained on target only, the tokenizer learnt from aux and the
undealt documents (lee_tokenizer_texts), Vec2Text's inversion model trains on aux in the attack's
run. No attack's view holds it (text/knowledge.py loads target and aux only).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import random
import re
from functools import lru_cache
from pathlib import Path

from reconbench.text.items import TextSet
from reconbench.core.tracks import TrackError

LEE_FILE = "gensim/test/test_data/lee_background.cor"
LEE_SHA256 = "5d78d6dafd953bbf65797bef09a9ffb9ec430583381be705f8fd460000f370fb"
MIN_WORDS, MAX_WORDS = 6, 40
SPLIT_SEED = 20250609  # arXiv date of the SoK, as for digits; any fixed value would do
SPLIT_SIZES = {"target": 500, "aux": 1000, "test": 500}
SPLIT_ORDER = ("target", "aux", "test")
ABBREVIATIONS = frozenset(
    "Mr Mrs Ms Dr St Jr Sr Prof Gen Col Lt Sgt Capt Cmdr Rev Sen Gov No Nos vs Inc Ltd Co Corp Jan Feb Mar Apr "
    "Aug Sept Sep Oct Nov Dec".split()
)

_BOUNDARY = re.compile(r"""(?<=[.!?])(["'”’]*) (?=["'“‘(]?[A-Z0-9])""")


def lee_path() -> Path:
    try:
        path = Path(str(importlib.metadata.distribution("gensim").locate_file(LEE_FILE)))
    except importlib.metadata.PackageNotFoundError:
        raise TrackError(f"{LEE_FILE}: gensim is not installed (it ships the lee-news corpus; pip install gensim)") from None
    if not path.is_file():
        raise TrackError(f"{path}: missing from the installed gensim wheel (the lee-news corpus)")
    return path


def read_lee_documents(path: Path | None = None) -> list[str]:
    """The 300 documents, sha256-checked: a changed corpus file would silently change every split."""
    path = path or lee_path()
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != LEE_SHA256:
        raise TrackError(f"{path}: sha256 is {digest}, the lee-news corpus is pinned at {LEE_SHA256}")
    return [line for line in data.decode("utf-8").split("\n") if line.strip()]


def split_sentences(document: str) -> list[str]:
    """Rule 1-2 of the module docstring: whitespace normalised, then split at sentence ends."""
    text = " ".join(document.split())
    sentences: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        end = match.end(1)
        words = text[start:end].split()
        last = words[-1].rstrip("\"'”’.!?") if words else ""
        if text[match.start(1) - 1] == "." and (
            last in ABBREVIATIONS or (len(last) == 1 and last.isupper())
        ):
            continue
        sentences.append(text[start:end].strip())
        start = match.end()
    sentences.append(text[start:].strip())
    return [s for s in sentences if s]


def keep(sentence: str) -> bool:
    return MIN_WORDS <= len(sentence.split()) <= MAX_WORDS


def document_sentences(documents: list[str]) -> list[list[tuple[str, str]]]:
    """Per document, its kept (id, text) pairs after the length filter and global de-duplication."""
    seen: set[str] = set()
    out = []
    for d, document in enumerate(documents):
        kept = []
        for sentence in split_sentences(document):
            if keep(sentence) and sentence not in seen:
                seen.add(sentence)
                kept.append((f"lee-{d:03d}-{len(kept):02d}", sentence))
        out.append(kept)
    return out


def draw_splits(per_document: list[list[tuple[str, str]]], sizes: dict[str, int] = SPLIT_SIZES,
                seed: int = SPLIT_SEED) -> dict[str, TextSet]:
    order = list(range(len(per_document)))
    random.Random(seed).shuffle(order)
    docs = iter(order)
    splits: dict[str, TextSet] = {}
    for name in SPLIT_ORDER:
        pairs: list[tuple[str, str]] = []
        while len(pairs) < sizes[name]:
            try:
                pairs.extend(per_document[next(docs)])
            except StopIteration:
                raise TrackError(f"lee-news: the corpus has too few sentences for the {name} split") from None
        splits[name] = TextSet.of(name, pairs[: sizes[name]])
    return splits


@lru_cache(maxsize=1)
def lee_splits() -> dict[str, TextSet]:
    """target / aux / test of the lee-news track (documented above); the caller checks their hashes."""
    return draw_splits(document_sentences(read_lee_documents()))


def lee_corpus_texts() -> list[str]:
    """Every kept sentence of the corpus (all 300 documents): the public text the tokenizer learns from."""
    return [text for doc in document_sentences(read_lee_documents()) for _, text in doc]


def lee_tokenizer_texts() -> list[str]:
    """The text the generator's tokenizer learns from: every kept sentence of the documents that
    gave no text to target or test (aux and the undealt documents). A public tokenizer learnt from
    the target split would leak its rare words through the vocabulary, and one learnt from target
    but not test would tilt the target-vs-test comparison; this one is blind to both."""
    splits = lee_splits()
    private = {i.split("-")[1] for name in ("target", "test") for i in splits[name].ids}
    per_document = document_sentences(read_lee_documents())
    return [text for doc in per_document for id_, text in doc if id_.split("-")[1] not in private]
