"""The embedded lee-news corpus: sentence rule, deterministic disjoint splits, pinned hashes."""

from __future__ import annotations

import pytest

from reconbench.text import corpus
from reconbench.text.corpus import MAX_WORDS, MIN_WORDS, draw_splits, split_sentences
from reconbench.text.files import load_text_splits
from reconbench.text.tracks import get_text_track
from reconbench.core.tracks import TrackError


def test_sentence_rule_keeps_initials_abbreviations_and_quotes_together():
    doc = 'Dr J. Smith arrived  at 4:00pm. "It is over," Mr Brown said. Is it? 12 people agreed... and left. Yes!'
    assert split_sentences(doc) == [
        "Dr J. Smith arrived at 4:00pm.",
        '"It is over," Mr Brown said.',
        "Is it?",
        "12 people agreed... and left.",
        "Yes!",
    ]
    assert split_sentences('He said "no." Then he left.') == ['He said "no."', "Then he left."]


def test_splits_are_deterministic_sized_disjoint_and_drawn_by_document():
    splits = corpus.lee_splits()
    again = draw_splits(corpus.document_sentences(corpus.read_lee_documents()))
    assert {k: v.sha256 for k, v in splits.items()} == {k: v.sha256 for k, v in again.items()}
    assert {k: len(v) for k, v in splits.items()} == corpus.SPLIT_SIZES
    ids = [i for s in splits.values() for i in s.ids]
    texts = [t for s in splits.values() for t in s.texts]
    assert len(set(ids)) == len(ids) and len(set(texts)) == len(texts)
    assert all(MIN_WORDS <= len(t.split()) <= MAX_WORDS for t in texts)
    docs = {name: {i.split("-")[1] for i in s.ids} for name, s in splits.items()}
    assert not docs["target"] & docs["aux"] and not docs["target"] & docs["test"] and not docs["aux"] & docs["test"]
    # another seed deals other documents: the seed, not the file order, decides
    assert draw_splits(corpus.document_sentences(corpus.read_lee_documents()), seed=1)["target"].sha256 != splits["target"].sha256


def test_registry_pins_the_splits_and_a_forged_pin_is_refused():
    track = get_text_track("lee-news")
    loaded = load_text_splits(track, ["target", "test"])
    assert set(loaded) == {"target", "test"} and len(loaded["target"]) == track.split_sizes["target"] == track.train_size
    forged = track.model_copy(update={"splits_sha256": {**track.splits_sha256, "aux": "0" * 64}})
    with pytest.raises(TrackError, match="aux split sha256 is .* the registry pins 0{64}"):
        load_text_splits(forged, ["aux"])
    unpinned = track.model_copy(update={"splits_sha256": {"target": track.splits_sha256["target"]}})
    with pytest.raises(TrackError, match="pins no sha256 for its test split"):
        load_text_splits(unpinned, ["test"])
    with pytest.raises(TrackError, match="unknown split"):
        load_text_splits(track, ["train"])


def test_a_changed_corpus_file_is_refused_naming_it(tmp_path):
    changed = tmp_path / "lee_background.cor"
    changed.write_bytes(corpus.lee_path().read_bytes().replace(b"bushfire", b"bushfirE", 1))
    with pytest.raises(TrackError, match=f"{changed}: sha256 is .* pinned at {corpus.LEE_SHA256}"):
        corpus.read_lee_documents(changed)
