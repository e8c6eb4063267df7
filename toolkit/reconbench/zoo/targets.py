"""One track's training run: prepared data -> model.safetensors + config.json + train_log.jsonl.

`train_track("cifar10-vgg16-n1000", data_dir, out_dir)` trains the track's architecture on the
target set of its size with its recipe (recipes.py) and variant (variants.py), measures train and
test accuracy (and, on request, model memorization, SoK Eq. 2), and writes the folder atomically.
config.json records everything needed to redo the run: architecture and arguments, recipe and
seeds, the data manifest's sha256, the exact command, library versions and the device.
"""

from __future__ import annotations

import json
import platform
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from reconbench.image.data.arrays import ArraySet
from reconbench.core.io import FileFormatError, atomic_dir, read_format_json, sha256_file
from reconbench.image.models import build_model, save_model
from reconbench.zoo import ZooError
from reconbench.zoo.grid import TrackSpec, parse_track_id
from reconbench.zoo.prepare import load_split, manifest_sha256, read_manifest, target_split
from reconbench.zoo.recipes import Recipe, base_recipe, default_arch_kwargs
from reconbench.zoo.training import accuracy, fit, fit_dp, predict
from reconbench.zoo.variants import (apply_variant, attack_success_rate, freeze_batchnorm, make_permanent, poison,
                                     prune_global, sparsity)

MODEL_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
LOG_FILE = "train_log.jsonl"
FORMAT = "reconbench-zoo-target/1"
PRETRAIN_SEED_OFFSET = 1000  # the pre-training phase draws from its own stream


@dataclass(frozen=True)
class Overrides:
    """Command-line changes to a track's recipe and architecture (recorded in config.json)."""

    epochs: int | None = None
    batch_size: int | None = None
    lr: float | None = None
    seed: int | None = None
    width_div: int | None = None  # vgg16 only: thinner convs, for smoke tests

    def flags(self) -> list[str]:
        return [f for name, value in vars(self).items() if value is not None
                for f in (f"--{name.replace('_', '-')}", str(value))]


def recipe_command(track_id: str, overrides: "Overrides", memorization_models: int, init_weights: Path | None) -> str:
    """The command that reproduces a training run (folders and device do not change the recipe)."""
    args = ["recon-submit", "targets", "train", track_id, *overrides.flags()]
    args += ["--memorization", str(memorization_models)] if memorization_models else []
    args += ["--init-weights", Path(init_weights).name] if init_weights else []
    return shlex.join(args)


def plan(track_id: str, overrides: Overrides = Overrides()) -> tuple[TrackSpec, Recipe, dict[str, int]]:
    """The track's spec, its final recipe and its architecture arguments."""
    spec = parse_track_id(track_id)
    recipe = base_recipe(spec.data, spec.architecture).with_overrides(
        epochs=overrides.epochs, batch_size=overrides.batch_size, lr=overrides.lr, seed=overrides.seed)
    kwargs = default_arch_kwargs(spec.data, spec.architecture)
    if overrides.width_div is not None:
        if spec.architecture != "vgg16":
            raise ZooError("--width-div applies to vgg16 only")
        kwargs["width_div"] = overrides.width_div
    recipe, kwargs = apply_variant(spec.variant, spec.data, spec.architecture, recipe, kwargs)
    return spec, recipe, kwargs


def _load_init_weights(model: nn.Module, path: Path) -> dict:
    """Copy every tensor of a safetensors file whose name and shape match (e.g. ImageNet features)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        state = load_file(str(path))
    except (SafetensorError, OSError) as exc:
        raise FileFormatError(f"{path}: not a valid safetensors file ({exc})") from None
    own = model.state_dict()
    matched = {k: v for k, v in state.items() if k in own and own[k].shape == v.shape}
    if not matched:
        raise FileFormatError(f"{path}: no tensor matches the model by name and shape")
    model.load_state_dict(matched, strict=False)
    return {"file": path.name, "sha256": sha256_file(path), "tensors": len(matched), "of": len(own)}


def train_model(arch: str, arch_kwargs: dict[str, int], recipe: Recipe, *, target: ArraySet, aux: ArraySet | None,
                device: torch.device, log: Callable[[dict], None], init_weights: Path | None = None
                ) -> tuple[nn.Module, dict]:
    """Build and train one model by `recipe`; returns it (eval mode) and what its variant did."""
    torch.manual_seed(recipe.seed)
    model = build_model(arch, **arch_kwargs)
    report: dict = {}
    if init_weights is not None:
        report["init_weights"] = _load_init_weights(model, init_weights)
    if recipe.freeze_bn:
        freeze_batchnorm(model)
    train_data = target
    if recipe.backdoor is not None:
        train_data, count = poison(target, recipe.backdoor, seed=recipe.seed)
        report["backdoor"] = {"poisoned_copies": count, "trigger": f"{recipe.backdoor.trigger_size}x"
                              f"{recipe.backdoor.trigger_size} square of value {recipe.backdoor.trigger_value}, bottom-right"}
    if recipe.pretrain_epochs:
        if aux is None:
            raise ZooError("the pretrained variant needs the aux_same split")
        fit(model, aux, recipe, device=device, epochs=recipe.pretrain_epochs, seed=recipe.seed + PRETRAIN_SEED_OFFSET,
            phase="pretrain", log=log)
        report["pretrain"] = {"split": "aux_same", "images": len(aux), "epochs": recipe.pretrain_epochs}
    if recipe.dp is not None:
        model, report["dp"] = fit_dp(model, train_data, recipe, device=device, seed=recipe.seed, log=log)
    else:
        fit(model, train_data, recipe, device=device, epochs=recipe.epochs, seed=recipe.seed, phase="train", log=log)
    if recipe.prune is not None:
        prune_global(model, recipe.prune.amount)
        final_lr = recipe.lr * recipe.gamma ** len(recipe.milestones)  # retrain at the schedule's last rate
        fit(model, train_data, recipe, device=device, epochs=recipe.prune.finetune_epochs, seed=recipe.seed + 1,
            phase="prune-finetune", log=log, lr=final_lr, milestones=())
        make_permanent(model)
        report["prune"] = {"amount": recipe.prune.amount, "sparsity": round(sparsity(model), 6),
                           "finetune_epochs": recipe.prune.finetune_epochs}
    return model.eval(), report


def _memorization(arch, arch_kwargs, recipe, target, aux, device, n_models: int) -> dict:
    """Model memorization (SoK Eq. 2) by Feldman & Zhang's subsampling estimator (metrics/memorization.py)."""
    from reconbench.image.metrics.memorization import estimate_memorization

    def train_fn(indices: np.ndarray):
        model, _ = train_model(arch, arch_kwargs, recipe, target=target.subset(indices), aux=aux, device=device,
                               log=lambda _: None)
        return lambda idx: predict(model, target.images[idx], device)

    mem = estimate_memorization(train_fn, target.labels, n_models=n_models, seed=recipe.seed)
    return {"value": None if np.isnan(mem.model_level) else round(mem.model_level, 4), "models": n_models,
            "subset_fraction": 0.7, "estimator": "Feldman & Zhang (NeurIPS'20), first min(1000, N) samples"}


def _versions() -> dict[str, str]:
    import opacus

    return {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
            "opacus": opacus.__version__}


def train_track(track_id: str, data_dir: Path, out_dir: Path, *, overrides: Overrides = Overrides(),
                device: str = "cpu", memorization_models: int = 0, init_weights: Path | None = None,
                echo: Callable[[dict], None] | None = None) -> dict:
    """Train track `track_id` on the prepared data in `data_dir`; write `out_dir`; return config.json's content."""
    spec, recipe, arch_kwargs = plan(track_id, overrides)
    if Path(out_dir).exists():  # before hours of training, not after
        raise FileExistsError(f"{out_dir}: already exists; choose another --out or remove it")
    data_dir = Path(data_dir)
    manifest = read_manifest(data_dir)
    if manifest["dataset"] != spec.dataset:
        raise ZooError(f"{data_dir}: holds dataset '{manifest['dataset']}', track '{track_id}' needs '{spec.dataset}'")
    target = load_split(data_dir, target_split(spec.size), manifest)
    test = load_split(data_dir, "test", manifest)
    aux = load_split(data_dir, "aux_same", manifest) if recipe.pretrain_epochs else None
    dev = torch.device(device)
    if dev.type == "cuda":  # cuDNN's deterministic kernels: repeatable on the same GPU and software
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
    history: list[dict] = []

    def log(entry: dict) -> None:
        history.append(entry)
        if echo:
            echo(entry)

    started = time.perf_counter()
    model, report = train_model(spec.architecture, arch_kwargs, recipe, target=target, aux=aux, device=dev, log=log,
                                init_weights=init_weights)
    if recipe.backdoor is not None:
        report["backdoor"]["attack_success_rate"] = round(
            attack_success_rate(lambda x: predict(model, x, dev), test, recipe.backdoor), 4)
    config = {
        "format": FORMAT,
        "track": spec.id,
        "dataset": spec.dataset,
        "architecture": spec.architecture,
        "arch_kwargs": arch_kwargs,
        "variant": spec.variant,
        "train_size": spec.size,
        "update_size": spec.data.update_size,
        "input_shape": list(spec.data.input_shape),
        "num_classes": spec.data.num_classes,
        "recipe": recipe.to_dict(),
        "variant_report": report,
        "train_accuracy": round(accuracy(model, target, dev), 4),
        "test_accuracy": round(accuracy(model, test, dev), 4),
        "memorization": None,
        "data": {"manifest_sha256": manifest_sha256(data_dir), "target_split": target_split(spec.size),
                 "target_file_sha256": manifest["splits"][target_split(spec.size)]["sha256"],
                 "target_set_sha256": target.sha256},
        "command": recipe_command(track_id, overrides, memorization_models, init_weights),
        "device": str(dev) if dev.type != "cuda" else torch.cuda.get_device_name(dev),
        "versions": _versions(),
    }
    if memorization_models:
        config["memorization"] = _memorization(spec.architecture, arch_kwargs, recipe, target, aux, dev,
                                               memorization_models)
    config["wall_seconds"] = round(time.perf_counter() - started, 1)
    with atomic_dir(Path(out_dir)) as tmp:
        # One metadata key only: safetensors writes several in a random order (bytes would differ).
        save_model(model, tmp / MODEL_FILE, metadata={"reconbench": json.dumps(
            {"track": spec.id, "architecture": spec.architecture, "arch_kwargs": arch_kwargs}, sort_keys=True)})
        config["model"] = {"file": MODEL_FILE, "sha256": sha256_file(tmp / MODEL_FILE)}
        (tmp / CONFIG_FILE).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        (tmp / LOG_FILE).write_text("".join(json.dumps(h, sort_keys=True) + "\n" for h in history), encoding="utf-8")
    return config


def read_config(model_dir: Path) -> dict:
    return read_format_json(Path(model_dir) / CONFIG_FILE, FORMAT,
                            missing="not found; run `recon-submit targets train` first")
