"""Recipe for the embedded `digits` targets shipped in the package (reconbench/data/digits/).

Run `python -m reconbench.models.embedded` to rebuild them; the registry pins their sha256, so a
rebuild on another CPU (which may round differently) shows up as a hash change, not silently.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from reconbench.data.digits import digits_splits
from reconbench.models.registry import build_model, save_model
from reconbench.models.training import TrainConfig, accuracy, train_classifier

# name -> (architecture, constructor kwargs, training config)
EMBEDDED_TARGETS = {
    "cnn": ("small-cnn", {}, TrainConfig(epochs=60, batch_size=64, lr=1e-3, seed=0)),
    "mlp": ("homogeneous-mlp", {}, TrainConfig(epochs=60, batch_size=64, lr=1e-3, seed=0)),
}


def build_embedded_targets(out_dir: Path) -> dict[str, dict]:
    splits = digits_splits()
    report = {}
    for name, (arch, kwargs, config) in EMBEDDED_TARGETS.items():
        model = train_classifier(build_model(arch, **kwargs), splits.target, config)
        path = out_dir / f"{name}.safetensors"
        save_model(model, path, metadata={"architecture": arch, "recipe": "python -m reconbench.models.embedded"})
        report[name] = {
            "architecture": arch,
            "file": path.name,
            "train_accuracy": round(accuracy(model, splits.target), 4),
            "test_accuracy": round(accuracy(model, splits.test), 4),
        }
    return report


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parents[1] / "data" / "digits"
    print(json.dumps(build_embedded_targets(target), indent=2))
