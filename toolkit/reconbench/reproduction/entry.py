"""What every modality's reproduction shares: the entry being reproduced, its errors, and the
record that compares a run with the entry's claim (reconbench.reproduction.rerun runs it; each
modality's plug-in re-runs and scores: reconbench/image/reproduce.py, reconbench/text/reproduce.py)."""

from __future__ import annotations

import hashlib
import platform
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from reconbench._version import __version__
from reconbench.core.attack_source import is_file_attack
from reconbench.core.io import sha256_file
from reconbench.reproduction import compare, tolerances
from reconbench.reproduction.record import Comparison, ReproductionRecord, RunInfo
from reconbench.image.results import RESULT_FILE, ResultError, ResultFile, git_state, payload_dict
from reconbench.core.signing import canonical


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


def team_keys(team_dir: Path) -> list[str]:
    from reconbench.submissions.team import TeamError, load_team

    try:
        team = load_team(team_dir)
    except TeamError as exc:
        raise ReproduceError(str(exc)) from None
    return [k if isinstance(k, str) else str(getattr(k, "key", k)) for k in team.keys]


def require_registered(folder: Path, result, registry: dict) -> None:
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



def run_info(run_dir: Path) -> RunInfo:
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


def require_same_target(entry: Entry, pinned: str) -> None:
    p = entry.result.payload
    if pinned != p.target.target_set_sha256:
        raise ReproduceError(f"{entry.folder}: the entry was scored against target set {p.target.target_set_sha256[:12]}…, "
                             f"track '{p.track}' now pins {pinned[:12]}…")


def record(entry: Entry, run_dir: Path, recon: Path, metrics: dict, device: str,
            gaps: dict | None = None) -> ReproductionRecord:
    p = entry.result.payload
    reported = run_info(run_dir)
    comparisons = compare.compare_metrics(p.metrics, metrics)
    run_checks = compare.run_checks(p, reported)
    recon_sha256 = sha256_file(recon)
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
        reconstructions_sha256=recon_sha256, metrics=metrics, comparisons=comparisons, problems=problems,
        verdict="not-reproduced" if problems else "reproduced", created=datetime.now(timezone.utc).replace(microsecond=0),
    )


def _compare_gap(name: str, claim, obtained) -> Comparison:
    """gap.<metric>: the claimed membership gap against the re-run's, within the metric's tolerance."""
    tol = tolerances.for_metric(name)
    got = obtained.gap if obtained is not None and obtained.status == "computed" else None
    return Comparison(metric=f"gap.{name}", claimed=claim.gap, obtained=got, tolerance=str(tol),
                      within=None if got is None else tol.allows(claim.gap, got))
