"""The lee-news embedder target: the BitFit delta loads onto the pinned MiniLM and moves its embedding."""

from __future__ import annotations

import pytest
import torch

from reconbench.text.embedder_recipe import DELTA_FILE, apply_delta, is_delta_parameter
from reconbench.text.files import load_embedder, load_text_splits
from reconbench.text.minilm import load_minilm
from reconbench.text.tracks import get_text_track
from reconbench.core.tracks import TrackError


def test_embedder_delta_moves_the_embedding_and_only_biases():
    track = get_text_track("lee-news")
    texts = load_text_splits(track, ["target"])["target"].texts[:24]
    base, tuned = load_minilm(), load_embedder(track)
    cos = (base.encode(texts) * tuned.encode(texts)).sum(1)
    assert cos.max() < 1 - 1e-4 and cos.mean() > 0.5  # moved, still the same space
    changed = {n for n, p in tuned.model.state_dict().items()
               if not torch.equal(p, base.model.state_dict()[n])}
    assert changed and all(is_delta_parameter(n) for n in changed)
    assert tuned.encode(texts).norm(dim=1).sub(1).abs().max() < 1e-5


def test_a_delta_touching_a_weight_matrix_is_refused(tmp_path):
    base = load_minilm()
    name = "encoder.layer.0.attention.self.query.weight"
    with pytest.raises(TrackError, match=f"'{name}' is not a bias or LayerNorm parameter"):
        apply_delta(base, {name: torch.zeros(384, 384)}, tmp_path / DELTA_FILE)
    with pytest.raises(TrackError, match="has shape"):
        apply_delta(base, {"encoder.layer.0.output.dense.bias": torch.zeros(3)}, tmp_path / DELTA_FILE)


def test_a_forged_delta_pin_is_refused_before_anything_loads():
    track = get_text_track("lee-news")
    emb = track.model("embedder")
    forged = track.model_copy(update={"embedder": emb.model_copy(update={"files": {DELTA_FILE: "f" * 64}})})
    with pytest.raises(TrackError, match=f"{DELTA_FILE}: sha256 is .* the registry pins f{{64}}"):
        load_embedder(forged)
