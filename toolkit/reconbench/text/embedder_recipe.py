"""The lee-news embedder: all-MiniLM-L6-v2 fine-tuned on the target split, shipped as a small delta.

`python -m reconbench.text.embedder_recipe` rebuilds `embedder-bitfit.safetensors`.

The SoK fine-tunes its embedding model on the target data before Vec2Text inverts it. Here:
- objective: unsupervised SimCSE (Gao, Yao & Chen, EMNLP 2021): each target sentence is encoded
  twice with dropout on (MiniLM's own 0.1), the two views are positives, the other sentences of the
  batch negatives, InfoNCE over cosine similarities / temperature 0.05 (SimCSE's default); the
  embedding is MiniLM's own (mean pooling + L2 norm) rather than SimCSE's [CLS]+MLP, so the tuned
  model is used exactly as the base one is;
- parameters: BitFit (Ben Zaken, Ravfogel & Goldberg, ACL 2022): only the bias terms move, plus the
  LayerNorm gains (a common BitFit variant); every weight matrix stays the base model's, so the delta
  is ~0.1 MB next to the 90.9 MB base that reconbench.text.minilm pins. BitFit trains with a larger
  learning rate than full fine-tuning (their Table 4/appendix search goes up to 1e-3); we take 1e-3
  (SimCSE's 3e-5 is for moving all weights);
- data: the 500 target sentences only, EMBEDDER_TRAINING["epochs"] epochs, batches of 64 (SimCSE's
  unsupervised batch size), max 64 tokens (the longest target sentence has fewer).
Seeded, one thread, deterministic algorithms.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from reconbench.core.io import atomic_path, sha256_file
from reconbench.core.tracks import TrackError

DELTA_FILE = "embedder-bitfit.safetensors"
EMBEDDER_TRAINING: dict[str, Any] = {
    "epochs": 2,
    "batch_size": 64,  # SimCSE unsupervised (Gao et al. 2021, Table D.1 / official run_unsup_example.sh)
    "lr": 1e-3,
    "temperature": 0.05,  # SimCSE default
    "max_length": 64,
    "seed": 0,
    "threads": 1,
}


def is_delta_parameter(name: str) -> bool:
    """BitFit's trainable set: biases and LayerNorm parameters of the encoder (the pooler is unused)."""
    return not name.startswith("pooler.") and (name.endswith(".bias") or ".LayerNorm." in name)


def simcse_loss(embedder: Any, texts: Sequence[str], temperature: float) -> Any:
    """Unsupervised SimCSE's InfoNCE: two dropout views of each text, in-batch negatives."""
    import torch
    import torch.nn.functional as F

    batch = embedder.tokenize(list(texts) * 2)
    z = embedder.forward(batch)  # L2-normalised rows: z @ z.T are cosines
    n = len(texts)
    sim = z[:n] @ z[n:].T / temperature
    return F.cross_entropy(sim, torch.arange(n, device=sim.device))


def train_bitfit(embedder: Any, texts: Sequence[str], training: dict[str, Any] = EMBEDDER_TRAINING,
                 progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Fine-tune `embedder` in place (BitFit + SimCSE); returns the delta (name -> tensor)."""
    from reconbench.text.lm import deterministic

    with deterministic(training["threads"], training["seed"]):
        return _train(embedder, texts, training, progress)


def _train(embedder: Any, texts: Sequence[str], training: dict[str, Any],
           progress: Callable[[str], None] | None) -> dict[str, Any]:
    import torch

    model = embedder.model
    embedder.max_length = training["max_length"]
    params = {n: p for n, p in model.named_parameters() if is_delta_parameter(n)}
    for n, p in model.named_parameters():
        p.requires_grad_(n in params)
    opt = torch.optim.AdamW(params.values(), lr=training["lr"], weight_decay=0.0)
    gen = torch.Generator().manual_seed(training["seed"])
    bs = training["batch_size"]
    model.train()  # dropout on: it is SimCSE's augmentation
    for epoch in range(training["epochs"]):
        order = torch.randperm(len(texts), generator=gen).tolist()
        total, steps = 0.0, 0
        for start in range(0, len(order) - 1, bs):
            chunk = [texts[i] for i in order[start : start + bs]]
            if len(chunk) < 2:
                continue  # one text has no in-batch negative
            loss = simcse_loss(embedder, chunk, training["temperature"])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total, steps = total + float(loss.detach()), steps + 1
        if progress:
            progress(f"epoch {epoch + 1}/{training['epochs']}: mean SimCSE loss {total / steps:.4f}")
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return {n: p.detach().float().contiguous().cpu() for n, p in params.items()}


def apply_delta(embedder: Any, delta: dict[str, Any], where: Path | str) -> Any:
    """Overwrite the base model's biases / LayerNorm parameters with the delta's; anything else refused."""
    state = embedder.model.state_dict()
    for name, tensor in delta.items():
        if not is_delta_parameter(name) or name not in state:
            raise TrackError(f"{where}: '{name}' is not a bias or LayerNorm parameter of MiniLM")
        if tuple(tensor.shape) != tuple(state[name].shape):
            raise TrackError(f"{where}: '{name}' has shape {tuple(tensor.shape)}, MiniLM's is {tuple(state[name].shape)}")
    embedder.model.load_state_dict(delta, strict=False)
    return embedder


def load_embedder_delta(files: dict[str, Path], device: str = "cpu") -> Any:
    """The base all-MiniLM-L6-v2 (pinned in reconbench.text.minilm) with the (hash-checked) delta applied."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from reconbench.text.minilm import load_minilm

    if DELTA_FILE not in files:
        raise TrackError(f"{DELTA_FILE}: not among the embedder's files")
    try:
        delta = load_file(str(files[DELTA_FILE]))
    except (OSError, SafetensorError) as exc:
        raise TrackError(f"{files[DELTA_FILE]}: cannot read the embedder delta ({exc})") from None
    embedder = apply_delta(load_minilm(device), delta, files[DELTA_FILE])
    embedder.name = "all-MiniLM-L6-v2 + lee-news BitFit/SimCSE delta"
    return embedder


def _mean_pairwise(z: Any) -> float:
    n = z.shape[0]
    return float(((z @ z.T).sum() - n) / (n * (n - 1)))


def effect(base: Any, tuned: Any, splits: dict[str, Any]) -> dict[str, float]:
    """How the fine-tune moved the embedding, per split: mean cosine between a text's base and tuned
    embeddings (1 = unmoved), and the mean pairwise cosine among the split's texts before and after
    (SimCSE's stated effect is to spread embeddings out, i.e. to lower it)."""
    out = {}
    for name in ("target", "test"):
        a, b = base.encode(splits[name].texts), tuned.encode(splits[name].texts)
        out[f"cosine_base_vs_tuned_{name}"] = round(float((a * b).sum(1).mean()), 4)
        out[f"pairwise_cosine_{name}_base"] = round(_mean_pairwise(a), 4)
        out[f"pairwise_cosine_{name}_tuned"] = round(_mean_pairwise(b), 4)
    return out


def save_delta(path: Path, delta: dict[str, Any]) -> str:
    from safetensors.torch import save_file

    with atomic_path(path) as tmp:
        save_file(dict(sorted(delta.items())), str(tmp), metadata={"format": "pt", "base": "all-MiniLM-L6-v2"})
    return sha256_file(path)


def build(out: Path, *, training: dict[str, Any], progress: Callable[[str], None]) -> dict[str, Any]:
    from reconbench.text.corpus import lee_splits
    from reconbench.text.minilm import load_minilm

    splits = lee_splits()
    embedder = load_minilm()
    t0 = time.perf_counter()
    delta = train_bitfit(embedder, splits["target"].texts, training, progress)
    seconds = time.perf_counter() - t0
    embedder.max_length = load_minilm().max_length  # shipped use: MiniLM's own 256, as the loader gives
    digest = save_delta(out / DELTA_FILE, delta)
    measured = effect(load_minilm(), embedder, splits)
    measured["train_wall_seconds"] = round(seconds, 1)
    measured["delta_parameters"] = sum(t.numel() for t in delta.values())
    return {"files": {DELTA_FILE: digest}, "measured": measured}


def main(argv: Sequence[str] | None = None) -> None:
    from reconbench.text.lee_pin import recipe_main

    recipe_main(argv, prog="python -m reconbench.text.embedder_recipe", doc=__doc__, role="embedder", training=EMBEDDER_TRAINING,
                build=build, entry=embedder_entry)


def embedder_entry(summary: dict[str, Any], training: dict[str, Any]) -> dict[str, Any]:
    """The registry's embedder entry for a build summary."""
    from reconbench.text.minilm import MINILM_REPO, MINILM_REVISION

    return {
        "architecture": "minilm",
        "config": {"pooling": "mean", "normalize": True, "delta": "bitfit (biases + LayerNorm)"},
        "base": f"{MINILM_REPO}@{MINILM_REVISION} (sha256-pinned in reconbench.text.minilm)",
        "files": summary["files"],
        "fine_tuning": (
            f"BitFit (biases and LayerNorm only) with unsupervised SimCSE on the 500 target sentences: "
            f"{training['epochs']} epochs, batch {training['batch_size']}, AdamW lr {training['lr']}, "
            f"temperature {training['temperature']}"
        ),
        "recipe": "python -m reconbench.text.embedder_recipe --pin",
        "measured": summary["measured"],
    }


if __name__ == "__main__":
    main()
