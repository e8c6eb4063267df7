"""Fine-tune a text zoo track's two targets on its target split (`recon-submit targets train sst2-n1000`).

- generator: GPT-2 from the pinned base, causal language modelling on "<|endoftext|> text
  <|endoftext|>" for 20 epochs (SoK App. B), AdamW with linear decay (GENERATOR_RECIPE cites each value);
- embedder: gtr-t5-base, unsupervised SimCSE (EMBEDDER_RECIPE): two dropout passes of a batch,
  in-batch negatives, cross-entropy over cosine similarities / 0.05.

Output folder (made atomically): generator/{model.safetensors, config.json, tokenizer.json},
embedder/{model.safetensors, config.json, tokenizer.json, special_tokens_map.json}, config.json
(what was trained on what, from which base commits, each file's sha256, measured values, the command).
"""

from __future__ import annotations

import json
import math
import platform
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from reconbench.core.io import atomic_dir, read_format_json, sha256_file
from reconbench.text.grid import EMBEDDER_RECIPE, GENERATOR_RECIPE, GPT2_BASE, GTR_BASE, parse_text_track_id
from reconbench.text.zoo import MANIFEST, load_prepared_split, read_text_manifest, target_split
from reconbench.zoo import ZooError

CONFIG_FILE = "config.json"
FORMAT = "reconbench-text-targets/1"
MEASURE_MAX = 256  # texts per split for the perplexity figures (enough for a stable mean, cheap)


@dataclass(frozen=True)
class TextOverrides:
    """Smoke-run knobs (applied to both recipes); a model trained with any of them cannot enter the
    packaged registry."""

    epochs: int | None = None
    batch_size: int | None = None
    lr: float | None = None
    seed: int | None = None

    def apply(self, recipe: dict) -> dict:
        return {**recipe, **{k: v for k, v in asdict(self).items() if v is not None}}

    def flags(self) -> str:
        return "".join(f" --{k.replace('_', '-')} {v}" for k, v in asdict(self).items() if v is not None)


def fetch_base(base: dict) -> tuple[Path, dict]:
    """(local folder, resolved pin) of a base model: commit resolved, every file hash-checked or recorded."""
    from reconbench.core.hub import download_at_commit, resolve_commit

    commit = resolve_commit(base["repo"], revision=base["revision"] or "main")
    files, root = {}, None
    for name, sha in base["files"].items():
        path, files[name] = download_at_commit(base["repo"], name, revision=commit, sha256=sha)
        root = path.parents[name.count("/")]
    return root, {"repo": base["repo"], "revision": commit, "files": files}


def _epoch_batches(n: int, batch_size: int, generator) -> list:
    import torch

    order = torch.randperm(n, generator=generator).tolist()
    return [order[i:i + batch_size] for i in range(0, n, batch_size)]


def _adamw_linear(params, lr: float, steps: int):
    import torch

    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1.0 - s / max(1, steps)))


def _gpt2_rows(tokenizer, texts: list[str], max_tokens: int) -> list[list[int]]:
    eos = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    body = max_tokens - 2
    return [[eos] + tokenizer(t, add_special_tokens=False)["input_ids"][:body] + [eos] for t in texts]


def _lm_batch(rows: list[list[int]], pad: int, device):
    import torch

    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, :len(r)], mask[i, :len(r)] = torch.tensor(r), 1
    return ids.to(device), mask.to(device), ids.masked_fill(mask == 0, -100).to(device)


def perplexity(model, rows: list[list[int]], pad: int, device, batch_size: int = 16) -> float:
    import torch

    total, count = 0.0, 0
    model.eval()
    with torch.no_grad():
        for i in range(0, len(rows), batch_size):
            ids, mask, labels = _lm_batch(rows[i:i + batch_size], pad, device)
            n = int((labels[:, 1:] != -100).sum())
            total += float(model(input_ids=ids, attention_mask=mask, labels=labels).loss) * n
            count += n
    return math.exp(total / max(1, count))


def train_generator(base_dir: Path, target: list[str], test: list[str], recipe: dict, out: Path, device: str,
                    echo: Callable[[dict], None] | None) -> dict:
    import torch

    from reconbench.text.gpt2 import load_gpt2_folder, save_gpt2_folder

    torch.manual_seed(recipe["seed"])
    model, tok = load_gpt2_folder(base_dir, device)
    max_tokens = min(recipe["max_tokens"], model.config.n_positions)
    rows, pad = _gpt2_rows(tok, target, max_tokens), tok.pad_token_id
    g = torch.Generator().manual_seed(recipe["seed"])
    steps = recipe["epochs"] * math.ceil(len(rows) / recipe["batch_size"])
    opt, sched = _adamw_linear(model.parameters(), recipe["lr"], steps)
    for epoch in range(recipe["epochs"]):
        model.train()
        losses = []
        for batch in _epoch_batches(len(rows), recipe["batch_size"], g):
            ids, mask, labels = _lm_batch([rows[i] for i in batch], pad, device)
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
        if echo:
            echo({"role": "generator", "epoch": epoch + 1, "loss": sum(losses) / len(losses)})
    measured = {f"perplexity_{name}": perplexity(model, _gpt2_rows(tok, texts[:MEASURE_MAX], max_tokens), pad, device)
                for name, texts in (("target", target), ("test", test))}
    save_gpt2_folder(out, model.cpu(), tok)
    return measured


def train_embedder(base_dir: Path, target: list[str], recipe: dict, out: Path, device: str,
                   echo: Callable[[dict], None] | None) -> dict:
    import torch
    import torch.nn.functional as F

    from reconbench.text.gtr import load_sentence_transformers_gtr, save_gtr_folder

    torch.manual_seed(recipe["seed"])
    emb = load_sentence_transformers_gtr(base_dir, max_length=recipe["max_tokens"], device=device)
    params = list(emb.model.parameters()) + list(emb.dense.parameters())
    g = torch.Generator().manual_seed(recipe["seed"])
    batches_per_epoch = len(target) // recipe["batch_size"] + (len(target) % recipe["batch_size"] > 1)
    opt, sched = _adamw_linear(params, recipe["lr"], recipe["epochs"] * batches_per_epoch)
    last = float("nan")
    for epoch in range(recipe["epochs"]):
        emb.model.train()
        emb.dense.train()
        losses = []
        for batch in _epoch_batches(len(target), recipe["batch_size"], g):
            if len(batch) < 2:  # no in-batch negative
                continue
            tokens = emb.tokenize([target[i] for i in batch])
            z1, z2 = emb.forward(tokens), emb.forward(tokens)  # two dropout masks: SimCSE's positive pair
            logits = z1 @ z2.T / recipe["temperature"]
            loss = F.cross_entropy(logits, torch.arange(len(batch), device=logits.device))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
        last = sum(losses) / max(1, len(losses))
        if echo:
            echo({"role": "embedder", "epoch": epoch + 1, "loss": last})
    emb.model.eval()
    emb.dense.eval()
    emb.model.cpu()
    emb.dense.cpu()
    save_gtr_folder(emb, out)
    return {"simcse_loss_last_epoch": last}


def train_text_track(track_id: str, data_dir: Path, out: Path, *, overrides: TextOverrides = TextOverrides(),
                     bases: dict | None = None, device: str = "cpu",
                     echo: Callable[[dict], None] | None = None) -> dict:
    """Fine-tune both targets of `track_id` on its target split; write `out`; returns config.json's content.

    `bases` replaces the pinned bases ({"generator": {...}, "embedder": {...}} as GPT2_BASE/GTR_BASE):
    for stand-in models in tests and smoke runs; such a model cannot enter the packaged registry."""
    spec, size = parse_text_track_id(track_id)
    data_dir = Path(data_dir)
    manifest = read_text_manifest(data_dir)
    if manifest["dataset"] != spec.name:
        raise ZooError(f"{data_dir / MANIFEST}: dataset '{manifest['dataset']}', track '{track_id}' needs '{spec.name}'")
    target = load_prepared_split(data_dir, target_split(size), manifest)
    test = load_prepared_split(data_dir, "test", manifest)
    bases = bases or {"generator": GPT2_BASE, "embedder": GTR_BASE}
    recipes = {"generator": overrides.apply(GENERATOR_RECIPE), "embedder": overrides.apply(EMBEDDER_RECIPE)}
    config = {
        "format": FORMAT, "track": track_id, "dataset": spec.name, "train_size": size,
        "data": {"manifest_sha256": sha256_file(data_dir / MANIFEST), "target_split": target_split(size),
                 "target_sha256": target.sha256},
        "command": f"recon-submit targets train {track_id}" + overrides.flags(),
        "versions": _versions(),
    }
    with atomic_dir(Path(out)) as tmp:
        for role in ("generator", "embedder"):
            base_dir, pin = fetch_base(bases[role])
            if role == "generator":
                measured = train_generator(base_dir, target.texts, test.texts, recipes[role], tmp / role, device, echo)
            else:
                measured = train_embedder(base_dir, target.texts, recipes[role], tmp / role, device, echo)
            files = {f"{role}/{p.name}": sha256_file(p) for p in sorted((tmp / role).iterdir())}
            config[role] = {"recipe": recipes[role], "base": pin, "files": files, "measured": measured}
        (tmp / CONFIG_FILE).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return config


def _versions() -> dict:
    import torch
    import transformers

    return {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__}


def read_track_config(model_dir: Path) -> dict:
    return read_format_json(Path(model_dir) / CONFIG_FILE, FORMAT,
                            missing="not found; run `recon-submit targets train` first")


def recipe_overridden(config: dict) -> bool:
    """True when the models were not trained by the track's own recipe from the pinned bases."""
    gen, emb = config["generator"], config["embedder"]
    pinned_gen = gen["base"]["repo"] == GPT2_BASE["repo"] and gen["base"]["revision"] == GPT2_BASE["revision"] \
        and gen["base"]["files"] == GPT2_BASE["files"]
    return (gen["recipe"] != GENERATOR_RECIPE or emb["recipe"] != EMBEDDER_RECIPE or not pinned_gen
            or emb["base"]["repo"] != GTR_BASE["repo"])
