"""The lee-news recipes at toy sizes (seconds): deterministic, and what they save loads back."""

from __future__ import annotations

import torch

from reconbench.text.corpus import lee_splits, lee_tokenizer_texts
from reconbench.text.embedder_recipe import EMBEDDER_TRAINING, is_delta_parameter, train_bitfit
from reconbench.text.lm import GENERATOR_TRAINING, hf_tokenizer, load_lm_files, perplexity, save_generator, train_generator, train_tokenizer
from reconbench.text.minilm import load_minilm

TINY = {"vocab_size": 400, "n_positions": 256, "n_embd": 16, "n_layer": 1, "n_head": 2,
        "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0}


def test_tokenizer_is_blind_to_target_and_test_and_deterministic():
    splits = lee_splits()
    public = set(lee_tokenizer_texts())
    assert not public & set(splits["target"].texts) and not public & set(splits["test"].texts)
    assert set(splits["aux"].texts) <= public
    texts = sorted(public)[:300]
    assert train_tokenizer(texts, 400).to_str() == train_tokenizer(texts, 400).to_str()


def test_tiny_generator_recipe_is_deterministic_and_round_trips(tmp_path):
    texts = lee_splits()["target"].texts[:24]
    tok = train_tokenizer(sorted(lee_tokenizer_texts())[:300], 400)
    (tmp_path / "t.json").write_text(tok.to_str())
    hf = hf_tokenizer(tmp_path / "t.json")
    training = {**GENERATOR_TRAINING, "epochs": 3, "batch_size": 8, "warmup_steps": 2}
    a, b = (train_generator(texts, hf, TINY, training) for _ in range(2))
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    untrained = train_generator(texts, hf, TINY, {**training, "epochs": 0})
    assert perplexity(a, hf, texts) < perplexity(untrained, hf, texts)
    files = save_generator(tmp_path / "out", a, tok.to_str(), TINY)
    loaded, _ = load_lm_files({name: tmp_path / "out" / name for name in files})
    ids = hf(texts[:2], return_tensors="pt", padding=True)
    with torch.no_grad():
        assert torch.equal(loaded(**ids).logits, a(**ids).logits)


def test_tiny_bitfit_run_moves_only_biases_and_layernorms():
    texts = lee_splits()["target"].texts[:8]
    embedder, base = load_minilm(), load_minilm()
    delta = train_bitfit(embedder, texts, {**EMBEDDER_TRAINING, "epochs": 1, "batch_size": 4})
    assert delta and all(is_delta_parameter(n) for n in delta)
    assert "encoder.layer.0.attention.self.query.bias" in delta and "encoder.layer.5.output.LayerNorm.weight" in delta
    for name, p in embedder.model.state_dict().items():
        if not is_delta_parameter(name):
            assert torch.equal(p, base.model.state_dict()[name]), name
    assert not torch.equal(embedder.encode(texts), base.encode(texts))
