"""Vec2Text's two networks (Morris et al., EMNLP 2023, §3-4), on transformers' T5.

Read from the `vec2text` package (0.0.13, models/inversion.py and models/corrector_encoder.py) to
follow its shapes, written anew here:
- InversionModel: embedding -> MLP (Linear d->d, dropout, GELU, Linear d->hidden*R) -> R pseudo-token
  vectors fed to the T5 encoder as inputs_embeds; the decoder generates the text (vec2text's
  "repeat" embedding transform, R = num_repeat_tokens).
- CorrectorModel: three such MLPs (no dropout) for the target embedding e, the hypothesis embedding
  ê and their difference e - ê, each R pseudo-tokens, separated by the eos token's embedding and
  followed by the hypothesis' own token embeddings, then a LayerNorm; the decoder generates the
  corrected text.
The tokenizer is the decoder's: a byte-level BPE trained on the attacker's aux texts for a T5 from
scratch (cased, small vocabulary), or t5-base's own with pretrained weights.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

PAD, EOS, UNK = "<pad>", "</s>", "<unk>"  # T5's special tokens: pad (id 0) also starts the decoder


def train_bpe(texts: list[str], vocab_size: int) -> Any:
    """A byte-level BPE (GPT-2's scheme) trained on the aux texts, wrapped as a transformers tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=[PAD, EOS, UNK], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=PAD, eos_token=EOS, unk_token=UNK)


def encode_labels(tokenizer: Any, texts: list[str], max_length: int) -> torch.Tensor:
    """Token ids + eos, truncated to max_length, right-padded with pad (T5's label layout)."""
    rows = [tokenizer(t, add_special_tokens=False)["input_ids"][: max_length - 1] + [tokenizer.eos_token_id] for t in texts]
    width = max(len(r) for r in rows)
    out = torch.full((len(rows), width), tokenizer.pad_token_id, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r, dtype=torch.long)
    return out


def new_t5(vocab_size: int, d_model: int, layers: int, heads: int, dropout: float, pad_id: int, eos_id: int):
    """A T5 from scratch: T5-base's layout (relu FFN of 4 x d_model, d_kv = d_model / heads) shrunk."""
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(
        vocab_size=vocab_size, d_model=d_model, d_kv=d_model // heads, d_ff=4 * d_model, num_layers=layers,
        num_decoder_layers=layers, num_heads=heads, dropout_rate=dropout, pad_token_id=pad_id, eos_token_id=eos_id,
        decoder_start_token_id=pad_id, tie_word_embeddings=True,
    )
    return T5ForConditionalGeneration(config)


def _transform(dim: int, hidden: int, repeat: int, dropout: float) -> nn.Sequential:
    return nn.Sequential(nn.Linear(dim, dim), nn.Dropout(dropout), nn.GELU(), nn.Linear(dim, hidden * repeat))


def _generate(t5, inputs_embeds, mask, max_length: int, beams: int) -> torch.Tensor:
    return t5.generate(
        inputs_embeds=inputs_embeds, attention_mask=mask, max_length=max_length, num_beams=beams,
        num_return_sequences=beams, do_sample=False, early_stopping=beams > 1,
    )


class InversionModel(nn.Module):
    def __init__(self, t5: nn.Module, embed_dim: int, repeat: int):
        super().__init__()
        self.t5, self.repeat = t5, repeat
        self.hidden = t5.config.d_model
        self.transform = _transform(embed_dim, self.hidden, repeat, t5.config.dropout_rate)

    def encoder_inputs(self, emb: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.transform(emb).reshape(emb.shape[0], self.repeat, self.hidden)
        return x, torch.ones(x.shape[:2], dtype=torch.long, device=x.device)

    def loss(self, emb: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x, mask = self.encoder_inputs(emb)
        return self.t5(inputs_embeds=x, attention_mask=mask, labels=labels.masked_fill(labels == self.t5.config.pad_token_id, -100)).loss

    @torch.no_grad()
    def generate(self, emb: torch.Tensor, max_length: int, beams: int = 1) -> torch.Tensor:
        x, mask = self.encoder_inputs(emb)
        return _generate(self.t5, x, mask, max_length, beams)


class CorrectorModel(nn.Module):
    def __init__(self, t5: nn.Module, embed_dim: int, repeat: int):
        super().__init__()
        self.t5, self.repeat = t5, repeat
        self.hidden = t5.config.d_model
        # vec2text's corrector sets use_ff_dropout = False: no dropout in its three transforms.
        self.target_t = _transform(embed_dim, self.hidden, repeat, 0.0)
        self.diff_t = _transform(embed_dim, self.hidden, repeat, 0.0)
        self.hyp_t = _transform(embed_dim, self.hidden, repeat, 0.0)
        self.norm = nn.LayerNorm(self.hidden)

    def encoder_inputs(self, emb, hyp_emb, hyp_ids, hyp_mask) -> tuple[torch.Tensor, torch.Tensor]:
        n = emb.shape[0]
        shape = (n, self.repeat, self.hidden)
        parts = [self.target_t(emb).reshape(shape), self.hyp_t(hyp_emb).reshape(shape), self.diff_t(emb - hyp_emb).reshape(shape)]
        embed = self.t5.get_input_embeddings()
        sep = embed(torch.full((n, 1), self.t5.config.eos_token_id, dtype=torch.long, device=emb.device))
        x = torch.cat([sep, parts[0], sep, parts[1], sep, parts[2], sep, embed(hyp_ids)], dim=1)
        ones = torch.ones((n, 4 + 3 * self.repeat), dtype=torch.long, device=emb.device)
        return self.norm(x), torch.cat([ones, hyp_mask.long()], dim=1)

    def loss(self, emb, hyp_emb, hyp_ids, hyp_mask, labels) -> torch.Tensor:
        x, mask = self.encoder_inputs(emb, hyp_emb, hyp_ids, hyp_mask)
        return self.t5(inputs_embeds=x, attention_mask=mask, labels=labels.masked_fill(labels == self.t5.config.pad_token_id, -100)).loss

    @torch.no_grad()
    def generate(self, emb, hyp_emb, hyp_ids, hyp_mask, max_length: int, beams: int = 1) -> torch.Tensor:
        x, mask = self.encoder_inputs(emb, hyp_emb, hyp_ids, hyp_mask)
        return _generate(self.t5, x, mask, max_length, beams)
