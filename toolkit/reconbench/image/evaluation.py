"""The main job: track -> knowledge -> attack -> metrics -> signed result folder.

`evaluate()` is what `recon-submit evaluate` calls; it is usable from Python as well.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from collections.abc import Callable
from typing import Any

import torch

from reconbench._version import __version__
import numpy as np

from reconbench.core.attack_source import attack_source
from reconbench.image.attacks import ATTACKS, DEFAULT_ATTACK, Attack, AttackError, Progress, Reconstruction, enforce_size, load_attack
from reconbench.core.io import sha256_file
from reconbench.pipeline.isolation.limits import Limits, for_budget
from reconbench.pipeline.isolation.parent import AttackMeta, AttackProcess
from reconbench.pipeline.isolation.parent import attack_spec as spec_of
from reconbench.image.knowledge import Knowledge, KnowledgeError, build_knowledge, check_attack_fits
from reconbench.image.metrics import score
from reconbench.pipeline.preflight import device_name, preflight
from reconbench.image.results import (
    RECONSTRUCTIONS_FILE,
    AttackInfo,
    MembershipInfo,
    Payload,
    SealedInfo,
    Provenance,
    ReconstructionsInfo,
    ResultFile,
    Signature,
    SurrogateInfo,
    TargetIdentity,
    git_state,
    make_entry_id,
    write_result_dir,
)
from reconbench.core.scenario import Scenario
from reconbench.core.signing import check_key_file, load_private_key, sign_payload
from reconbench.core.tracks import Track, get_track
from reconbench.image.track_files import load_splits, target_model_sha256, track_holdout

DEFAULT_TRACK = "digits"
# What the evaluator imports after the attack has run (scoring, the Hub for weights and target
# sets, writing and signing): imported while the attack's process starts, so that nothing the
# attack's run could have written is imported into this process afterwards.
EVALUATOR_MODULES = ("tempfile", "reconbench.core.io", "reconbench.image.results", "reconbench.core.attack_source", "reconbench.core.signing",
                     "reconbench.core.console", "reconbench.core.hub", "reconbench.image.metrics.score", "reconbench.image.metrics.fid",
                     "reconbench.image.metrics.leakage", "reconbench.core.membership", "reconbench.core.extraction",
                     "reconbench.image.metrics.extraction", "scipy.special", "reconbench.core.redact",
                     "reconbench.image.metrics.classifier", "reconbench.image.metrics.download", "reconbench.image.metrics.feature_cache",
                     "reconbench.image.models", "reconbench.image.track_files", "reconbench.image.data.digits", "reconbench.zoo.loading",
                     "reconbench.image.surrogate.route", "scipy.linalg.blas", "huggingface_hub",
                     "encodings.idna", "encodings.utf_16_be", "stringprep")


def preload() -> None:
    """Import the evaluator's side before the attack runs (EVALUATOR_MODULES)."""
    import importlib

    for name in EVALUATOR_MODULES:
        importlib.import_module(name)


@dataclass(frozen=True)
class EvaluationOutput:
    folder: Path
    result: ResultFile
    matches: dict[str, Any]


def choose_scenario(track: Track, attack, requested: str | None) -> Scenario:
    """The requested scenario, or the first of the attack's cells that the track offers.

    `attack`: an Attack class or an AttackMeta (anything with `name` and `scenarios`)."""
    if requested:
        scenario = Scenario.parse(requested)
    else:
        offered = [s for s in attack.scenarios if s in track.scenarios]
        if not offered:
            raise AttackError(
                f"attack '{attack.name}' runs in [{', '.join(attack.scenarios)}]; track '{track.id}' offers none of them"
            )
        scenario = Scenario.parse(offered[0])
    try:
        check_attack_fits(attack.name, attack.scenarios, scenario)
    except KnowledgeError as exc:
        raise KnowledgeError(f"{exc}{surrogate_hint(attack, scenario)}") from None
    return scenario


def surrogate_hint(attack, scenario: Scenario) -> str:
    """Where a white-box attack asked for a static black-box cell, the way it can run there (image/surrogate)."""
    twin = Scenario(training=scenario.training, access="white-box", data=scenario.data)
    if scenario.access != "black-box" or scenario.training != "static" or \
            not any(twin.allows(Scenario.parse(n)) for n in attack.scenarios):
        return ""
    ways = "--surrogate dfme" + (" or --surrogate aux" if scenario.data != "none" else "")
    return f"; a white-box attack runs in {scenario} through a model stolen by queries: add {ways}"


@dataclass(frozen=True)
class AttackRun:
    meta: AttackMeta  # what the attack declared
    config: dict[str, Any]  # its configuration after the run ("auto" budgets resolved)
    scenario: Scenario
    reconstruction: Reconstruction  # checked and sized to |D_tar|
    knowledge: Knowledge  # the evaluator's view: its query counters are the ones recorded
    budget: str = "default"  # the budget preset the config started from
    sandbox: str = "none"  # the OS sandbox the attack's process ran in (provenance.sandbox)
    limits: str | None = None  # the resource limits it ran under (provenance.limits)


def _checked(track: Track, meta: AttackMeta, knowledge: Knowledge, images, labels, facts=None) -> Reconstruction:
    if not isinstance(images, torch.Tensor):
        images, labels = torch.from_numpy(np.array(images)), torch.from_numpy(np.array(labels))
    rec = enforce_size(Reconstruction(images, labels, dict(facts or {})), knowledge.target_size, knowledge.input_shape)
    if int(rec.labels.min()) < 0 or int(rec.labels.max()) >= track.num_classes:
        raise AttackError(f"attack '{meta.name}' returned labels outside 0..{track.num_classes - 1}")
    return rec


def _meta_of(cls: type[Attack]) -> AttackMeta:
    return AttackMeta(name=cls.name, paper=cls.paper, family=cls.family, scenarios=tuple(cls.scenarios),
                      version=cls.version, code=cls.code_reference())


def attack_run(track: Track, attack: str | type[Attack], requested: str | Scenario | None, *, config: dict, seed: int,
               device: torch.device, progress: Progress, budget: str = "default", isolate: bool = True,
               prepare: Callable[[Knowledge], Knowledge] | None = None, limits: Limits | None = None) -> AttackRun:
    """Choose the scenario, build its view, run the attack; returns the checked reconstructions.

    isolate=True (every evaluation): the attack runs in its own process (reconbench.pipeline.isolation),
    which receives only the view. isolate=False runs it in this process; it exists as the
    reference for benchmarks/bench_isolation.py and is never used to make a result file.
    prepare: evaluator-side code that turns the scenario's view into the one the attack gets (e.g.
    a surrogate route: steal with the view's queries, hand over a white-box view of the stolen
    model); the caller then chose `requested` itself and the attack's fit is not checked here.
    AttackRun.knowledge is always the scenario's own view, whose counters the result records.
    limits: the attack's resource limits (default: its budget's; reconbench.pipeline.isolation.limits).
    """
    requested = str(requested) if requested is not None else None

    def choose(meta: AttackMeta) -> Scenario:
        return Scenario.parse(requested) if prepare is not None else choose_scenario(track, meta, requested)

    if not isolate:
        cls = load_attack(attack) if isinstance(attack, str) else attack
        meta = _meta_of(cls)
        chosen = choose(meta)
        knowledge = build_knowledge(track, chosen, device=device, seed=seed)
        view = prepare(knowledge) if prepare else knowledge
        instance = cls(budget=budget, **config)
        torch.manual_seed(seed)
        rec = instance.run(view, seed=seed, progress=progress)
        return AttackRun(meta, dict(instance.config), chosen, _checked(track, meta, view, rec.images, rec.labels, rec.provenance), knowledge,
                         instance.budget)
    spec = spec_of(attack)
    if spec in ATTACKS:
        ATTACKS[spec](budget=budget, **config)  # bad options fail here, before a long run (our code: safe to import)
    with AttackProcess(spec, config, budget, device=device, limits=limits) as process:
        preload()  # while the attack's interpreter starts
        # A registered attack's declaration is known here, so the view is built while the attack's
        # process starts (imports take seconds); a bring-your-own attack is never imported here.
        known = _meta_of(ATTACKS[spec]) if spec in ATTACKS else None
        meta = known or process.meta()
        chosen = choose(meta)
        knowledge = build_knowledge(track, chosen, device=device, seed=seed)
        view = prepare(knowledge) if prepare else knowledge
        if process.meta() != meta:
            raise AttackError(f"attack '{spec}': its process loaded a different attack ({process.meta().code})")
        images, labels = process.run(view, seed=seed, progress=progress)
        return AttackRun(meta, dict(process.config), chosen, _checked(track, meta, view, images, labels, process.facts), knowledge,
                         budget, process.sandbox, process.limits.record())


def run_attack(track: Track, attack: str | type[Attack], scenario: Scenario, *, config: dict, seed: int,
               device: torch.device, progress: Progress, budget: str = "default", isolate: bool = True):
    """`attack_run` for a given scenario; returns (AttackRun, reconstruction, knowledge)."""
    run = attack_run(track, attack, scenario, config=config, seed=seed, device=device, progress=progress, budget=budget,
                     isolate=isolate)
    return run, run.reconstruction, run.knowledge


def sealed_marker(track: Track) -> SealedInfo:
    """The marker of a result on a sealed track: what it could not score, and the draw it ran on."""
    from reconbench.image.sealed import PENDING

    seal = track.seal
    return SealedInfo(group=seal.group, draw=seal.draw, season=seal.season, pool_sha256=seal.pool_sha256,
                      commitment=seal.commitment, pending=list(PENDING))


def evaluate(
    *,
    track_id: str = DEFAULT_TRACK,
    attack_spec: str | type[Attack] = DEFAULT_ATTACK,  # a name, path/to/file.py:Class, or the class
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
    surrogate: str | None = None,
    limits: dict[str, str] | None = None,
) -> EvaluationOutput:
    from reconbench.core.run_command import recorded_command

    options_given, scenario_given = dict(config or {}), scenario  # as given: the command records them
    track = get_track(track_id)
    run_limits = for_budget(budget, limits)  # a bad --limit fails here, before anything runs
    track.require_runnable()
    surrogate_config: dict[str, Any] = {}
    if surrogate:  # a white-box attack in a black-box cell, through a stolen model (reconbench.image.surrogate)
        from reconbench.image.surrogate import route

        if attack_spec not in ATTACKS:
            raise route.SurrogateError("--surrogate runs the registered attacks (the evaluator never imports a bring-your-own one)")
        scenario = str(route.choose_cell(track, ATTACKS[attack_spec], scenario, surrogate))
        config, surrogate_config = route.split_config(config or {})
        route.check_query_budget(track, surrogate, budget, surrogate_config)  # options and the track's query budget
        ATTACKS[attack_spec](budget=budget, **config)
    elif attack_spec in ATTACKS:  # our own code: its scenario and options fail here, before the key and the run
        choose_scenario(track, ATTACKS[attack_spec], scenario)
        ATTACKS[attack_spec](budget=budget, **(config or {}))
    check_key_file(key_path)  # fail before a long run; the key is loaded only after the attack has ended
    torch_device = preflight(device=device, out=out, weights_dir=weights_dir)
    source = attack_source(attack_spec)  # a bring-your-own attack's files, hashed before it runs
    started = datetime.now(timezone.utc)
    stolen: list = []  # filled by the surrogate route's prepare step (evaluator side)

    def steal_then_view(knowledge: Knowledge) -> Knowledge:
        got = route.steal(track, knowledge, surrogate, budget=budget, overrides=surrogate_config, seed=seed,
                          progress=progress or Progress())
        stolen.append(got)
        return route.surrogate_view(knowledge, got.model)

    run = attack_run(track, attack_spec, scenario, config=config or {}, seed=seed, device=torch_device,
                     progress=progress or Progress(), budget=budget, prepare=steal_then_view if surrogate else None,
                     limits=run_limits)
    chosen, rec, knowledge, meta = run.scenario, run.reconstruction, run.knowledge, run.meta
    finished = datetime.now(timezone.utc)
    # The wall time from the same clock as started/finished, which validation compares it with: on a
    # loaded virtual machine the monotonic clock drifted 66 s from the wall clock in a 13-minute run.
    wall = (finished - started).total_seconds()

    # Scoring is the evaluator's side: only here is the target set (or update set) loaded.
    splits = load_splits(track, ["update" if chosen.training == "dynamic" else "target"])
    target = splits.update if chosen.training == "dynamic" else splits.target
    holdout = track_holdout(track, chosen.training == "dynamic")
    images, labels = rec.to_uint8().numpy(), rec.labels.numpy()
    report = score(images, labels, target.images, target.labels, device=device, weights_dir=weights_dir, track=track,
                   holdout_images=None if holdout is None else holdout.images,
                   holdout_labels=None if holdout is None else holdout.labels)

    import tempfile

    from reconbench.core.io import save_arrays

    with tempfile.TemporaryDirectory() as tmp:  # hash exactly the bytes that will be written
        probe = Path(tmp) / RECONSTRUCTIONS_FILE
        save_arrays(probe, {"images": images, "labels": labels})
        recon_sha = sha256_file(probe)
    git_commit, git_dirty = git_state(Path(__file__).parent)
    payload = Payload(
        entry_id=make_entry_id(track.id, meta.name, started, recon_sha),
        track=track.id,
        scenario=str(chosen),
        attack=AttackInfo(
            name=meta.name,
            version=meta.version,
            family=meta.family,
            paper=meta.paper,
            code=meta.code if source is None else f"{source.entry_file}:{attack_spec.rsplit(':', 1)[1]}",
            config=dict(run.config),
            budget=run.budget,
            source_sha256=source.sha256 if source else None,
        ),
        target=TargetIdentity(
            model_sha256=target_model_sha256(track),
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
            command=recorded_command(command, track_id, attack_spec, scenario_given, seed, device,
                                     options_given, budget, surrogate),
            started=started,
            finished=finished,
            wall_seconds=round(wall, 3),
            queries=knowledge.query.queries if chosen.access == "black-box" else None,
            attack_facts=dict(rec.provenance) or None,
            sandbox=run.sandbox,
            limits=run.limits,
        ),
        membership=None if holdout is None else MembershipInfo.of(holdout.sha256, report.membership, report.extraction),
        sealed=None if track.seal is None else sealed_marker(track),
        surrogate=None if not stolen else SurrogateInfo(
            method=stolen[0].method, architecture=stolen[0].architecture, budget=stolen[0].budget, config=stolen[0].config,
            queries=stolen[0].queries, attack_view=str(route.white_box_cell(chosen)),
            **dict(zip(("agreement", "agreement_images"), route.agreement(track, stolen[0].model, torch_device))),
        ),
    )
    signature = Signature(**sign_payload(payload.model_dump(mode="json"), load_private_key(key_path)))
    result = ResultFile(payload=payload, signature=signature)
    folder = Path(out) if out else Path("recon-results") / payload.entry_id
    write_result_dir(folder, result, images, labels, attack_files=source.files if source else None)
    return EvaluationOutput(folder=folder, result=result, matches=report.matches)
