"""The gtr-t5 embedder: T5 encoder -> mean pooling -> Dense (no bias, identity) -> L2 normalise.

This is how sentence-transformers/gtr-t5-base is built (its modules.json: Transformer(T5EncoderModel),
Pooling(mean), Dense(768 -> 768, bias False, activation Identity), Normalize), run through the
shared Embedder of reconbench.text.embedding with the dense layer plugged in. Weights come from
safetensors only.

Two folder layouts are read:

- sentence-transformers' (the base on the Hub): config.json + model.safetensors (T5EncoderModel),
  2_Dense/config.json + 2_Dense/model.safetensors (`linear.weight`), tokenizer.json.
- ours (a fine-tuned target, what the text zoo publishes under `embedder/`): config.json
  {"architecture": "gtr-t5", "t5": T5Config, "dense": {in_features, out_features}, "max_length"},
  model.safetensors (the encoder's tensors and `dense.weight`), tokenizer.json, special_tokens_map.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from reconbench.core.io import atomic_path
from reconbench.text.embedding import Embedder, EmbeddingError, load_fast_tokenizer, read_json

FORMAT = "gtr-t5"
WEIGHTS = "model.safetensors"
T5_SPECIAL = {"pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>"}
# The input-embedding matrix is stored once (as `shared.weight`); the encoder's copy is tied to it.
TIED = "encoder.embed_tokens.weight"


def _load_state(path: Path) -> dict[str, torch.Tensor]:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise EmbeddingError(f"{path}: not a readable safetensors file ({exc})") from None


def build_encoder(t5_config: dict, state: dict[str, torch.Tensor], where: Path):
    """A transformers T5EncoderModel (float32, eval) holding exactly the tensors of `state`."""
    from transformers import T5Config, T5EncoderModel

    try:
        model = T5EncoderModel(T5Config(**t5_config))
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"{where}: not a T5 config ({exc})") from None
    expected = set(model.state_dict())
    missing = sorted(expected - set(state) - {TIED})
    extra = sorted(set(state) - expected)
    if missing or extra:
        raise EmbeddingError(f"{where}: does not fit the T5 encoder config (missing {missing[:3]}, unexpected {extra[:3]})")
    try:
        model.load_state_dict({k: v.float() for k, v in state.items()}, strict=False)
    except RuntimeError as exc:
        raise EmbeddingError(f"{where}: does not fit its config ({str(exc).splitlines()[-1].strip()})") from None
    model.tie_weights()
    return model.float().eval()


def _dense(weight: torch.Tensor, where: Path) -> torch.nn.Linear:
    if weight.ndim != 2:
        raise EmbeddingError(f"{where}: the dense weight must be a matrix, got shape {tuple(weight.shape)}")
    dense = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False)
    with torch.no_grad():
        dense.weight.copy_(weight.float())
    return dense


def _check_dense_config(config: dict, where: Path) -> None:
    activation = config.get("activation_function", "torch.nn.modules.linear.Identity")
    if config.get("bias", False) or activation != "torch.nn.modules.linear.Identity":
        raise EmbeddingError(f"{where}: gtr-t5's Dense layer has no bias and an identity activation, "
                             f"got bias={config.get('bias')}, activation={activation}")


def _tokenizer(folder: Path, max_length: int):
    tokenizer = load_fast_tokenizer(folder, max_length=max_length)
    for key, token in T5_SPECIAL.items():
        if getattr(tokenizer, key) is None:
            setattr(tokenizer, key, token)
    return tokenizer


def load_sentence_transformers_gtr(folder: Path, *, max_length: int, device: str = "cpu") -> Embedder:
    """gtr-t5 from sentence-transformers' folder layout (the Hub base), e.g. a gtr-t5-base snapshot."""
    folder = Path(folder)
    dense_dir = folder / "2_Dense"
    _check_dense_config(read_json(dense_dir / "config.json"), dense_dir / "config.json")
    dense_state = _load_state(dense_dir / WEIGHTS)
    if set(dense_state) != {"linear.weight"}:
        raise EmbeddingError(f"{dense_dir / WEIGHTS}: expected exactly `linear.weight`, got {sorted(dense_state)[:3]}")
    t5 = read_json(folder / "config.json")
    encoder = build_encoder(t5, _load_state(folder / WEIGHTS), folder / WEIGHTS)
    return Embedder(encoder, _tokenizer(folder, max_length), max_length=max_length,
                    dense=_dense(dense_state["linear.weight"], dense_dir / WEIGHTS), device=device, name="gtr-t5")


def load_gtr_folder(folder: Path, device: str = "cpu") -> Embedder:
    """gtr-t5 from our folder layout (a published target's `embedder/`); files are checked by the caller."""
    folder = Path(folder)
    config = read_json(folder / "config.json")
    if config.get("architecture") != FORMAT or not isinstance(config.get("t5"), dict):
        raise EmbeddingError(f"{folder / 'config.json'}: not a {FORMAT} embedder config")
    state = _load_state(folder / WEIGHTS)
    weight = state.pop("dense.weight", None)
    if weight is None:
        raise EmbeddingError(f"{folder / WEIGHTS}: no `dense.weight` (gtr-t5's projection)")
    max_length = int(config.get("max_length", 0))
    if max_length < 1:
        raise EmbeddingError(f"{folder / 'config.json'}: max_length must be a positive integer")
    encoder = build_encoder(config["t5"], state, folder / WEIGHTS)
    return Embedder(encoder, _tokenizer(folder, max_length), max_length=max_length,
                    dense=_dense(weight, folder / WEIGHTS), device=device, name="gtr-t5")


def save_gtr_folder(embedder: Embedder, folder: Path, *, extra: dict | None = None) -> Path:
    """Write `embedder` in our layout (atomically, file by file); returns the weight file's path."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in embedder.model.state_dict().items() if k != TIED}
    state["dense.weight"] = embedder.dense.weight.detach().cpu().contiguous()
    config = {"architecture": FORMAT, "t5": embedder.model.config.to_diff_dict(),
              "dense": {"in_features": embedder.dense.in_features, "out_features": embedder.dense.out_features,
                        "bias": False, "activation_function": "torch.nn.modules.linear.Identity"},
              "max_length": embedder.max_length, "pooling": "mean", "normalize": True, **(extra or {})}
    config["t5"].pop("transformers_version", None)  # the bytes must not depend on the installed version
    with atomic_path(folder / WEIGHTS) as tmp:
        save_file(state, str(tmp))
    with atomic_path(folder / "config.json") as tmp:
        tmp.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tok = embedder.tokenizer
    with atomic_path(folder / "tokenizer.json") as tmp:
        tok.backend_tokenizer.save(str(tmp))
    with atomic_path(folder / "special_tokens_map.json") as tmp:
        tmp.write_text(json.dumps({k: getattr(tok, k) for k in T5_SPECIAL}, sort_keys=True) + "\n", encoding="utf-8")
    return folder / WEIGHTS
