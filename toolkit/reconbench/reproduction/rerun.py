"""Load an entry for reproduction, re-run it from its signed provenance, score a run, compare.

The re-run is `evaluate` with everything taken from the signed payload: track, scenario, seed,
the full attack configuration and budget preset, and the attack itself: a registered attack by
name (the toolkit's code at the reproducer's commit), or a bring-your-own attack from the entry's
`attack/` folder, whose hash must equal the signed `attack.source_sha256` before anything runs.
Scoring is separate (`score_run`) so that the workflow can score in a job that runs no
contributor code: it reads only the run's reconstructions (safetensors) and its result.json (JSON).
A text entry (payload.modality "text") re-runs its registered text attack through evaluate_text and
is scored on its reconstructions.jsonl with the text metrics, under the same tolerances.
"""

from __future__ import annotations

import contextlib
import hashlib
import platform
import re
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from reconbench._version import __version__
from reconbench.attack_source import ATTACK_DIR, is_file_attack, source_problem
from reconbench.io import sha256_file
from reconbench.reproduction import compare, tolerances
from reconbench.reproduction.record import Comparison, ReproductionRecord, RunInfo
from reconbench.results import (RECONSTRUCTIONS_FILE, RESULT_FILE, ResultError, ResultFile, git_state,
                                load_reconstructions, payload_dict)
from reconbench.signing import SigningError, canonical, verify_payload


class ReproduceError(Exception):
    """An entry that cannot be reproduced as asked; the message names the file and the reason."""


@dataclass(frozen=True)
class Entry:
    folder: Path
    team: str
    result: ResultFile
    spec: str  # what the re-run loads: a registered name, or attack/<file>.py:Class in the entry
    payload_sha256: str


def payload_sha256(result: ResultFile) -> str:
    return hashlib.sha256(canonical(payload_dict(result))).hexdigest()


def _team_keys(team_dir: Path) -> list[str]:
    from reconbench.submissions.team import TeamError, load_team

    try:
        team = load_team(team_dir)
    except TeamError as exc:
        raise ReproduceError(str(exc)) from None
    return [k if isinstance(k, str) else str(getattr(k, "key", k)) for k in team.keys]


def load_entry(entry_dir: Path) -> Entry:
    """The entry's signed payload (signature checked against its team's keys) and the attack to run."""
    from reconbench.attacks import ATTACKS

    from reconbench.text.results import TextResultFile, parse_any_result

    folder = Path(entry_dir)
    if not (folder / RESULT_FILE).is_file():
        raise ReproduceError(f"{folder}: not an entry folder (no {RESULT_FILE} in it); pass submissions/<team>/<entry-id>")
    try:
        result = parse_any_result(folder / RESULT_FILE)
        verify_payload(payload_dict(result), result.signature.model_dump(), trusted_keys=_team_keys(folder.parent))
    except ResultError as exc:  # its message names the file
        raise ReproduceError(str(exc)) from None
    except SigningError as exc:
        raise ReproduceError(f"{folder / RESULT_FILE}: {exc}") from None
    attack = result.payload.attack
    if isinstance(result, TextResultFile):
        from reconbench.text.attacks import TEXT_ATTACKS

        _require_registered(folder, result, TEXT_ATTACKS)  # text tracks run registered text attacks only
        return Entry(folder=folder, team=folder.parent.name, result=result, spec=attack.name,
                     payload_sha256=payload_sha256(result))
    if attack.source_sha256 is None:
        _require_registered(folder, result, ATTACKS)
        spec = attack.name
    elif attack.name in ATTACKS:  # a registered name runs the registered code, never a shipped source
        raise ReproduceError(f"{folder / RESULT_FILE}: attack '{attack.name}' is registered, but the entry signs an "
                             "attack/ source of its own: a modified attack needs a name of its own")
    else:
        source = folder / ATTACK_DIR
        problem = source_problem(source, attack.source_sha256)
        if problem:
            raise ReproduceError(problem)
        file, _, cls = attack.code.rpartition(":")
        rel = PurePosixPath(file)
        if not file.endswith(".py") or rel.is_absolute() or ".." in rel.parts or not (source / rel).is_file():
            raise ReproduceError(f"{folder / RESULT_FILE}: attack.code '{attack.code}' does not name a file of {ATTACK_DIR}/")
        spec = f"{source / rel}:{cls}"
    return Entry(folder=folder, team=folder.parent.name, result=result, spec=spec, payload_sha256=payload_sha256(result))


def _require_registered(folder: Path, result, registry: dict) -> None:
    """The entry's attack is registered here at the version it ran (else there is no code to re-run)."""
    attack = result.payload.attack
    if is_file_attack(attack.code) or attack.name not in registry:
        raise ReproduceError(f"{folder}: attack '{attack.name}' ({attack.code}) is not registered and the entry signs no "
                             "attack source (source_sha256), so there is no code to re-run")
    if registry[attack.name].version != attack.version:  # the toolkit's code changed since: not the same attack
        commit = result.payload.provenance.git_commit
        raise ReproduceError(f"{folder}: attack '{attack.name}' is version {registry[attack.name].version} in this toolkit, "
                             f"the entry ran version {attack.version}; reproduce it with the toolkit it ran with"
                             + (f" (commit {commit})" if commit else ""))


def _is_text(entry: Entry) -> bool:
    return getattr(entry.result.payload, "modality", "image") == "text"


def rerun(entry: Entry, out: Path, *, device: str = "cpu", max_seconds: float | None = None,
          weights_dir: Path | None = None, progress=None) -> Path:
    """Run the entry's attack again into `out` (a result folder signed by a throwaway key), with the
    CPU thread count the entry recorded."""
    p = entry.result.payload
    if max_seconds is not None and p.provenance.wall_seconds > max_seconds:
        raise ReproduceError(f"{entry.folder}: recorded wall time {p.provenance.wall_seconds:.0f} s is over the "
                             f"budget of {max_seconds:.0f} s; not re-run here")
    threads = recorded_threads(p.provenance.hardware)
    if threads is not None and threads > MAX_RERUN_THREADS:  # a forged count would spawn that many threads here
        raise ReproduceError(f"{entry.folder}: the entry records {threads} CPU threads, more than the {MAX_RERUN_THREADS} "
                             "a re-run takes; not re-run here")
    with _threads_of(p.provenance.hardware):
        return _rerun(entry, out, device=device, weights_dir=weights_dir, progress=progress)


MAX_RERUN_THREADS = 256  # the largest CPU thread count a re-run takes from an entry (more: refused)


def recorded_threads(hardware: str) -> int | None:
    """The "N CPU threads" the run recorded in provenance.hardware, or None."""
    found = re.search(r"(\d+) CPU threads", hardware or "")
    return int(found.group(1)) if found else None


@contextlib.contextmanager
def _threads_of(hardware: str):
    """The run's recorded CPU thread count ("..., N CPU threads"), for the re-run: a CPU run's floating-point
    sums depend on it (Deep-Leakage's example, made with 1 thread, differs in 53% of its pixels when re-run
    with 2, with or without the sandbox). The attack's process takes the evaluator's count."""
    import torch

    threads = recorded_threads(hardware)
    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _rerun(entry: Entry, out: Path, *, device: str, weights_dir: Path | None, progress) -> Path:
    from reconbench.evaluation import evaluate
    from reconbench.signing import generate_key

    p = entry.result.payload
    config = dict(p.attack.config)
    common = dict(track_id=p.track, scenario=p.scenario, seed=p.provenance.seed, device=device, out=out,
                  budget=p.attack.budget or "default", progress=progress, command=f"recon-submit reproduce {entry.folder}")
    with tempfile.TemporaryDirectory() as tmp:
        key = Path(tmp) / "throwaway.pem"  # the run's own signature means nothing; the record is what counts
        generate_key(key)
        if _is_text(entry):  # a registered text attack (load_entry checked it), in this process
            from reconbench.text.evaluation import evaluate_text

            evaluate_text(attack=entry.spec, key_path=key, config=config, **common)
            return Path(out)
        surrogate = p.surrogate.method if p.surrogate is not None else None
        if p.surrogate is not None:  # the model stolen again with the recorded configuration (every resolved value)
            from reconbench.surrogate.route import PREFIX

            config.update({PREFIX + k: v for k, v in p.surrogate.config.items()})
        evaluate(attack_spec=entry.spec, key_path=key, config=config, surrogate=surrogate, weights_dir=weights_dir, **common)
    return Path(out)


def _run_info(run_dir: Path) -> RunInfo:
    """What the run job reported in its result.json (it ran contributor code: nothing here is verified)."""
    from reconbench.text.results import parse_any_result

    try:
        payload = parse_any_result(run_dir / RESULT_FILE).payload
    except ResultError as exc:
        raise ReproduceError(f"run folder: {exc}") from None
    prov = payload.provenance
    surrogate = getattr(payload, "surrogate", None)
    return RunInfo(device=prov.device, hardware=prov.hardware, wall_seconds=prov.wall_seconds,
                   toolkit_commit=prov.git_commit, scenario=payload.scenario, queries=prov.queries,
                   surrogate_queries=surrogate.queries if surrogate is not None else None,
                   sandbox=getattr(prov, "sandbox", None) or "none")


def score_run(entry: Entry, run_dir: Path, *, device: str = "cpu", weights_dir: Path | None = None) -> ReproductionRecord:
    """Score a run's reconstructions against the entry's target set and compare with the claim."""
    from reconbench.metrics import score
    from reconbench.tracks import get_track
    from reconbench.track_files import load_splits, track_holdout

    p = entry.result.payload
    run_dir = Path(run_dir)
    if _is_text(entry):
        return _score_text_run(entry, run_dir, device=device)
    recon = run_dir / RECONSTRUCTIONS_FILE
    images, labels = load_reconstructions(recon)
    if len(labels) != p.reconstructions.count or tuple(images.shape[1:]) != tuple(p.reconstructions.shape):
        raise ReproduceError(f"{recon}: {images.shape} reconstructions, the entry has {p.reconstructions.count} "
                             f"of {tuple(p.reconstructions.shape)}")
    track = get_track(p.track)
    dynamic = p.scenario.startswith("dynamic/")
    splits = load_splits(track, ["update" if dynamic else "target"])
    target = splits.update if dynamic else splits.target
    _require_same_target(entry, target.sha256)
    holdout = track_holdout(track, dynamic)
    # track: its pinned evaluation classifier scores acc_top1/acc_top5/knn_dist, as evaluate and validate do
    report = score(images, labels, target.images, target.labels, device=device, weights_dir=weights_dir, track=track,
                   holdout_images=None if holdout is None else holdout.images,
                   holdout_labels=None if holdout is None else holdout.labels)
    return _record(entry, run_dir, recon, report.metrics, device, report.membership)


def _score_text_run(entry: Entry, run_dir: Path, *, device: str) -> ReproductionRecord:
    """The run's reconstructions.jsonl (hash-checked against its own result.json, strict format),
    scored against the target texts as evaluate_text and validate score them."""
    from reconbench.text.evaluation import score_against, text_membership
    from reconbench.text.files import load_text_splits
    from reconbench.text.results import TextResultFile, load_text_reconstructions, parse_any_result
    from reconbench.text.tracks import get_text_track

    p = entry.result.payload
    try:
        run = parse_any_result(run_dir / RESULT_FILE)
        if not isinstance(run, TextResultFile):
            raise ResultError(f"{run_dir / RESULT_FILE}: an image result, the entry is a text entry")
        texts = load_text_reconstructions(run_dir, run)
    except ResultError as exc:
        raise ReproduceError(f"run folder: {exc}") from None
    if len(texts.items) != p.reconstructions.count:
        raise ReproduceError(f"{run_dir}: {len(texts.items)} reconstructions, the entry has {p.reconstructions.count}")
    track = get_text_track(p.track)
    target = load_text_splits(track, ["target"])["target"]
    _require_same_target(entry, target.sha256)
    metrics = score_against(texts, target, device=device)
    gaps = text_membership(track, texts, target, p.role, device=device)
    return _record(entry, run_dir, run_dir / run.payload.reconstructions.file, metrics, device,
                   None if gaps is None else gaps[0].metrics)


def _require_same_target(entry: Entry, pinned: str) -> None:
    p = entry.result.payload
    if pinned != p.target.target_set_sha256:
        raise ReproduceError(f"{entry.folder}: the entry was scored against target set {p.target.target_set_sha256[:12]}…, "
                             f"track '{p.track}' now pins {pinned[:12]}…")


def _record(entry: Entry, run_dir: Path, recon: Path, metrics: dict, device: str,
            gaps: dict | None = None) -> ReproductionRecord:
    p = entry.result.payload
    reported = _run_info(run_dir)
    comparisons = compare.compare_metrics(p.metrics, metrics)
    run_checks = compare.run_checks(p, reported)
    problems = compare.metric_problems(comparisons) + compare.run_problems(run_checks)
    claimed_gaps = getattr(p, "membership", None)
    if claimed_gaps is not None:  # the membership gap: compared like the metric it is a difference of
        gap_rows = [_compare_gap(name, claim, (gaps or {}).get(name))
                    for name, claim in sorted(claimed_gaps.metrics.items()) if claim.status == "computed"]
        comparisons += gap_rows
        problems += [f"{c.metric} {c.obtained:.4g} vs claimed {c.claimed:.4g} ({c.tolerance})" for c in gap_rows if c.within is False]
    commit, _ = git_state(Path(__file__).parent)
    return ReproductionRecord(
        entry_id=p.entry_id, team=entry.team, payload_sha256=entry.payload_sha256,
        attack_source_sha256=p.attack.source_sha256, toolkit_version=__version__, toolkit_commit=commit,
        scored_on=f"{platform.system()} {platform.machine()}, {device}", reported_by_run=reported, run_checks=run_checks,
        reconstructions_sha256=sha256_file(recon), metrics=metrics, comparisons=comparisons, problems=problems,
        verdict="not-reproduced" if problems else "reproduced", created=datetime.now(timezone.utc).replace(microsecond=0),
    )


def _compare_gap(name: str, claim, obtained) -> Comparison:
    """gap.<metric>: the claimed membership gap against the re-run's, within the metric's tolerance."""
    tol = tolerances.for_metric(name)
    got = obtained.gap if obtained is not None and obtained.status == "computed" else None
    return Comparison(metric=f"gap.{name}", claimed=claim.gap, obtained=got, tolerance=str(tol),
                      within=None if got is None else tol.allows(claim.gap, got))
