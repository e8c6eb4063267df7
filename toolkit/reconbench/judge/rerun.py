"""A maintainer's re-run of a judge study: the study's own plan, asked again of the maintainers' endpoint.

What the record holds, the tolerance and why a study is self-reported until then: judge/rerun_record.py.
`recon-submit judge-rerun` (commands/judge.py) calls rerun_study.
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from reconbench.core.io import write_json
from reconbench.judge.rerun_record import RERUN_FILE, RerunError, RerunRecord, compare, payload_sha256, read_rerun  # noqa: F401
from reconbench.judge.study import Judge, StudyFile


def plan_from_study(study: StudyFile, submissions: Path):
    """The study's own plan, rebuilt from the study (checked to be the same targets and candidates)."""
    from reconbench.judge.runner import Options, plan_study

    p = study.payload
    opts = Options(model=p.judge.model, targets=p.options.targets, repeats=p.options.repeats, seed=p.options.seed,
                   modes=tuple(p.options.modes), image_size=p.options.image_size, temperature=p.options.temperature,
                   max_tokens=p.options.max_tokens, invalid_retries=p.options.invalid_retries)
    plan = plan_study([Path(submissions) / c.team / c.entry_id for c in p.conditions], opts)
    same = (plan.indices == [t.index for t in p.targets] and plan.prompt == p.prompt
            and all([c["rec_index"] for c in plan.candidates[i]] == [c.rec_index for c in t.candidates]
                    for i, t in enumerate(p.targets)))
    if not same:
        raise RerunError(f"study {p.study_id}: its plan cannot be rebuilt here (other targets or candidates)")
    return plan


def rerun_study(folder: Path, submissions: Path, endpoint, *, key_path: Path, reproducers: Path | None = None,
                cache_dir: Path | None = None, progress=None) -> tuple[Path, RerunRecord]:
    """Re-run the study in `folder` against `endpoint` and write its signed rerun.json there."""
    from reconbench._version import __version__
    from reconbench.judge.aggregate import aggregates
    from reconbench.judge.cache import AnswerCache
    from reconbench.judge.check import check_study
    from reconbench.judge.runner import run_plan, votes_of
    from reconbench.judge.study import read_study
    from reconbench.reproduction.record import reproducer_keys
    from reconbench.core.signing import load_private_key, public_key_b64, sign_payload

    folder = Path(folder)
    key = load_private_key(key_path)  # before any call
    if public_key_b64(key.public_key()) not in reproducer_keys(reproducers):
        raise RerunError(f"{key_path}: not a reproducer key the maintainers list; a re-run it signs would not count")
    report = check_study(folder, Path(submissions))
    if not report.ok:
        raise RerunError(f"{folder}: the study does not validate, nothing to re-run ({report.checks[-1][2]})")
    study, raw = read_study(folder / "study.json")
    plan = plan_from_study(study, submissions)
    with tempfile.TemporaryDirectory() as tmp:  # a fresh cache unless one is given: never the signer's answers
        records, tally = run_plan(plan, endpoint, AnswerCache(cache_dir or Path(tmp)), progress)
    if tally.failed:
        raise RerunError(f"{tally.failed} of {len(plan.calls)} calls failed; run again (answered calls are not cached "
                         "in a fresh cache: pass a cache folder to keep them)")
    k, repeats = plan.k, plan.options.repeats
    aggs = {mode: aggregates([{"votes": v} for v in votes_of(plan, records, mode)], k, repeats) for mode in plan.options.modes}
    comparisons = compare(raw["aggregates"], aggs)
    record = RerunRecord(
        study_id=study.payload.study_id, team=study.payload.team, study_payload_sha256=payload_sha256(raw),
        judge=Judge(model=plan.options.model, models_reported=sorted({r["model"] for r in records.values()}) or ["(none)"],
                    endpoint=endpoint.public_url()),
        aggregates=aggs, comparisons=comparisons, agrees=all(c.within for c in comparisons),
        toolkit_version=__version__, created=datetime.now(timezone.utc).replace(microsecond=0).isoformat())
    payload = record.model_dump(mode="json")
    path = folder / RERUN_FILE
    write_json(path, {"record": payload, "signature": sign_payload(payload, key)})
    os.chmod(path, 0o644)  # a public file (the atomic write creates it 0600)
    return path, record


