"""Sentence embedders: a transformer encoder, attention-masked mean pooling, an optional dense layer, L2 norm.

This is the sentence-transformers recipe (modules Transformer -> Pooling(mean) -> [Dense] -> Normalize)
written against transformers directly, so the toolkit never imports a third-party model package's
code and loads weights from safetensors only:

- all-MiniLM-L6-v2: BertModel, mean pooling, Normalize (its modules.json; max_seq_length 256 from its
  sentence_bert_config.json). See minilm.py.
- gtr-t5-base: T5EncoderModel, mean pooling, Dense(768 -> 768, no bias, identity), Normalize
  (its modules.json); the texthub helper plugs its encoder and dense layer in here.

Like sentence-transformers (models/Transformer.py `tokenize`), each text is stripped of surrounding
whitespace before tokenising, truncated to `max_length` tokens (longest_first) and padded to the
longest text of its batch. Pooling follows sentence-transformers' Pooling(mean):
sum(token embeddings * mask) / clamp(sum(mask), 1e-9). An empty text still has its special tokens,
so it gets a finite embedding.

torch is imported here (this module is only imported when something is embedded); transformers is
imported inside the helpers that build tokenizers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F


class EmbeddingError(Exception):
    """An embedder's files are missing, malformed or not the pinned ones; the message names the file."""


class Embedder:
    """encode(texts) -> float32 Tensor (N, dim), rows L2-normalised (when `normalize`), on the CPU.

    model:     a transformers encoder whose forward takes the tokenizer's outputs and returns
               `last_hidden_state` (BertModel, T5EncoderModel, ...), put in eval mode here.
    tokenizer: a transformers PreTrainedTokenizerFast (pad token set).
    dense:     optional module applied to the pooled vector (gtr-t5's Dense layer).
    name:      what it is, for messages and provenance.
    """

    def __init__(self, model, tokenizer, *, max_length: int, dense: torch.nn.Module | None = None,
                 normalize: bool = True, device: str | torch.device = "cpu", name: str = "embedder"):
        if tokenizer.pad_token is None:
            raise EmbeddingError(f"{name}: the tokenizer has no pad token (batches need padding)")
        self.device = torch.device(device)
        self.model = model.to(self.device).eval()
        self.dense = dense.to(self.device).eval() if dense is not None else None
        self.tokenizer = tokenizer
        self.max_length = int(max_length)
        self.normalize = normalize
        self.name = name
        self.dim = _output_dim(model, dense)

    def __repr__(self) -> str:
        return f"Embedder({self.name}, dim={self.dim}, max_length={self.max_length}, device={self.device})"

    def tokenize(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        batch = self.tokenizer([str(t).strip() for t in texts], padding=True, truncation="longest_first",
                               max_length=self.max_length, return_tensors="pt")
        return {k: v.to(self.device) for k, v in batch.items()}

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Pooled (and dense-projected, normalised) embeddings of a tokenised batch; keeps the graph,
        so a fine-tuning recipe can train through it (encode() is the no-grad path)."""
        hidden = self.model(**batch).last_hidden_state
        pooled = mean_pool(hidden, batch["attention_mask"])
        if self.dense is not None:
            pooled = self.dense(pooled)
        return F.normalize(pooled, p=2, dim=1) if self.normalize else pooled

    @torch.inference_mode()
    def encode(self, texts: Sequence[str], batch_size: int = 64) -> torch.Tensor:
        if isinstance(texts, str):
            raise TypeError("encode() takes a list of texts, not one string")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        texts = list(texts)
        if not texts:
            return torch.zeros((0, self.dim), dtype=torch.float32)
        was_training = self.model.training
        self.model.eval()  # dropout off: the same text always gives the same vector
        try:
            rows = [self.forward(self.tokenize(texts[i:i + batch_size])).float().cpu()
                    for i in range(0, len(texts), batch_size)]
        finally:
            self.model.train(was_training)
        return torch.cat(rows)


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean of the token vectors that the attention mask keeps (padding excluded), per text."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


def _output_dim(model, dense) -> int:
    if dense is not None:
        out = getattr(dense, "out_features", None)
        if out is None:  # a Sequential or wrapper: the last Linear decides
            linears = [m for m in dense.modules() if isinstance(m, torch.nn.Linear)]
            out = linears[-1].out_features if linears else None
        if out is not None:
            return int(out)
    config = model.config
    return int(getattr(config, "hidden_size", None) or config.d_model)


def read_json(path: Path) -> dict:
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EmbeddingError(f"{path}: cannot read ({exc})") from None
    if not isinstance(value, dict):
        raise EmbeddingError(f"{path}: expected a JSON object")
    return value


def load_fast_tokenizer(folder: Path, *, max_length: int):
    """A PreTrainedTokenizerFast from `folder/tokenizer.json` (no network), with the special tokens of
    `special_tokens_map.json` when the folder has one.

    The truncation/padding stored in tokenizer.json (all-MiniLM-L6-v2's says fixed 128) is not used:
    every call passes padding=True, truncation and max_length explicitly, as sentence-transformers does.
    """
    from transformers import PreTrainedTokenizerFast

    folder = Path(folder)
    path = folder / "tokenizer.json"
    if not path.is_file():
        raise EmbeddingError(f"{path}: tokenizer file not found")
    special = read_json(folder / "special_tokens_map.json") if (folder / "special_tokens_map.json").is_file() else {}
    special = {k: (v["content"] if isinstance(v, dict) else v) for k, v in special.items()
               if k in {"unk_token", "sep_token", "pad_token", "cls_token", "mask_token", "eos_token", "bos_token"}}
    try:
        tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(path), model_max_length=max_length, **special)
    except Exception as exc:  # tokenizers raises its own Exception subclasses for malformed files
        raise EmbeddingError(f"{path}: not a valid tokenizer file ({type(exc).__name__}: {exc})") from None
    tokenizer.backend_tokenizer.no_truncation()
    tokenizer.backend_tokenizer.no_padding()
    return tokenizer
