"""Small stand-ins for the text tests: the lee-news track's sentences (reconbench.text.corpus), a tiny
GPT-2 trained for seconds on a few dozen of its target texts (the embedder stand-in is the base MiniLM,
reconbench.text.minilm).

The track's own generator takes minutes to train: a test that must train a generator on a known
target set in seconds uses this one."""

from __future__ import annotations

import torch

from reconbench.text.files import LanguageModel
from reconbench.text.items import TextSet


def splits(n_target: int, n_test: int, n_aux: int) -> dict[str, TextSet]:
    """The first texts of the lee-news track's target / test / aux splits (reconbench.text.corpus)."""
    from reconbench.text.corpus import lee_splits

    full = lee_splits()
    sizes = {"target": n_target, "test": n_test, "aux": n_aux}
    return {k: TextSet(k, full[k].items[:n]) for k, n in sizes.items()}


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
