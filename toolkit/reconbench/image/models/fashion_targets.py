"""Recipe of the Fashion-MNIST tracks' shipped weights (reconbench/data/fashion/) and their registry rows.

    python -m reconbench.image.models.fashion_targets [NAME ...] [--out DIR]

trains the named files (all by default) into DIR (default: the package's data/fashion/) and prints a
JSON report (sha256, accuracies, seconds); `python -m reconbench.image.models.fashion_registry` then
rewrites registry/fashion.json from the files in the package. Training runs on one CPU thread with every random draw
seeded (initialisation included), with the CPU kernels pinned to AVX2 (PINNED_KERNELS: the command
re-executes itself with them; `--kernels as-is` keeps the caller's). On the machine that made the pinned
bytes a rebuild writes them again. On another CPU it need not: oneDNN and MKL pick their blocking, and so
the order of a float sum, from the cache sizes and thread count as well as the instruction set. What a
rebuild promises everywhere is the model up to float rounding (image/models/fashion_rebuild.py: weights,
test-split predictions and accuracies within stated bounds), measured in
benchmarks/bench_rebuild_portability.py and stated in docs/fashion.md.

Targets (data: reconbench.image.data.fashion_splits):
  mcnn-n{100,500,1000}  GMI's MNIST target architecture (models/gmi_mnist.py, width 16) on the
                        10-class 32x32 view, |D_tar| = 100 / 500 / 1,000. GMI ships no MNIST
                        training script, so the recipe is the embedded digits targets' (Adam,
                        lr 1e-3, batch 64; models/embedded.py) with 100 epochs, which reaches
                        100% training accuracy at every size.
  mcnn-n100-dp          SoK Table 10's "DP": mcnn-n100's data and optimiser (Adam, lr 1e-3, batch 64, 100
                        epochs) trained with DP-SGD by opacus at the zoo's recipe (reconbench.zoo.recipes.DP:
                        epsilon 8 at delta 1e-5, clipping norm 1, RDP accountant), GroupNorm for BatchNorm
                        (architecture mcnn-gn: per-sample gradients), as the zoo's dp variant.
  mcnn-n100-prune       SoK Table 10's "Prune": mcnn-n100's recipe, then 90 % global magnitude pruning of
                        the conv/linear weights and 10 epochs of fine-tuning with the mask fixed
                        (reconbench.zoo.recipes.Prune, Han et al.).
  split5-mcnn-n500      the same on the five private classes (fashion-mnist-split5).
  lenet-sigmoid-dlg     the gradient-inversion control (issue 44): DLG's LeNet with Sigmoid activations
                        (models/small.py LeNetSigmoid; mit-han-lab/dlg models/vision.py:15-36) at DLG's
                        random initialisation and nothing else: DLG attacks the network as initialised
                        (main.py:50-56: torch.manual_seed(1234), weights and biases ~ U(-0.5, 0.5),
                        vision.py:9-13), so the model before the update is trained on no image
                        (|D_tar| of its static setting is 0; it offers only the dynamic cells).
  oddeven-mlp-n100      Bias-Rec's regime: Haim et al.'s MNIST run (github.com/nivha/dataset_reconstruction,
                        command_line_args/train_mnist_odd_even_args.txt: odd/even labels, 250
                        images per class, full-batch GD from a 1e-4 first-layer init) with 50
                        images per class (the attack's cost grows with 2 candidates per training
                        image: 500 does not fit a 2-core CPU's budget; planned row for a GPU), on a
                        bias-free 784-1000-2 ReLU network trained by models/embedded.py's
                        train_logistic_gd (theirs: 784-1000-1000-1 with a first-layer bias,
                        inputs minus the training mean, lr 0.01 for up to 1e6 epochs in float64;
                        ours: one hidden layer, [0, 1] pixels, LOGISTIC_GD below, so that the
                        file stays ~3 MB and a CPU trains it in minutes).
Evaluation classifiers (another architecture than the target, trained on the evaluator block,
disjoint from every target, update and holdout image):
  scnn-eval / split5-scnn-eval   GMI's MNIST evaluation classifier SCNN (width 8)
  oddeven-eval-cnn               the digits tracks' EvalCNN (width 8) on the 28x28 odd/even view
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from reconbench.image.models.embedded import LogisticGDConfig, train_logistic_gd
from reconbench.image.models.registry import build_model, save_model
from reconbench.image.models.training import TrainConfig, accuracy, train_classifier
from reconbench.core.threads import one_torch_thread

RECIPE = "python -m reconbench.models.fashion_targets"  # the name the pinned weights' metadata records (reconbench.core.moved resolves it)
# The kernels the pinned bytes were trained with. oneDNN's convolutions, MKL and ATen's own vector code
# pick their instruction set at run time, and AVX-512 rounds otherwise than AVX2: the same recipe wrote
# other bytes on an AVX-512 machine. Each library reads its variable once, when it first runs, so the
# recipe sets them in a fresh interpreter (x86-64 only: elsewhere they name no instruction set).
PINNED_KERNELS = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}
ADAM = TrainConfig(epochs=100, batch_size=64, lr=1e-3, seed=0)
EVAL_ADAM = TrainConfig(epochs=15, batch_size=64, lr=1e-3, weight_decay=1e-4, seed=0)
# lr 0.05 (digits-binary-mlp's 0.5 diverges on 784-d inputs of norm ~10; Haim et al.: 0.01), 6,000
# full-batch steps in float32 (measured on 500 images: loss 4e-3 after 2,000 steps, falling as ~1/t;
# theirs runs until 1e6 epochs or loss 1e-40, a GPU's budget)
LOGISTIC_GD = LogisticGDConfig(steps=6000, lr=0.05, first_layer_init=1e-4, seed=0, dtype="float32")


@dataclass(frozen=True)
class DLGInit:
    """No training: DLG's initialisation (models/small.py dlg_init; mit-han-lab/dlg main.py:54-56)."""

    seed: int = 1234  # main.py:54 torch.manual_seed(1234)
    bound: float = 0.5  # vision.py:11-13 uniform_(-0.5, 0.5)


DLG_INIT = DLGInit()


@dataclass(frozen=True)
class Weights:
    dataset: str
    architecture: str
    arch_kwargs: dict
    config: TrainConfig | LogisticGDConfig | DLGInit
    train_size: int | None = None  # targets: |D_tar| (0: untrained); evaluation classifiers: None (evaluator block)
    defense: str | None = None  # SoK Table 10: "dp" (DP-SGD) or "prune", on top of `config`


TARGETS = {
    "mcnn-n100": Weights("fashion-mnist", "mcnn", {"num_classes": 10, "width": 16}, ADAM, 100),
    "mcnn-n500": Weights("fashion-mnist", "mcnn", {"num_classes": 10, "width": 16}, ADAM, 500),
    "mcnn-n1000": Weights("fashion-mnist", "mcnn", {"num_classes": 10, "width": 16}, ADAM, 1000),
    # SoK Table 7's "fixed": the same recipe with BatchNorm frozen at its initial statistics and
    # affine parameters (DeepInversion has nothing informative to match)
    "mcnn-n100-bn-frozen": Weights("fashion-mnist", "mcnn", {"num_classes": 10, "width": 16},
                                   TrainConfig(epochs=100, batch_size=64, lr=1e-3, seed=0, freeze_bn=True), 100),
    "mcnn-n100-dp": Weights("fashion-mnist", "mcnn-gn", {"num_classes": 10, "width": 16}, ADAM, 100, defense="dp"),
    "mcnn-n100-prune": Weights("fashion-mnist", "mcnn", {"num_classes": 10, "width": 16}, ADAM, 100, defense="prune"),
    "split5-mcnn-n500": Weights("fashion-mnist-split5", "mcnn", {"num_classes": 5, "width": 16}, ADAM, 500),
    "oddeven-mlp-n100": Weights("fashion-mnist-oddeven", "homogeneous-mlp",
                                {"in_features": 784, "num_classes": 2, "hidden": 1000, "depth": 1}, LOGISTIC_GD, 100),
    "lenet-sigmoid-dlg": Weights("fashion-mnist", "lenet-sigmoid", {"in_channels": 1, "num_classes": 10, "image_size": 32},
                                 DLG_INIT, 0),
}
EVALUATORS = {
    "scnn-eval": Weights("fashion-mnist", "scnn", {"num_classes": 10, "width": 8}, EVAL_ADAM),
    "split5-scnn-eval": Weights("fashion-mnist-split5", "scnn", {"num_classes": 5, "width": 8}, EVAL_ADAM),
    "oddeven-eval-cnn": Weights("fashion-mnist-oddeven", "eval-cnn", {"num_classes": 2, "width": 8}, EVAL_ADAM),
}
ALL = {**TARGETS, **EVALUATORS}


def file_of(name: str) -> str:
    """The weight file's path inside the package's data folder (what the registry names)."""
    return f"fashion/{name}.safetensors"


def train(name: str) -> torch.nn.Module:
    """Train one shipped model from its recipe (seeded before the model is built: its init too)."""
    return train_with_report(name)[0]


def train_with_report(name: str) -> tuple[torch.nn.Module, dict]:
    """The model and what its training spent beyond accuracy (DP-SGD: epsilon, noise multiplier)."""
    from reconbench.image.data.fashion_splits import evaluator_training_set, fashion_splits

    spec = ALL[name]
    if isinstance(spec.config, DLGInit):  # untrained: the model as DLG initialises it
        from reconbench.image.models.small import dlg_init

        with one_torch_thread():
            model = build_model(spec.architecture, **spec.arch_kwargs)
            return dlg_init(model, spec.config.seed, spec.config.bound).eval(), {}
    data = fashion_splits(spec.dataset, spec.train_size).target if spec.train_size else \
        evaluator_training_set(spec.dataset)
    with one_torch_thread():
        torch.manual_seed(spec.config.seed)
        model = build_model(spec.architecture, **spec.arch_kwargs)
        if isinstance(spec.config, LogisticGDConfig):
            return train_logistic_gd(model, data, spec.config), {}
        if spec.defense == "dp":
            model, spent = _train_dp(model, data, spec.config)
            return model, {"dp": spent}
        model = train_classifier(model, data, spec.config)
        if spec.defense == "prune":
            from reconbench.zoo.variants import sparsity

            model = _prune_and_finetune(model, data, spec.config)
            return model, {"prune": {"sparsity": round(sparsity(model), 6)}}
        return model, {}


def _dp_recipe(config: TrainConfig):
    """The zoo's DP-SGD (reconbench.zoo.recipes.DP) with this recipe's optimiser, batch and epochs."""
    from reconbench.zoo.recipes import DP, Recipe

    return Recipe(optimizer="adam", lr=config.lr, weight_decay=config.weight_decay, batch_size=config.batch_size,
                  epochs=config.epochs, milestones=(), seed=config.seed, dp=DP())


def _train_dp(model: torch.nn.Module, data, config: TrainConfig) -> tuple[torch.nn.Module, dict]:
    from reconbench.zoo.training import fit_dp

    return fit_dp(model, data, _dp_recipe(config), device=torch.device("cpu"), seed=config.seed, log=lambda _: None)


def _prune_and_finetune(model: torch.nn.Module, data, config: TrainConfig) -> torch.nn.Module:
    """90 % global magnitude pruning, then fine-tuning with the mask attached (zeros stay zero), made permanent."""
    from dataclasses import replace

    from reconbench.zoo.recipes import Prune
    from reconbench.zoo.variants import make_permanent, prune_global

    prune = Prune()
    prune_global(model, prune.amount)
    model = train_classifier(model, data, replace(config, epochs=prune.finetune_epochs, seed=config.seed + 1))
    make_permanent(model)
    return model.eval()


def build(name: str, out_dir: Path) -> dict:
    """Train `name`, write it under out_dir, return its report line."""
    from reconbench.image.data.fashion_splits import evaluator_training_set, fashion_splits
    from reconbench.core.io import sha256_file

    spec = ALL[name]
    started = time.perf_counter()
    model, spent = train_with_report(name)
    seconds = round(time.perf_counter() - started, 1)
    path = out_dir / f"{name}.safetensors"
    path.parent.mkdir(parents=True, exist_ok=True)
    save_model(model, path, metadata={"architecture": spec.architecture, "recipe": f"{RECIPE} {name}"})
    report = {"file": file_of(name), "sha256": sha256_file(path), "seconds": seconds,
              "architecture": spec.architecture, "arch_kwargs": spec.arch_kwargs, **spent}
    if spec.train_size == 0:  # untrained: no training set, the test split's accuracy (chance) only
        report |= {"test_accuracy": round(accuracy(model, fashion_splits(spec.dataset, 100).test), 4)}
    elif spec.train_size:
        splits = fashion_splits(spec.dataset, spec.train_size)
        report |= {"train_accuracy": round(accuracy(model, splits.target), 4),
                   "test_accuracy": round(accuracy(model, splits.test), 4),
                   "holdout_accuracy": round(accuracy(model, splits.holdout), 4)}
    else:
        own = evaluator_training_set(spec.dataset)
        report |= {"train_accuracy": round(accuracy(model, own), 4),
                   "test_accuracy": round(accuracy(model, fashion_splits(spec.dataset, 100).test), 4)}
    return report


def _kernel_env() -> dict[str, str]:
    return PINNED_KERNELS if platform.machine().lower() in ("x86_64", "amd64") else {}


def rebuild(names: list[str], out_dir: Path, kernels: dict[str, str] | None = None) -> dict:
    """The recipe in a fresh interpreter: name -> report. With the pinned kernels (what `python -m` runs),
    or, given `kernels`, with this environment plus those variables and nothing pinned (another kernel
    setting, for the portability test and benchmark)."""
    argv, env = [*names, "--out", str(out_dir)], os.environ | _kernel_env()
    if kernels is not None:
        argv, env = [*argv, "--kernels", "as-is"], os.environ | kernels
    done = subprocess.run([sys.executable, "-m", "reconbench.image.models.fashion_targets", *argv],
                          env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{RECIPE} {' '.join(names)} failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)


def main(argv: list[str]) -> int:
    as_is = "--kernels" in argv and argv[argv.index("--kernels") + 1:][:1] == ["as-is"]
    pins = {} if as_is else _kernel_env()
    if any(os.environ.get(k) != v for k, v in pins.items()):  # this interpreter's kernels are not the pinned ones
        os.execve(sys.executable, [sys.executable, "-m", "reconbench.image.models.fashion_targets", *argv], os.environ | pins)
    out = Path(__file__).parents[2] / "data" / "fashion"
    names = []
    args = iter(argv)
    for arg in args:
        if arg == "--out":
            out = Path(next(args))
        elif arg == "--kernels":
            if next(args, None) not in ("pinned", "as-is"):
                print("--kernels takes 'pinned' (the default) or 'as-is'", file=sys.stderr)
                return 2
        elif arg in ALL:
            names.append(arg)
        else:
            print(f"unknown weight file '{arg}' (known: {', '.join(ALL)})", file=sys.stderr)
            return 2
    print(json.dumps({name: build(name, out) for name in names or ALL}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
