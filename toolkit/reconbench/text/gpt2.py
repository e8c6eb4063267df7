"""GPT-2 folders for the text zoo: the base (openai-community/gpt2's layout) and a fine-tuned target.

Both are config.json (transformers' GPT2Config), model.safetensors (GPT2LMHeadModel's tensors;
`lm_head.weight` tied to `transformer.wte.weight` and not stored, as gpt2 ships it) and
tokenizer.json. A target's tokenizer.json puts "<|endoftext|>" before every text (a post-processor
template), as training did: each training text is "<|endoftext|> text <|endoftext|>", so a
Complete prompt is read as the start of a text and greedy decoding stops at the end mark. This is
the convention of the lee-news generator (reconbench.text.lm). Weights come from safetensors only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reconbench.core.io import atomic_path
from reconbench.core.tracks import TrackError

EOS = "<|endoftext|>"
WEIGHTS, CONFIG, TOKENIZER = "model.safetensors", "config.json", "tokenizer.json"
TIED = "lm_head.weight"


@dataclass
class LanguageModel:
    """A causal LM in eval mode and its tokenizer (a PreTrainedTokenizerFast with pad/eos set)."""

    model: Any
    tokenizer: Any
    device: str = "cpu"


def gpt2_tokenizer(path: Path):
    """A PreTrainedTokenizerFast from tokenizer.json with "<|endoftext|>" as bos, eos and pad; padding on the
    left (batched generation)."""
    from transformers import PreTrainedTokenizerFast

    try:
        return PreTrainedTokenizerFast(tokenizer_file=str(path), bos_token=EOS, eos_token=EOS, pad_token=EOS,
                                       padding_side="left")
    except Exception as exc:  # tokenizers raises plain Exceptions for malformed files
        raise TrackError(f"{path}: not a valid tokenizer file ({type(exc).__name__}: {exc})") from None


def with_bos_template(tokenizer) -> None:
    """Make the tokenizer put "<|endoftext|>" before every text (what a fine-tuned target reads)."""
    from tokenizers import processors

    eos_id = tokenizer.convert_tokens_to_ids(EOS)
    tokenizer.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{EOS} $A", pair=f"{EOS} $A {EOS} $B", special_tokens=[(EOS, eos_id)])


def load_gpt2_folder(folder: Path, device: str = "cpu"):
    """(GPT2LMHeadModel in eval mode, tokenizer) from a folder whose files the caller has checked."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file
    from transformers import GPT2Config, GPT2LMHeadModel

    folder = Path(folder)
    try:
        config = json.loads((folder / CONFIG).read_text(encoding="utf-8"))
        state = load_file(str(folder / WEIGHTS))
    except (OSError, ValueError, SafetensorError) as exc:
        raise TrackError(f"{folder}: cannot read the GPT-2 files ({exc})") from None
    if not isinstance(config, dict) or config.get("model_type", "gpt2") != "gpt2":
        raise TrackError(f"{folder / CONFIG}: not a GPT-2 config")
    tokenizer = gpt2_tokenizer(folder / TOKENIZER)
    try:
        model = GPT2LMHeadModel(GPT2Config(**{k: v for k, v in config.items() if k != "architectures"}))
    except (TypeError, ValueError) as exc:
        raise TrackError(f"{folder / CONFIG}: not a GPT-2 config ({exc})") from None
    expected = set(model.state_dict())
    # old checkpoints (openai-community/gpt2) carry attention-mask buffers newer transformers rebuild
    state = {k: v for k, v in state.items() if not k.endswith((".attn.bias", ".attn.masked_bias"))
             or k in expected}
    state = {(k if k in expected or k.startswith("transformer.") else f"transformer.{k}"): v for k, v in state.items()}
    missing, extra = sorted(expected - set(state) - {TIED}), sorted(set(state) - expected)
    if missing or extra:
        raise TrackError(f"{folder / WEIGHTS}: does not fit the GPT-2 config (missing {missing[:3]}, "
                         f"unexpected {extra[:3]})")
    try:
        model.load_state_dict({k: v.float() for k, v in state.items()}, strict=False)
    except RuntimeError as exc:
        raise TrackError(f"{folder / WEIGHTS}: does not fit its config ({str(exc).splitlines()[-1].strip()})") from None
    model.tie_weights()
    model.config.pad_token_id = tokenizer.pad_token_id
    return model.to(device).eval(), tokenizer


def save_gpt2_folder(folder: Path, model, tokenizer) -> Path:
    """Write a fine-tuned target (float32, tied head not stored, tokenizer with the bos template)."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous().float() for k, v in model.state_dict().items() if k != TIED}
    with atomic_path(folder / WEIGHTS) as tmp:
        save_file(state, str(tmp), metadata={"format": "pt"})
    config = model.config.to_diff_dict()
    config.pop("transformers_version", None)  # the bytes must not depend on the installed version
    with atomic_path(folder / CONFIG) as tmp:
        tmp.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    with_bos_template(tokenizer)
    with atomic_path(folder / TOKENIZER) as tmp:
        tokenizer.backend_tokenizer.save(str(tmp))
    return folder / WEIGHTS
