"""How far a rebuild of the shipped Fashion-MNIST weights lands from the pinned bytes, per kernel setting.

    .venv/bin/python benchmarks/bench_rebuild_portability.py [--names mcnn-n100 ...] [--settings recipe default ...]

Each setting rebuilds the named weight files with the recipe (python -m
reconbench.image.models.fashion_targets) in a fresh interpreter: `recipe` with the recipe's pinned
kernels (AVX2 on x86-64), the others with the kernels named below and nothing pinned. For each file
it prints whether the bytes are the pinned ones, the relative l2 distance and the largest weight
difference from the pinned model, the share of the test split given the same class, and the
accuracies (image/models/fashion_rebuild.py, whose bounds the last column applies). A control row
compares mcnn-n100 with a model of another recipe (BatchNorm frozen), to show the scale of a real
difference. docs/fashion.md records a run.
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from pathlib import Path

import torch

from reconbench.core.io import sha256_file
from reconbench.image.models.fashion_rebuild import distance, shipped_file
from reconbench.image.models.fashion_targets import ALL, rebuild

SETTINGS = {
    "recipe": None,  # the recipe's own pins (fashion_targets.PINNED_KERNELS on x86-64)
    "avx512": {"ATEN_CPU_CAPABILITY": "avx512", "ONEDNN_MAX_CPU_ISA": "AVX512_CORE", "MKL_ENABLE_INSTRUCTIONS": "AVX512"},
    "default": {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"},
    "native": {},  # whatever this CPU picks by itself
}


def row(setting: str, name: str, path: Path, seconds: float) -> str:
    d = distance(name, path)
    same = sha256_file(path) == sha256_file(shipped_file(name))
    return (f"{setting:8} {name:20} {'same' if same else 'other':5} {d.rel_l2:9.2e} {d.max_abs:9.2e} "
            f"{d.test_agreement:8.2%} {d.train_accuracy[1]:.4f}/{d.train_accuracy[0]:.4f} "
            f"{d.test_accuracy[1]:.4f}/{d.test_accuracy[0]:.4f} {'yes' if d.within else 'NO':6} {seconds:6.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--names", nargs="+", default=["mcnn-n100", "mcnn-n1000", "oddeven-mlp-n100", "scnn-eval"],
                        choices=sorted(ALL))
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    args = parser.parse_args()
    print(f"machine: {platform.system()} {platform.machine()}, {platform.processor() or '?'}; torch {torch.__version__}; "
          f"cpu capability here: {torch.backends.cpu.get_cpu_capability()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("setting  file                 bytes  rel-l2   max|dw|   same-cls train(rb/pin) test(rb/pin)  within  train-s")
    with tempfile.TemporaryDirectory() as tmp:
        for setting in args.settings:
            out = Path(tmp) / setting
            started = time.perf_counter()
            rebuild(args.names, out, kernels=SETTINGS[setting])
            seconds = (time.perf_counter() - started) / len(args.names)
            for name in args.names:
                print(row(setting, name, out / f"{name}.safetensors", seconds), flush=True)
    control = distance("mcnn-n100", shipped_file("mcnn-n100-bn-frozen"))
    print(f"control: mcnn-n100 against mcnn-n100-bn-frozen (another recipe): rel-l2 {control.rel_l2:.2e}, "
          f"same class on {control.test_agreement:.2%} of the test split")


if __name__ == "__main__":
    main()
