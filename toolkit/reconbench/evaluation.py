"""The main job: track -> knowledge -> attack -> metrics -> signed result folder.

`evaluate()` is what `recon-submit evaluate` calls; it is usable from Python as well.
"""

from __future__ import annotations

import platform
import shlex
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

from reconbench import __version__
from reconbench.attacks import DEFAULT_ATTACK, Attack, AttackError, Progress, enforce_size, load_attack
from reconbench.io import sha256_file
from reconbench.knowledge import build_knowledge, check_attack_fits
from reconbench.metrics import score
from reconbench.preflight import preflight
from reconbench.results import (
    RECONSTRUCTIONS_FILE,
    AttackInfo,
    Payload,
    Provenance,
    ReconstructionsInfo,
    ResultFile,
    Signature,
    TargetIdentity,
    git_state,
    make_entry_id,
    write_result_dir,
)
from reconbench.scenario import Scenario
from reconbench.signing import load_private_key, sign_payload
from reconbench.tracks import Track, get_track, load_splits, model_file, sha256_bytes

DEFAULT_TRACK = "digits"


@dataclass(frozen=True)
class EvaluationOutput:
    folder: Path
    result: ResultFile
    matches: dict[str, Any]


def choose_scenario(track: Track, attack: type[Attack], requested: str | None) -> Scenario:
    """The requested scenario, or the first of the attack's cells that the track offers."""
    if requested:
        scenario = Scenario.parse(requested)
    else:
        offered = [s for s in attack.scenarios if s in track.scenarios]
        if not offered:
            raise AttackError(
                f"attack '{attack.name}' runs in [{', '.join(attack.scenarios)}]; track '{track.id}' offers none of them"
            )
        scenario = Scenario.parse(offered[0])
    check_attack_fits(attack.name, attack.scenarios, scenario)
    return scenario


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu ({platform.processor() or platform.machine()})"


def run_attack(track: Track, attack_cls: type[Attack], scenario: Scenario, *, config: dict, seed: int,
               device: torch.device, progress: Progress, budget: str = "default"):
    """Build the scenario's knowledge view and run the attack; returns (reconstruction, knowledge)."""
    attack = attack_cls(budget=budget, **config)  # options validated before anything is loaded
    knowledge = build_knowledge(track, scenario, device=device, seed=seed)
    torch.manual_seed(seed)
    rec = attack.run(knowledge, seed=seed, progress=progress)
    rec = enforce_size(rec, knowledge.target_size, knowledge.input_shape)
    if int(rec.labels.min()) < 0 or int(rec.labels.max()) >= track.num_classes:
        raise AttackError(f"attack '{attack_cls.name}' returned labels outside 0..{track.num_classes - 1}")
    return attack, rec, knowledge


def evaluate(
    *,
    track_id: str = DEFAULT_TRACK,
    attack_spec: str = DEFAULT_ATTACK,
    scenario: str | None = None,
    seed: int = 0,
    device: str = "cpu",
    out: Path | None = None,
    key_path: Path,
    config: dict[str, Any] | None = None,
    progress: Progress | None = None,
    command: str | None = None,
    weights_dir: Path | None = None,
    budget: str = "default",
) -> EvaluationOutput:
    track = get_track(track_id)
    track.require_runnable()
    attack_cls = load_attack(attack_spec)
    chosen = choose_scenario(track, attack_cls, scenario)
    attack_cls(budget=budget, **(config or {}))  # bad options fail here, before a long run
    key = load_private_key(key_path)  # fail before a long run, not after
    torch_device = preflight(device=device, out=out, weights_dir=weights_dir)
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    attack, rec, knowledge = run_attack(
        track, attack_cls, chosen, config=config or {}, seed=seed, device=torch_device, progress=progress or Progress(),
        budget=budget,
    )
    wall = time.perf_counter() - t0
    finished = datetime.now(timezone.utc)

    # Scoring is the evaluator's side: only here is the target set (or update set) loaded.
    splits = load_splits(track, ["update" if chosen.training == "dynamic" else "target"])
    target = splits.update if chosen.training == "dynamic" else splits.target
    images, labels = rec.to_uint8().numpy(), rec.labels.numpy()
    report = score(images, labels, target.images, target.labels, device=device, weights_dir=weights_dir)

    import tempfile

    from reconbench.io import save_arrays

    with tempfile.TemporaryDirectory() as tmp:  # hash exactly the bytes that will be written
        probe = Path(tmp) / RECONSTRUCTIONS_FILE
        save_arrays(probe, {"images": images, "labels": labels})
        recon_sha = sha256_file(probe)
    git_commit, git_dirty = git_state(Path(__file__).parent)
    payload = Payload(
        entry_id=make_entry_id(track.id, attack_cls.name, started, recon_sha),
        track=track.id,
        scenario=str(chosen),
        attack=AttackInfo(
            name=attack_cls.name,
            version=attack_cls.version,
            family=attack_cls.family,
            paper=attack_cls.paper,
            code=attack_cls.code_reference() if ":" not in attack_spec else f"{Path(attack_spec.split(':')[0]).name}:{attack_cls.__name__}",
            config=dict(attack.config),
            budget=attack.budget,
        ),
        target=TargetIdentity(
            model_sha256=sha256_bytes(model_file(track).read_bytes()),
            target_set_sha256=target.sha256,
        ),
        metrics=report.metrics,
        reconstructions=ReconstructionsInfo(sha256=recon_sha, count=len(labels), shape=tuple(images.shape[1:])),
        provenance=Provenance(
            toolkit_version=__version__,
            git_commit=git_commit,
            git_dirty=git_dirty,
            python=platform.python_version(),
            torch=torch.__version__,
            device=device_name(torch_device),
            hardware=f"{platform.system()} {platform.machine()}, {torch.get_num_threads()} CPU threads",
            seed=seed,
            command=command or shlex.join(sys.argv),
            started=started,
            finished=finished,
            wall_seconds=round(wall, 3),
            queries=knowledge.query.queries if chosen.access == "black-box" else None,
        ),
    )
    signature = Signature(**sign_payload(payload.model_dump(mode="json"), key))
    result = ResultFile(payload=payload, signature=signature)
    folder = Path(out) if out else Path("recon-results") / payload.entry_id
    write_result_dir(folder, result, images, labels)
    return EvaluationOutput(folder=folder, result=result, matches=report.matches)
