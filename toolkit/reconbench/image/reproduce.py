"""An image entry's reproduction: the attack to re-run (registered, or the entry's own attack/
source, hash-checked), the re-run through evaluate (in the sandbox, the surrogate stolen again), and
the scoring of a run's reconstructions.safetensors against the entry's target set."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from reconbench.core.attack_source import ATTACK_DIR, source_problem
from reconbench.reproduction.entry import (Entry, ReproduceError, record, require_registered,
                                           require_same_target)
from reconbench.reproduction.record import ReproductionRecord
from reconbench.image.results import RECONSTRUCTIONS_FILE, RESULT_FILE, load_reconstructions

RERUN_NEEDS_SANDBOX = True  # the re-run runs the entry's attack: a record needs it sandboxed


def reproduction_spec(folder: Path, result) -> str:
    """What the re-run loads: a registered name, or attack/<file>.py:Class in the entry."""
    from reconbench.image.attacks import ATTACKS

    attack = result.payload.attack
    if attack.source_sha256 is None:
        require_registered(folder, result, ATTACKS)
        return attack.name
    if attack.name in ATTACKS:  # a registered name runs the registered code, never a shipped source
        raise ReproduceError(f"{folder / RESULT_FILE}: attack '{attack.name}' is registered, but the entry signs an "
                             "attack/ source of its own: a modified attack needs a name of its own")
    source = folder / ATTACK_DIR
    problem = source_problem(source, attack.source_sha256)
    if problem:
        raise ReproduceError(problem)
    file, _, cls = attack.code.rpartition(":")
    rel = PurePosixPath(file)
    if not file.endswith(".py") or rel.is_absolute() or ".." in rel.parts or not (source / rel).is_file():
        raise ReproduceError(f"{folder / RESULT_FILE}: attack.code '{attack.code}' does not name a file of {ATTACK_DIR}/")
    return f"{source / rel}:{cls}"


def rerun(entry: Entry, *, key: Path, config: dict, weights_dir: Path | None, **common) -> None:
    from reconbench.image.evaluation import evaluate

    p = entry.result.payload
    surrogate = p.surrogate.method if p.surrogate is not None else None
    if p.surrogate is not None:  # the model stolen again with the recorded configuration (every resolved value)
        from reconbench.image.surrogate.route import PREFIX

        config.update({PREFIX + k: v for k, v in p.surrogate.config.items()})
    evaluate(attack_spec=entry.spec, key_path=key, config=config, surrogate=surrogate, weights_dir=weights_dir, **common)


def score_run(entry: Entry, run_dir: Path, *, device: str, weights_dir: Path | None) -> ReproductionRecord:
    from reconbench.image.metrics import score
    from reconbench.image.track_files import load_splits, track_holdout
    from reconbench.core.tracks import get_track

    p = entry.result.payload
    recon = run_dir / RECONSTRUCTIONS_FILE
    images, labels = load_reconstructions(recon)
    if len(labels) != p.reconstructions.count or tuple(images.shape[1:]) != tuple(p.reconstructions.shape):
        raise ReproduceError(f"{recon}: {images.shape} reconstructions, the entry has {p.reconstructions.count} "
                             f"of {tuple(p.reconstructions.shape)}")
    track = get_track(p.track)
    dynamic = p.scenario.startswith("dynamic/")
    splits = load_splits(track, ["update" if dynamic else "target"])
    target = splits.update if dynamic else splits.target
    require_same_target(entry, target.sha256)
    holdout = track_holdout(track, dynamic)
    # track: its pinned evaluation classifier scores acc_top1/acc_top5/knn_dist, as evaluate and validate do
    report = score(images, labels, target.images, target.labels, device=device, weights_dir=weights_dir, track=track,
                   holdout_images=None if holdout is None else holdout.images,
                   holdout_labels=None if holdout is None else holdout.labels)
    return record(entry, run_dir, recon, report.metrics, device, report.membership)
