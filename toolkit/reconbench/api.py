"""The Python API: `reconbench.run_attack`, `reconbench.score`, `reconbench.evaluate`.

    import reconbench
    rec = reconbench.run_attack("mi-face", "digits", options={"iterations": 50})   # or an Attack class
    report = reconbench.score(rec, "digits")          # report.metrics["ssim"].format()
    out = reconbench.evaluate("mi-face", "digits", out="runs/x")   # signed result folder, as the CLI writes

The CLI's `evaluate` and `score` call these functions. Heavy modules are imported inside them, so
`import reconbench` stays light.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from reconbench.attacks.base import Attack, Progress, Reconstruction
    from reconbench.evaluation import EvaluationOutput
    from reconbench.metrics.report import ScoreReport

DEFAULT_TRACK = "digits"


def run_attack(
    attack: str | type[Attack],
    track: str = DEFAULT_TRACK,
    *,
    scenario: str | None = None,
    seed: int = 0,
    device: str = "cpu",
    options: dict[str, Any] | None = None,
    budget: str = "default",
    progress: Progress | None = None,
) -> Reconstruction:
    """Run an attack on a track and return its reconstructions (|D_tar| images in [0, 1], labels).

    `attack`: a built-in name, `path/to/file.py:ClassName`, or an Attack subclass (one defined in
    a notebook works). The attack gets only its scenario's knowledge view, and runs in this process:
    nothing is scored, signed or written (that is `evaluate`).
    """
    import torch

    from reconbench.attacks import Progress, enforce_size, load_attack
    from reconbench.evaluation import choose_scenario
    from reconbench.knowledge import build_knowledge
    from reconbench.preflight import check_device
    from reconbench.tracks import get_track

    t = get_track(track)
    t.require_runnable()
    cls = load_attack(attack)
    chosen = choose_scenario(t, cls, scenario)
    instance = cls(budget=budget, **(options or {}))  # bad options fail before anything is loaded
    knowledge = build_knowledge(t, chosen, device=check_device(device), seed=seed)
    torch.manual_seed(seed)
    rec = instance.run(knowledge, seed=seed, progress=progress or Progress())
    return enforce_size(rec, knowledge.target_size, knowledge.input_shape)


def score(
    reconstructions: Reconstruction | str | Path | tuple[np.ndarray, np.ndarray],
    track: str = DEFAULT_TRACK,
    *,
    dynamic: bool = False,
    device: str = "cpu",
    weights_dir: str | Path | None = None,
) -> ScoreReport:
    """Score reconstructions against a track's target set (`dynamic=True`: its update set).

    `reconstructions`: what `run_attack` returns, a reconstructions.safetensors file, or
    (uint8 images (N, C, H, W), int64 labels). The same rules as `evaluate`: the track's image
    shape, labels in range, at most |D_tar| images. Returns a ScoreReport: `.metrics[name]`
    (value, coverage, `.format()`), `.matches[name]` (the matched target of each image).
    """
    import numpy as np

    from reconbench.io import FileFormatError
    from reconbench.metrics import score as run_score
    from reconbench.preflight import check_device, check_weights_dir
    from reconbench.tracks import TrackError, get_track
    from reconbench.track_files import load_splits

    images, labels, what = _as_arrays(reconstructions)
    t = get_track(track)
    check_weights_dir(Path(weights_dir) if weights_dir is not None else None)
    check_device(device)
    part = "update" if dynamic else "target"
    target = getattr(load_splits(t, [part]), part)
    if target is None:
        raise TrackError(f"track '{track}' has no {part} set")
    if tuple(images.shape[1:]) != tuple(t.input_shape):
        raise FileFormatError(f"{what}: images are {tuple(images.shape[1:])}, track '{track}' needs {tuple(t.input_shape)}")
    if labels.size and (labels.min() < 0 or labels.max() >= t.num_classes):
        raise FileFormatError(f"{what}: labels outside 0..{t.num_classes - 1}")
    if len(labels) > len(target):  # the rule evaluate applies (attacks.base.enforce_size)
        raise FileFormatError(f"{what}: {len(labels)} reconstructions, more than |D_tar| = {len(target)} of track '{track}'")
    if len(labels) == 0:
        raise FileFormatError(f"{what}: no reconstructions")
    return run_score(np.ascontiguousarray(images), labels, target.images, target.labels, device=device,
                     weights_dir=weights_dir)


def _as_arrays(reconstructions) -> tuple[np.ndarray, np.ndarray, str]:
    """(uint8 images, int64 labels, a name for messages) from any of score()'s accepted forms."""
    import numpy as np

    from reconbench.io import FileFormatError

    if isinstance(reconstructions, (str, Path)):
        from reconbench.results import load_reconstructions

        images, labels = load_reconstructions(Path(reconstructions))
        return images, labels, str(reconstructions)
    if isinstance(reconstructions, tuple) and len(reconstructions) == 2:
        images, labels = (np.asarray(a) for a in reconstructions)
        if images.dtype != np.uint8:
            raise FileFormatError(f"images are {images.dtype}: pass uint8 0-255 arrays, or the Reconstruction run_attack returns")
        if labels.dtype.kind not in "iu":
            raise FileFormatError(f"labels are {labels.dtype}: pass integer class indices")
        if images.ndim != 4 or labels.shape != (images.shape[0],):
            raise FileFormatError(f"images must be (N, C, H, W) with N labels, got {images.shape} and {labels.shape}")
        return images, labels.astype(np.int64), "reconstructions"
    from reconbench.attacks.base import Reconstruction, check_value_ranges

    if isinstance(reconstructions, Reconstruction):
        check_value_ranges(reconstructions)
        return reconstructions.to_uint8().numpy(), reconstructions.labels.cpu().numpy().astype(np.int64), "reconstructions"
    raise TypeError(f"score() takes a Reconstruction, a file path or (images, labels), not {type(reconstructions).__name__}")


def evaluate(
    attack: str | type[Attack],
    track: str = DEFAULT_TRACK,
    *,
    scenario: str | None = None,
    seed: int = 0,
    device: str = "cpu",
    options: dict[str, Any] | None = None,
    budget: str = "default",
    out: str | Path | None = None,
    key: str | Path | None = None,
    weights_dir: str | Path | None = None,
    progress: Progress | None = None,
    command: str | None = None,
) -> EvaluationOutput:
    """Run, score, sign and write a result folder (what `recon-submit evaluate` does).

    `key`: the ed25519 private key file; by default keygen's, created on first use. `out`: the
    folder to create (it must not exist); by default ./recon-results/<entry-id>/. Returns
    EvaluationOutput: `.folder`, `.result.payload` (metrics, provenance), `.matches`.
    """
    from reconbench.evaluation import evaluate as run
    from reconbench.signing import default_key_path, generate_key

    key_path = Path(key) if key is not None else default_key_path()
    if key is None and not key_path.exists():
        generate_key(key_path)
    return run(
        track_id=track, attack_spec=attack, scenario=scenario, seed=seed, device=device,
        out=Path(out) if out is not None else None, key_path=key_path, config=dict(options or {}),
        progress=progress, command=command, weights_dir=Path(weights_dir) if weights_dir is not None else None,
        budget=budget,
    )
