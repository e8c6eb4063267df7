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
from typing import TYPE_CHECKING, Any, Callable

# the line a result records (core/run_command.py): named here for the CLI and the sweep
from reconbench.core.run_command import command_of as _command_of, evaluate_command  # noqa: F401

if TYPE_CHECKING:
    import numpy as np

    from reconbench.image.attacks.base import Attack, Progress, Reconstruction
    from reconbench.image.evaluation import EvaluationOutput
    from reconbench.core.report import ScoreReport
    from reconbench.modalities import Modality

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

    `attack`: a built-in name, `path/to/file.py:ClassName`, or an Attack subclass. As in `evaluate`,
    the attack runs in its own process holding only its scenario's view; a class of the running
    script or session (`__main__`: a notebook cell, `python -c`, stdin, or a script run as
    `python my_script.py`) runs in this process instead: importing it there would run the script's
    own calls again, or find no file at all. That is fine for experiments, and it is why nothing is
    scored, signed or written here.
    """
    from reconbench.image.attacks import Progress, load_attack
    from reconbench.image.evaluation import attack_run
    from reconbench.image.plugin import has_source_file
    from reconbench.pipeline.preflight import check_device
    from reconbench.core.tracks import get_track

    t = get_track(track)
    t.require_runnable()
    in_process = isinstance(attack, type) and (attack.__module__ == "__main__" or not has_source_file(attack))
    if in_process:
        load_attack(attack)  # the class rules (name, family, scenarios, run) before anything runs
    run = attack_run(t, attack, scenario, config=dict(options or {}), seed=seed, device=check_device(device),
                     progress=progress or Progress(), budget=budget, isolate=not in_process)
    return run.reconstruction


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

    from reconbench.core.io import FileFormatError
    from reconbench.image.metrics import score as run_score
    from reconbench.pipeline.preflight import check_device, check_weights_dir
    from reconbench.core.tracks import TrackError, get_track
    from reconbench.image.track_files import load_splits

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
                     weights_dir=weights_dir, track=t)


def _as_arrays(reconstructions) -> tuple[np.ndarray, np.ndarray, str]:
    """(uint8 images, int64 labels, a name for messages) from any of score()'s accepted forms."""
    import numpy as np

    from reconbench.core.io import FileFormatError

    if isinstance(reconstructions, (str, Path)):
        from reconbench.image.results import load_reconstructions

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
    from reconbench.image.attacks.base import Reconstruction, check_value_ranges

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
    surrogate: str | None = None,
    limits: dict[str, str] | None = None,
) -> EvaluationOutput:
    """Run, score, sign and write a result folder (what `recon-submit evaluate` does).

    An Attack class is run from its source file (the attack runs in its own process), so a class
    defined in a notebook cell must be saved to a file first: `run_attack` takes it as it is.

    `key`: the ed25519 private key file; by default keygen's, created on first use. `out`: the
    folder to create (it must not exist); by default ./recon-results/<entry-id>/. `limits`: the
    attack's resource limits raised above its budget's (e.g. {"memory": "64GiB"}; docs/sandbox.md). Returns
    EvaluationOutput: `.folder`, `.result.payload` (metrics, provenance), `.matches`.
    """
    from reconbench.core.signing import default_key_path, generate_key

    key_path = Path(key) if key is not None else default_key_path()
    if key is None and not key_path.exists():
        generate_key(key_path)
    modality = check_track_and_key(track, key_path)

    def command_for(spec: str) -> str:  # what the CLI would have been given; never sys.argv (it holds local paths)
        return command if command is not None else _command_of(track, spec, scenario, seed, device, options, budget, surrogate)

    return modality.evaluate(attack, track, key_path=key_path, command_for=command_for, scenario=scenario, seed=seed,
                             device=device, options=options, budget=budget, out=out, weights_dir=weights_dir,
                             progress=progress, surrogate=surrogate, limits=limits)


def evaluate_draws(attack: str | type[Attack], group: str, *, draws: str | int = "all", out: str | Path | None = None,
                   command_for_track: Callable[[str], str] | None = None, **run: Any) -> list[EvaluationOutput]:
    """`evaluate` on a sealed twin: the attack runs on each of its draws (`draws`: "all", or the first N),
    one signed result per draw (docs/sealed.md). `out`: a folder to create, one result folder per draw in
    it (out/<draw>/); by default each goes to ./recon-results/<entry-id>/. `command_for_track`: the command
    line that reproduces the run on one draw; by default evaluate's own. Other arguments: as `evaluate`."""
    from reconbench.core.tracks import pick_draws
    from reconbench.pipeline.preflight import check_out

    chosen = pick_draws(group, draws)
    check_out(Path(out) if out is not None else None)  # before any draw runs: a bad --out costs no run
    return [evaluate(attack, t.id, out=None if out is None else Path(out) / t.id,
                     command=command_for_track(t.id) if command_for_track else None, **run) for t in chosen]


def check_track_and_key(track: str, key_path: str | Path) -> Modality:
    """A misspelled track or a missing key is one line at once, before torch and the attack load
    (it cost seconds of CPU: the command line calls this before importing anything heavy). Returns
    the plug-in of the track's modality, which runs it."""
    from reconbench.modalities import for_track
    from reconbench.core.signing import check_key_file

    check_key_file(Path(key_path))  # not loaded: the key is read only to sign, after the attack ended
    modality = for_track(track)
    modality.check_track(track)
    return modality


