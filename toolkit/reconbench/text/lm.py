"""The lee-news generator: a small GPT-2 trained from scratch on the target split, and its tokenizer.

transformers' GPT2LMHeadModel and a byte-level BPE tokenizer; `python -m reconbench.text.lm` rebuilds both.

Why from scratch and this small: the SoK fine-tunes the 124M GPT-2 for 20 epochs on 1k-20k texts;
that needs a download and hours of CPU. A 4-layer, 128-wide GPT-2 (~1.3M parameters, 5.3 MB in
float32) trained without dropout for GENERATOR_TRAINING["epochs"] epochs on the 500 target sentences
memorises most of them in minutes on one CPU thread, which is the property Complete measures.

Tokenizer: byte-level BPE (the GPT-2 scheme: ByteLevel pre-tokenizer, no prefix space), 4,096 tokens,
learnt with the `tokenizers` library from corpus.lee_tokenizer_texts() (aux and undealt documents,
never target or test text). "<|endoftext|>" is bos, eos and pad, as in GPT-2. The tokenizer's
post-processor puts "<|endoftext|>" before every text (so a prompt is read as a sentence start, the
way the model saw each training sentence); training appends it after each sentence as the end mark,
so greedy generation stops there. Padding is on the left (batched generation).

Determinism: torch.manual_seed, torch.use_deterministic_algorithms, one thread, a seeded batch order;
a rebuild on the same machine and library versions gives the same bytes (other BLAS builds may
differ in the last bits: the registry pins the shipped file, as for the digits models).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reconbench.core.io import atomic_path, sha256_file
from reconbench.text.gpt2 import EOS
from reconbench.core.tracks import TrackError

TOKENIZER_FILE = "tokenizer.json"
CONFIG_FILE = "generator-config.json"
WEIGHTS_FILE = "generator.safetensors"

# transformers.GPT2Config arguments. Dropout 0: memorisation is what the target must show, and a
# from-scratch model gets no pretrained prior to lean on (GPT-2's default is 0.1).
GENERATOR_CONFIG: dict[str, Any] = {
    "vocab_size": 4096,
    "n_positions": 128,  # longest target sentence: 82 tokens + bos + eos; leaves room for Complete's continuation
    "n_embd": 128,
    "n_layer": 4,
    "n_head": 4,
    "resid_pdrop": 0.0,
    "embd_pdrop": 0.0,
    "attn_pdrop": 0.0,
}
# AdamW with linear warm-up and cosine decay to 10%: the nanoGPT recipe for small from-scratch models
# (lr 1e-3, betas (0.9, 0.99), github.com/karpathy/nanoGPT config/train_shakespeare_char.py).
GENERATOR_TRAINING: dict[str, Any] = {
    "epochs": 60,
    "batch_size": 16,
    "lr": 1e-3,
    "betas": (0.9, 0.99),
    "weight_decay": 0.0,
    "warmup_steps": 100,
    "seed": 0,
    "threads": 1,
}


@contextmanager
def deterministic(threads: int, seed: int) -> Iterator[None]:
    """Seeded, deterministic kernels, a fixed thread count; the caller's settings come back after."""
    import torch

    old_threads, old_det = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(old_threads)
        torch.use_deterministic_algorithms(old_det)


# -- tokenizer -------------------------------------------------------------------------------------


def train_tokenizer(texts: Sequence[str], vocab_size: int) -> Any:
    """A byte-level BPE `tokenizers.Tokenizer` (deterministic for a given text list)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer)
    eos_id = tok.token_to_id(EOS)
    tok.post_processor = processors.TemplateProcessing(single=f"{EOS} $A", special_tokens=[(EOS, eos_id)])
    return tok


def hf_tokenizer(tokenizer_file: Path) -> Any:
    """The shipped tokenizer.json as a transformers PreTrainedTokenizerFast with bos/eos/pad set."""
    from reconbench.text.gpt2 import gpt2_tokenizer

    return gpt2_tokenizer(tokenizer_file)


def encode_sentences(tokenizer: Any, texts: Sequence[str], max_len: int) -> list[list[int]]:
    """bos + text + eos for each text; a text longer than the model's context is an error."""
    eos = tokenizer.eos_token_id
    out = []
    for text in texts:
        ids = tokenizer(text)["input_ids"] + [eos]
        if len(ids) > max_len:
            raise TrackError(f"a text of {len(ids)} tokens exceeds the generator's context of {max_len}: {text[:60]!r}")
        out.append(ids)
    return out


def _batch(rows: Sequence[list[int]], pad: int) -> tuple[Any, Any, Any]:
    """Right-padded input ids, attention mask and labels (-100 on padding) for teacher forcing."""
    import torch

    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
        mask[i, : len(r)] = 1
    return ids, mask, ids.masked_fill(mask == 0, -100)


def _length_batches(rows: Sequence[list[int]], batch_size: int, gen: Any) -> list[list[int]]:
    """A seeded epoch order in which each batch holds texts of similar length: the permutation is
    cut into pools of 8 batches, each pool sorted by length and cut into batches, and the batches
    shuffled (about half the padding of random batches, and padding is wasted compute)."""
    import torch

    order = torch.randperm(len(rows), generator=gen).tolist()
    pool = 8 * batch_size
    batches = []
    for start in range(0, len(order), pool):
        chunk = sorted(order[start : start + pool], key=lambda i: len(rows[i]))
        batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    return [batches[i] for i in torch.randperm(len(batches), generator=gen).tolist()]


# -- model -----------------------------------------------------------------------------------------


def new_generator(config: dict[str, Any], eos_id: int) -> Any:
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(GPT2Config(**config, bos_token_id=eos_id, eos_token_id=eos_id, pad_token_id=eos_id))


def perplexity(model: Any, tokenizer: Any, texts: Sequence[str], batch_size: int = 64) -> float:
    """exp of the mean next-token loss over every token after bos (the eos included), in eval mode."""
    import torch
    import torch.nn.functional as F

    rows = encode_sentences(tokenizer, texts, model.config.n_positions)
    device = next(model.parameters()).device
    total, count = 0.0, 0
    model.eval()
    with torch.no_grad():
        for start in range(0, len(rows), batch_size):
            ids, mask, labels = (t.to(device) for t in _batch(rows[start : start + batch_size], tokenizer.pad_token_id))
            logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
            target = labels[:, 1:]
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), ignore_index=-100, reduction="sum")
            total += float(loss)
            count += int((target != -100).sum())
    return math.exp(total / count)


def greedy_recall(model: Any, tokenizer: Any, texts: Sequence[str], prompt_words: int = 3, batch_size: int = 64) -> float:
    """Share of texts the model reproduces verbatim, greedily, from their first `prompt_words` words:
    a memorisation figure of the target itself (Complete's setting, Carlini et al. 2021), recorded
    for target and test so the gap shows what was memorised rather than predicted."""
    import torch

    hits = 0
    for start in range(0, len(texts), batch_size):
        chunk = list(texts[start : start + batch_size])
        prompts = [" ".join(t.split()[:prompt_words]) for t in chunk]
        batch = tokenizer(prompts, return_tensors="pt", padding=True).to(next(model.parameters()).device)
        room = model.config.n_positions - batch["input_ids"].shape[1]
        with torch.no_grad():
            out = model.generate(**batch, max_new_tokens=room, do_sample=False, pad_token_id=tokenizer.pad_token_id)
        tails = tokenizer.batch_decode(out[:, batch["input_ids"].shape[1] :], skip_special_tokens=True)
        hits += sum(p + tail == t for p, tail, t in zip(prompts, tails, chunk))
    return hits / len(texts)


def train_generator(
    texts: Sequence[str],
    tokenizer: Any,
    config: dict[str, Any] = GENERATOR_CONFIG,
    training: dict[str, Any] = GENERATOR_TRAINING,
    progress: Callable[[str], None] | None = None,
) -> Any:
    """GPT-2 from scratch on `texts` (teacher forcing, every token after bos predicted)."""
    with deterministic(training["threads"], training["seed"]):
        return _train(texts, tokenizer, config, training, progress)


def _train(texts: Sequence[str], tokenizer: Any, config: dict[str, Any], training: dict[str, Any],
           progress: Callable[[str], None] | None) -> Any:
    import torch

    model = new_generator(config, tokenizer.eos_token_id)
    rows = encode_sentences(tokenizer, texts, config["n_positions"])
    bs = training["batch_size"]
    steps_per_epoch = len(_length_batches(rows, bs, torch.Generator()))
    total = training["epochs"] * steps_per_epoch
    opt = torch.optim.AdamW(
        model.parameters(), lr=training["lr"], betas=tuple(training["betas"]), weight_decay=training["weight_decay"]
    )
    warm = training["warmup_steps"]

    def lr_at(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return 0.1 + 0.45 * (1 + math.cos(math.pi * (step - warm) / max(1, total - warm)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    gen = torch.Generator().manual_seed(training["seed"])
    model.train()
    step = 0
    for epoch in range(training["epochs"]):
        epoch_loss = 0.0
        for batch in _length_batches(rows, bs, gen):
            ids, mask, labels = _batch([rows[i] for i in batch], tokenizer.pad_token_id)
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            epoch_loss += float(loss.detach())
        if progress and (epoch % 5 == 4 or epoch == training["epochs"] - 1):
            progress(f"epoch {epoch + 1}/{training['epochs']}: mean loss {epoch_loss / steps_per_epoch:.4f}")
    model.eval()
    return model


# -- files -----------------------------------------------------------------------------------------


def save_generator(folder: Path, model: Any, tokenizer_json: str, config: dict[str, Any]) -> dict[str, str]:
    """tokenizer.json, generator-config.json, generator.safetensors (float32; lm_head is tied to wte
    and not stored) written atomically; returns file name -> sha256."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(folder / TOKENIZER_FILE) as tmp:
        tmp.write_text(tokenizer_json, encoding="utf-8")
    with atomic_path(folder / CONFIG_FILE) as tmp:
        tmp.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    state = {k: v.detach().contiguous().float() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    with atomic_path(folder / WEIGHTS_FILE) as tmp:
        save_file(state, str(tmp), metadata={"format": "pt"})
    return {name: sha256_file(folder / name) for name in (CONFIG_FILE, TOKENIZER_FILE, WEIGHTS_FILE)}


def load_lm_files(files: dict[str, Path], device: str = "cpu") -> tuple[Any, Any]:
    """(model in eval mode on `device`, tokenizer) from the generator's (already hash-checked) files:
    safetensors and JSON only, never pickle."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    for name in (CONFIG_FILE, TOKENIZER_FILE, WEIGHTS_FILE):
        if name not in files:
            raise TrackError(f"{name}: not among the generator's files")
    try:
        config = json.loads(Path(files[CONFIG_FILE]).read_text(encoding="utf-8"))
        state = load_file(str(files[WEIGHTS_FILE]))
    except (OSError, ValueError, SafetensorError) as exc:
        raise TrackError(f"{files[WEIGHTS_FILE].parent}: cannot read the generator files ({exc})") from None
    tokenizer = hf_tokenizer(files[TOKENIZER_FILE])
    if not isinstance(config, dict) or set(config) - set(GENERATOR_CONFIG):
        raise TrackError(f"{files[CONFIG_FILE]}: not a generator config (keys {sorted(config)})")
    try:
        model = new_generator(config, tokenizer.eos_token_id)
        missing, unexpected = model.load_state_dict(state, strict=False)
    except (TypeError, ValueError, RuntimeError) as exc:  # a bad config value or a tensor of the wrong shape
        raise TrackError(f"{files[WEIGHTS_FILE]}: does not fit {files[CONFIG_FILE].name} ({str(exc).splitlines()[-1]})") from None
    if unexpected or set(missing) != {"lm_head.weight"}:
        raise TrackError(f"{files[WEIGHTS_FILE]}: weights do not fit the config (missing {missing}, unexpected {unexpected})")
    model.tie_weights()
    return model.to(device).eval(), tokenizer


def build(out: Path, *, training: dict[str, Any], progress: Callable[[str], None],
          config: dict[str, Any] = GENERATOR_CONFIG) -> dict[str, Any]:
    """Tokenizer + generator from the lee-news splits into `out`; returns sha256s, perplexities, times."""
    from reconbench.text.corpus import lee_splits, lee_tokenizer_texts

    splits = lee_splits()
    t0 = time.perf_counter()
    tok = train_tokenizer(lee_tokenizer_texts(), config["vocab_size"])
    out.mkdir(parents=True, exist_ok=True)
    with atomic_path(out / TOKENIZER_FILE) as tmp:
        tmp.write_text(tok.to_str(pretty=True), encoding="utf-8")
    tokenizer = hf_tokenizer(out / TOKENIZER_FILE)
    model = train_generator(splits["target"].texts, tokenizer, config, training, progress)
    seconds = time.perf_counter() - t0
    files = save_generator(out, model, tok.to_str(pretty=True), config)
    measured = {f"perplexity_{name}": round(perplexity(model, tokenizer, s.texts), 4) for name, s in splits.items()}
    measured |= {f"greedy_recall_{name}": round(greedy_recall(model, tokenizer, splits[name].texts), 4)
                 for name in ("target", "test")}
    measured["train_wall_seconds"] = round(seconds, 1)
    measured["parameters"] = sum(p.numel() for p in model.parameters())
    return {"files": files, "measured": measured}


def main(argv: Sequence[str] | None = None) -> None:
    from reconbench.text.lee_pin import recipe_main

    recipe_main(argv, prog="python -m reconbench.text.lm", doc=__doc__, role="generator", training=GENERATOR_TRAINING,
                build=build, entry=generator_entry)


def generator_entry(summary: dict[str, Any], training: dict[str, Any]) -> dict[str, Any]:
    """The registry's generator entry for a build summary."""
    return {
        "architecture": "gpt2",
        "config": {k: v for k, v in GENERATOR_CONFIG.items() if not k.endswith("pdrop")} | {"dtype": "float32"},
        "base": None,
        "files": summary["files"],
        "fine_tuning": (
            f"trained from scratch on the 500 target sentences: {training['epochs']} epochs, AdamW lr {training['lr']}, "
            f"batch {training['batch_size']}, no dropout, bos + sentence + eos; byte-level BPE of "
            f"{GENERATOR_CONFIG['vocab_size']} tokens learnt from aux and undealt documents only"
        ),
        "recipe": "python -m reconbench.text.lm --pin",
        "measured": summary["measured"],
    }


if __name__ == "__main__":
    main()
