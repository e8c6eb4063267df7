"""Model cards: one site page per runnable track (tracks/<id>.md), from the registry and the splits.

What a researcher comparing attacks wants to know about a target before trusting a number: where
the data comes from and how it is pinned, which split is which (sizes, class counts, content
hashes, who sees it), how the model was trained (recipe, accuracy on its own training set, the
holdout and the test split), the evaluation classifier, the cells offered and what the track does
not claim. Every number is read from the registry or measured on the splits at build time.
"""

from __future__ import annotations

import logging

import numpy as np

log = logging.getLogger(__name__)

PAGE = "tracks/{}.md"
INDEX = "tracks/index.md"

# Where each dataset's images come from (a reader's first question); keyed by Track.dataset.
SOURCES = {
    "sklearn-digits": "scikit-learn's `load_digits` (UCI optical digits, 1,797 images, 8x8, pixel values 0..16 "
                      "mapped to uint8), shipped with scikit-learn: offline everywhere.",
    "sklearn-digits-0v1": "the digits 0 and 1 of scikit-learn's `load_digits` (see the `digits` track).",
}
FASHION_SOURCE = ("Fashion-MNIST (Xiao, Rasul, Vollgraf 2017; MIT licence): the Debian/Ubuntu package "
                  "`dataset-fashion-mnist` (the authors' IDX files; the decompressed bytes are pinned by sha256), or "
                  "elsewhere the Hugging Face Hub's parquet copy `zalando-datasets/fashion_mnist`, pinned by commit "
                  "and sha256. Both decode to the same arrays, pinned by content hash "
                  "(`reconbench.image.data.fashion`). Splits: `reconbench.image.data.fashion_splits`.")
NOTES = {
    "fashion-mnist": "28x28 images zero-padded to 32x32, as GMI's MNIST code works at 32x32 (it resizes; "
                     "padding is exact). Ten classes, class-balanced nested target sets.",
    "fashion-mnist-split5": "GMI's MNIST convention for class-level leakage: the target learns five private classes "
                            "(Sandal, Shirt, Sneaker, Bag, Ankle boot, labelled 0..4); the `similar` cell's aux data "
                            "holds only the five others (T-shirt/top, Trouser, Pullover, Dress, Coat), unlabelled.",
    "fashion-mnist-oddeven": "Bias-Rec's regime (Haim et al. 2022): a binary task (odd vs even class), 250 images per "
                             "class at the native 28x28, a wide bias-free ReLU network trained to a small loss by "
                             "full-batch gradient descent from a small initialisation.",
}


def _split_rows(track) -> list[dict]:
    """(name, size, class counts, content hash, who sees it) of each split; [] when the data is absent."""
    from reconbench.image.track_files import load_splits

    try:
        splits = load_splits(track)
    except Exception as exc:  # noqa: BLE001 - a card without split sizes rather than no site
        log.info("model card of %s: splits unavailable (%s)", track.id, exc)
        return []
    who = {"target": "the target model trains on it (D_tar of the static cells); evaluator only",
           "update": "the dynamic update (D_tar of the dynamic cells); evaluator only",
           "holdout": "no model trains on it; the membership gap's non-members; evaluator only",
           "update_holdout": "the holdout matched to the update set; evaluator only",
           "aux_same": "attackers of the `same` cells",
           "aux_similar": "attackers of the `similar` cells",
           "test": "accuracy and surrogate agreement only"}
    if getattr(track, "seal", None) is not None:
        who["target"] = ("the sealed pool: the model trains on the half drawn from the board's key (docs/sealed.md); "
                         "evaluator only")
    rows = []
    for name, text in who.items():
        part = getattr(splits, name, None)
        if part is None:
            continue
        labels = part.labels[part.labels >= 0]
        counts = np.bincount(labels).tolist() if len(labels) else []
        rows.append(dict(name=name, size=len(part), counts=counts, unlabelled=int((part.labels < 0).sum()),
                         sha256=part.sha256, who=text))
    return rows


def _recipe(track) -> dict | None:
    """The training configuration of a Fashion-MNIST track's weights (models/fashion_targets.py)."""
    if not track.dataset.startswith("fashion-mnist") or track.source is None:
        return None
    from dataclasses import asdict

    from reconbench.image.models.fashion_targets import ALL

    name = track.source.model_file.removeprefix("fashion/").removesuffix(".safetensors")
    return asdict(ALL[name].config) if name in ALL else None


def _mia_auc(track) -> float | None:
    """The target's own loss-threshold MIA AUC, D_tar vs the holdout (reconbench.image.models.mia)."""
    from reconbench.image.models.mia import loss_threshold_auc

    return loss_threshold_auc(track)


def card_context(track) -> dict:
    source = FASHION_SOURCE if track.dataset.startswith("fashion-mnist") else SOURCES.get(track.dataset, "")
    return dict(track=track, source=source, note=NOTES.get(track.dataset, ""), splits=_split_rows(track),
                recipe=_recipe(track), mia_auc=_mia_auc(track))


def add_to_bundle(bundle) -> None:
    """The hook's call: a card per runnable track, an index, and the nav section `tracks`."""
    from reconbench.leaderboard.pages import Pages
    from reconbench.leaderboard.sealed import grouped_nav
    from reconbench.core.tracks import TrackError, all_tracks

    try:
        tracks = [t for t in all_tracks() if t.status != "unpublished"]
    except TrackError as exc:
        log.warning("tracks registry unreadable: %s", exc)
        tracks = []
    pages = Pages()
    for track in tracks:
        pages.page(PAGE.format(track.id), "track_card.md.j2", **card_context(track))
    nav = [("All model cards", INDEX), *grouped_nav(tracks, PAGE)]  # a sealed twin's draws under one item
    pages.page(INDEX, "track_cards_index.md.j2", tracks=tracks)
    bundle.nav["tracks"] = nav
    bundle.files.update(pages.markdown)
    bundle.fragments.update(pages.fragments)
