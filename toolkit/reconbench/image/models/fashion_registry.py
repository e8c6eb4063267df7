"""registry/fashion.json: the Fashion-MNIST tracks, generated from the shipped weights.

    python -m reconbench.image.models.fashion_registry [--no-near-copy]

measures the files in the package's data/fashion/ (reconbench.image.models.fashion_targets makes them) and
rewrites the file (reconbench.core.tracks merges it after tracks.json) with the rows below: the sha256 and accuracies of
the files just built, the splits' content hashes and the near-copy thresholds calibrated on the
track's public pool. Nothing in these rows is typed by hand but the track list itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from reconbench.image.models.fashion_targets import RECIPE, TARGETS, file_of

STATIC = ["static/white-box/none", "static/white-box/same", "static/black-box/none", "static/black-box/same"]
SPLIT5 = ["static/white-box/same", "static/white-box/similar", "static/black-box/same", "static/black-box/similar"]
BIAS_REC = ["static/white-box/none", "static/white-box/same", "static/black-box/same"]
DYNAMIC = ["dynamic/white-box/none", "dynamic/black-box/same"]
GRADIENT = ["dynamic/white-box/none"]  # the gradient-inversion control: Deep Leakage's cell (SoK Table 1)
CONTROL_BATCHES = (1, 2, 4, 8)  # DLG's batches (Zhu et al., NeurIPS'19, Sec. 4: up to 8 images per batch)
PLANNED_SIZES = (2000, 5000, 10000, 15000, 20000)  # the SoK's MNIST/CIFAR-10 range up to 20,000, for a GPU
EVALUATOR_OF = {"fashion-mnist": "scnn-eval", "fashion-mnist-split5": "split5-scnn-eval",
                "fashion-mnist-oddeven": "oddeven-eval-cnn"}
VIEW_TITLE = {"fashion-mnist": "Fashion-MNIST, 10 classes, zero-padded to 32x32",
              "fashion-mnist-split5": "Fashion-MNIST, private classes Sandal/Shirt/Sneaker/Bag/Ankle boot "
                                      "(aux: the other five, GMI's MNIST convention), 32x32",
              "fashion-mnist-oddeven": "Fashion-MNIST odd vs even class (Bias-Rec's regime), 28x28"}


@dataclass(frozen=True)
class TrackRow:
    id: str
    weights: str  # a TARGETS name
    scenarios: list[str]
    update_size: int | None = None
    extra_title: str = ""
    planned_size: int | None = None  # unpublished rows: |D_tar| (no weights yet)
    notes: dict = field(default_factory=dict)


ROWS = [
    TrackRow("fashion-n100", "mcnn-n100", STATIC),
    TrackRow("fashion-n500", "mcnn-n500", STATIC),
    TrackRow("fashion-n1000", "mcnn-n1000", STATIC),
    TrackRow("fashion-n100-dp", "mcnn-n100-dp", STATIC, extra_title=", trained with DP-SGD ({dp}; SoK Table 10's 'DP')"),
    TrackRow("fashion-n100-prune", "mcnn-n100-prune", STATIC,
             extra_title=", 90 % of its weights pruned by global magnitude and fine-tuned (SoK Table 10's 'Prune')"),
    TrackRow("fashion-n100-bn-frozen", "mcnn-n100-bn-frozen", ["static/white-box/none"],
             extra_title=", BatchNorm frozen at its initial statistics (SoK Table 7's 'fixed')"),
    *[TrackRow(f"fashion-n1000-u{k}", "mcnn-n1000", DYNAMIC, update_size=k,
               extra_title=f", updated with {k} image{'s' if k > 1 else ''} (one observed batch)") for k in (1, 8, 64)],
    # issue 44's positive control for gradient inversion: DLG's own setting (an untrained Sigmoid LeNet)
    *[TrackRow(f"fashion-lenet-u{k}", "lenet-sigmoid-dlg", GRADIENT, update_size=k,
               extra_title=f", its gradient on an update of {k} image{'s' if k > 1 else ''} observed as one batch "
                           "(DLG's setting: the gradient-inversion control)") for k in CONTROL_BATCHES],
    TrackRow("fashion-split5-n500", "split5-mcnn-n500", SPLIT5),
    TrackRow("fashion-oddeven-n100", "oddeven-mlp-n100", BIAS_REC),
    *[TrackRow(f"fashion-n{n}", "mcnn-n1000", STATIC, planned_size=n) for n in PLANNED_SIZES],
    TrackRow("fashion-oddeven-n500", "oddeven-mlp-n100", BIAS_REC, planned_size=500),  # Haim et al.'s 250 per class
]


def _arch_title(arch: str, kwargs: dict) -> str:
    if arch == "mcnn":
        return f"GMI's MNIST CNN with BatchNorm (width {kwargs['width']})"
    if arch == "mcnn-gn":
        return f"GMI's MNIST CNN with GroupNorm (width {kwargs['width']})"
    if arch == "lenet-sigmoid":
        return "DLG's LeNet with Sigmoid activations"
    return f"bias-free {kwargs['in_features']}-{kwargs['hidden']}-{kwargs['num_classes']} ReLU MLP trained by full-batch GD"


def _dp_title() -> str:
    """The DP-SGD recipe's privacy parameters, from the recipe the weights were trained with."""
    from reconbench.zoo.recipes import DP

    dp = DP()
    return f"opacus, ε = {dp.epsilon:g} at δ = {dp.delta:g}, clipping norm {dp.max_grad_norm:g}, GroupNorm"


def row(spec: TrackRow, report: dict) -> dict:
    """One registry row (a dict in tracks.json's schema)."""
    from reconbench.image.data.fashion_splits import fashion_splits

    w = TARGETS[spec.weights]
    size = spec.planned_size or w.train_size
    c, hw = 1, 28 if w.dataset == "fashion-mnist-oddeven" else 32
    trained = f"{size:,} training images" if size else "untrained (DLG's random initialisation)"
    entry = {
        "id": spec.id,
        "title": f"{VIEW_TITLE[w.dataset]}, {_arch_title(w.architecture, w.arch_kwargs)}, {trained}"
                 + spec.extra_title.format(dp=_dp_title()),
        "dataset": w.dataset,
        "architecture": w.architecture,
        "arch_kwargs": dict(w.arch_kwargs),
        "input_shape": [c, hw, hw],
        "num_classes": w.arch_kwargs["num_classes"],
        "train_size": size,
    }
    if spec.update_size:
        entry |= {"update_size": spec.update_size, "gradient_batch_size": spec.update_size}
    if spec.planned_size:
        return entry | {"status": "unpublished", "scenarios": spec.scenarios,
                        "recipe": f"{RECIPE} (the {spec.weights} recipe at |D_tar| = {size:,}; a GPU's job, not shipped)"}
    splits = fashion_splits(w.dataset, size, spec.update_size)
    mine, judge = report[spec.weights], report[EVALUATOR_OF[w.dataset]]
    from reconbench.image.models import load_model
    from reconbench.image.models.training import accuracy
    from reconbench.image.track_files import embedded_file

    evaluator = load_model(judge["architecture"], embedded_file(judge["file"]), **judge["arch_kwargs"])
    # an untrained target (size 0) has no training set and so no holdout matched to it
    judged = {"target": splits.target, "holdout": splits.holdout} if size else {}
    if splits.update is not None:
        judged |= {"update": splits.update, "update_holdout": splits.update_holdout}
    entry |= {
        "status": "embedded",
        "source": {"kind": "embedded", "model_file": mine["file"]},
        "target_model_sha256": mine["sha256"],
        **({"target_set_sha256": splits.target.sha256} if size else {}),
        **({"update_set_sha256": splits.update.sha256} if splits.update is not None else {}),
        **({"holdout_set_sha256": splits.holdout.sha256} if size else {}),
        **({"update_holdout_set_sha256": splits.update_holdout.sha256} if splits.update is not None else {}),
        "scenarios": spec.scenarios,
        "query_budget": 1_000_000,
        **({"train_accuracy": mine["train_accuracy"]} if size else {}),
        "test_accuracy": mine["test_accuracy"],
        "evaluation_model": {
            "architecture": judge["architecture"],
            "arch_kwargs": judge["arch_kwargs"],
            "file": judge["file"],
            "sha256": judge["sha256"],
            "trained_on": f"the evaluator block of {w.dataset} (reconbench.data.fashion_splits: "
                          "disjoint from every target, update and holdout image)",
            "accuracy": {name: round(accuracy(evaluator, data), 4) for name, data in judged.items()},
            "recipe": f"{RECIPE} {EVALUATOR_OF[w.dataset]}",
        },
        "recipe": f"{RECIPE} {spec.weights}",
    }
    if w.defense:
        entry["variant"] = w.defense
    return entry


def report_from_files() -> dict:
    """What fashion_targets.build reports (sha256, accuracies), measured again on the shipped files;
    weights not in the package are left out."""
    from reconbench.image.data.fashion_splits import evaluator_training_set, fashion_splits
    from reconbench.core.io import sha256_file
    from reconbench.image.models import load_model
    from reconbench.image.models.fashion_targets import ALL
    from reconbench.image.models.training import accuracy
    from reconbench.image.track_files import embedded_file

    report = {}
    for name, spec in ALL.items():
        path = embedded_file(file_of(name))
        if not path.is_file():
            continue
        model = load_model(spec.architecture, path, **spec.arch_kwargs)
        entry = {"file": file_of(name), "sha256": sha256_file(path), "architecture": spec.architecture,
                 "arch_kwargs": spec.arch_kwargs}
        if spec.train_size == 0:  # untrained (lenet-sigmoid-dlg): the test split's accuracy only
            entry |= {"test_accuracy": round(accuracy(model, fashion_splits(spec.dataset, 100).test), 4)}
        elif spec.train_size:
            splits = fashion_splits(spec.dataset, spec.train_size)
            entry |= {"train_accuracy": round(accuracy(model, splits.target), 4),
                      "test_accuracy": round(accuracy(model, splits.test), 4)}
        else:
            entry |= {"train_accuracy": round(accuracy(model, evaluator_training_set(spec.dataset)), 4)}
        report[name] = entry
    return report


def with_near_copy(entry: dict, known: dict | None = None, calibrate_new: bool = True) -> dict:
    """The row plus its near-copy thresholds, calibrated on the track's public pool (minutes on a
    CPU); `known` (pool sha256 -> thresholds already in the file) is reused when the pool is the
    same; calibrate_new=False leaves the others out (validation then calibrates on the fly)."""
    from reconbench.image.track_files import public_pool
    from reconbench.submissions.nearcopy import calibrate, pool_sha256
    from reconbench.core.tracks import Track

    if entry["status"] == "unpublished":
        return entry
    pool = public_pool(Track.model_validate(entry))
    thresholds = (known or {}).get(pool_sha256(pool)) or (calibrate(pool).to_dict() if calibrate_new else None)
    return entry | {"near_copy": thresholds} if thresholds else entry


def registry_file() -> Path:
    from reconbench.core.tracks import FASHION_FILE

    return Path(str(resources.files("reconbench") / "registry" / FASHION_FILE))


def write_registry(report: dict, path: Path | None = None, near_copy: bool = True) -> None:
    """Rewrite registry/fashion.json from a build report (every row of ROWS whose weights it has);
    near_copy=False calibrates no new thresholds (those already in the file for the same pool stay)."""
    from reconbench.core.io import atomic_path

    path = path or registry_file()
    known, extraction = {}, {}
    if path.is_file():  # thresholds already calibrated on the same pool are kept
        old = json.loads(path.read_text())["tracks"]
        known = {t["near_copy"]["pool_sha256"]: t["near_copy"] for t in old if t.get("near_copy")}
        # the extraction calibration (scripts/extraction_thresholds.py) depends on the dataset only
        extraction = {t["id"]: t["extraction"] for t in old if t.get("extraction")}
    rows = [row(spec, report) for spec in ROWS
            if spec.planned_size or (spec.weights in report and EVALUATOR_OF[TARGETS[spec.weights].dataset] in report)]
    rows = [with_near_copy(r, known, calibrate_new=near_copy) for r in rows]
    rows = [r | {"extraction": extraction[r["id"]]} if r["id"] in extraction else r for r in rows]
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps({"schema_version": 1, "tracks": rows}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    import sys

    write_registry(report_from_files(), near_copy="--no-near-copy" not in sys.argv[1:])
