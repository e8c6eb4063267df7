"""Tiny stand-ins for the text zoo's Hub sources (built in a second on the CPU, no network):

- `toy_texts(n)`: deterministic short English-like sentences;
- `write_parquet_dataset`: a Hub-style dataset folder (`data/train-00000-of-00001.parquet`, ...);
- `gpt2_base_folder`: a 2-layer GPT-2 with a byte-level BPE tokenizer trained on the texts, laid out
  as openai-community/gpt2 is (config.json, model.safetensors, tokenizer.json);
- `gtr_base_folder`: a 2-layer T5 encoder + Dense laid out as sentence-transformers/gtr-t5-base is
  (modules.json, config.json, model.safetensors, 1_Pooling/, 2_Dense/, tokenizer.json).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import torch

SUBJECTS = ["the film", "this movie", "the plot", "the cast", "the ending", "our team", "the market", "the city"]
VERBS = ["is", "was", "seems", "feels", "looks", "became", "remains", "stays"]
ADJS = ["dull", "brilliant", "slow", "moving", "funny", "strange", "quiet", "bold", "warm", "cold", "bright", "long"]
TAILS = ["today", "at night", "for hours", "again", "in the end", "to me", "overall", "at first"]


def toy_texts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < n:
        t = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(ADJS)} and {rng.choice(ADJS)} {rng.choice(TAILS)}"
        if t not in out:
            out.append(t)
    return out


def write_parquet_dataset(folder: Path, files: dict[str, list[str]], column: str) -> Path:
    """Parquet files (path inside the repo -> texts), with a label column as the real ones have."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for rel, texts in files.items():
        path = Path(folder) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({column: texts, "label": [i % 2 for i in range(len(texts))]}), path)
    return Path(folder)


def _special_tokenizer_json(texts, model, trainer, pre, decoder, post=None):
    from tokenizers import Tokenizer

    tok = Tokenizer(model)
    tok.pre_tokenizer, tok.decoder = pre, decoder
    tok.train_from_iterator(texts, trainer)
    if post is not None:
        tok.post_processor = post(tok)
    return tok


def gpt2_base_folder(folder: Path, texts: list[str]) -> Path:
    from safetensors.torch import save_file
    from tokenizers import decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tok = _special_tokenizer_json(
        texts, models.BPE(), trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"],
                                                 initial_alphabet=pre_tokenizers.ByteLevel.alphabet()),
        pre_tokenizers.ByteLevel(add_prefix_space=False), decoders.ByteLevel())
    tok.save(str(folder / "tokenizer.json"))
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=tok.get_vocab_size(), n_positions=64, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=tok.token_to_id("<|endoftext|>"), eos_token_id=tok.token_to_id("<|endoftext|>"))
    model = GPT2LMHeadModel(config)
    # as openai-community/gpt2 ships it: GPT2Model's names (no "transformer."), no tied lm_head, and the
    # old causal-mask buffers h.<i>.attn.bias that newer transformers no longer keep in the state dict
    state = {k.removeprefix("transformer."): v.contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    for i in range(config.n_layer):
        state[f"h.{i}.attn.bias"] = torch.tril(torch.ones(64, 64)).view(1, 1, 64, 64)
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    d = config.to_diff_dict()
    d.pop("transformers_version", None)
    (folder / "config.json").write_text(json.dumps(d, indent=2, sort_keys=True))
    return folder


def gtr_base_folder(folder: Path, texts: list[str]) -> Path:
    from safetensors.torch import save_file
    from tokenizers import decoders, models, pre_tokenizers, processors, trainers
    from transformers import T5Config, T5EncoderModel

    folder = Path(folder)
    (folder / "1_Pooling").mkdir(parents=True, exist_ok=True)
    (folder / "2_Dense").mkdir(parents=True, exist_ok=True)

    def post(tok):
        return processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>",
                                             special_tokens=[("</s>", tok.token_to_id("</s>"))])

    tok = _special_tokenizer_json(
        texts, models.Unigram(), trainers.UnigramTrainer(vocab_size=120, special_tokens=["<pad>", "</s>", "<unk>"],
                                                         unk_token="<unk>"),
        pre_tokenizers.Metaspace(), decoders.Metaspace(), post)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "special_tokens_map.json").write_text(json.dumps({"pad_token": "<pad>", "eos_token": "</s>",
                                                                "unk_token": "<unk>"}))
    torch.manual_seed(0)
    config = T5Config(vocab_size=tok.get_vocab_size(), d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2,
                      pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
    model = T5EncoderModel(config)
    state = {k: v.contiguous() for k, v in model.state_dict().items() if k != "encoder.embed_tokens.weight"}
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    d = config.to_diff_dict()
    d.pop("transformers_version", None)
    d["architectures"] = ["T5EncoderModel"]
    (folder / "config.json").write_text(json.dumps(d, indent=2, sort_keys=True))
    save_file({"linear.weight": torch.randn(24, 32) / 6}, str(folder / "2_Dense/model.safetensors"))
    (folder / "2_Dense/config.json").write_text(json.dumps({"in_features": 32, "out_features": 24, "bias": False,
                                                            "activation_function": "torch.nn.modules.linear.Identity"}))
    (folder / "1_Pooling/config.json").write_text(json.dumps({"word_embedding_dimension": 32,
                                                              "pooling_mode_mean_tokens": True}))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 32, "do_lower_case": False}))
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
        {"idx": 3, "name": "3", "path": "3_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    return folder
