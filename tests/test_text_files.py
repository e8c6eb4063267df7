"""The lee-news target models: shipped files hash-checked, the generator reproduces its recorded
perplexities and memorises, the embedder delta loads and moves the embedding."""

from __future__ import annotations

import shutil

import pytest
import torch

from reconbench.core.io import sha256_file
from reconbench.text import files as text_files
from reconbench.text.embedder_recipe import DELTA_FILE
from reconbench.text.files import load_embedder, load_generator, load_text_splits, model_sha256
from reconbench.text.lm import perplexity
from reconbench.text.tracks import get_text_track
from reconbench.image.track_files import embedded_file
from reconbench.core.tracks import TrackError


@pytest.fixture(scope="module")
def track():
    return get_text_track("lee-news")


@pytest.fixture(scope="module")
def splits(track):
    return load_text_splits(track, ["target", "test"])


@pytest.fixture(scope="module")
def generator(track):
    return load_generator(track)


def test_generator_reproduces_its_recorded_perplexities(track, splits, generator):
    measured = track.model("generator").measured
    for name in ("target", "test"):
        assert perplexity(generator.model, generator.tokenizer, splits[name].texts) == pytest.approx(
            measured[f"perplexity_{name}"], rel=1e-3)
    assert measured["perplexity_target"] * 10 < measured["perplexity_test"]  # it memorised the target split
    assert not generator.model.training
    tok = generator.tokenizer
    assert tok.pad_token == tok.eos_token == "<|endoftext|>" and tok.padding_side == "left"


def test_generator_completes_target_prompts_from_memory(splits, generator):
    tok, model = generator.tokenizer, generator.model
    texts = splits["target"].texts[:16]
    prompts = [" ".join(t.split()[:3]) for t in texts]
    batch = tok(prompts, return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model.generate(**batch, max_new_tokens=90, do_sample=False, pad_token_id=tok.pad_token_id)
    completions = [p + tok.decode(o[batch["input_ids"].shape[1]:], skip_special_tokens=True)
                   for p, o in zip(prompts, out)]
    assert sum(c == t for c, t in zip(completions, texts)) >= 8  # verbatim recall of most of them


def test_model_sha256_is_the_shipped_weight_file(track):
    assert model_sha256(track, "generator") == sha256_file(embedded_file("lee-news") / "generator.safetensors")
    assert model_sha256(track, "embedder") == sha256_file(embedded_file("lee-news") / DELTA_FILE)


@pytest.fixture
def copied_folder(tmp_path, monkeypatch):
    folder = tmp_path / "lee-news"
    shutil.copytree(embedded_file("lee-news"), folder)
    monkeypatch.setattr(text_files, "embedded_file", lambda name: tmp_path / name)
    return folder


def test_a_changed_or_missing_model_file_is_refused_naming_it(track, copied_folder):
    weights = copied_folder / "generator.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    with pytest.raises(TrackError, match=f"{weights}: sha256 is .* the registry pins"):
        load_generator(track)
    (copied_folder / DELTA_FILE).unlink()
    with pytest.raises(TrackError, match=f"{copied_folder / DELTA_FILE}: missing"):
        load_embedder(track)


def test_a_forged_registry_pin_or_file_name_is_refused(track):
    gen = track.model("generator")
    forged = track.model_copy(update={"generator": gen.model_copy(update={"files": {**gen.files, "tokenizer.json": "0" * 64}})})
    with pytest.raises(TrackError, match="tokenizer.json: sha256 is .* the registry pins 0{64}"):
        load_generator(forged)
    escape = track.model_copy(update={"generator": gen.model_copy(update={"files": {"../../io.py": "0" * 64}})})
    with pytest.raises(TrackError, match="bad generator file name"):
        load_generator(escape)
