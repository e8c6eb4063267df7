"""Check 9, reproduction: the shipped attack source, and a reproduction record if there is one.

- An entry whose payload signs an attack source (attack.source_sha256: a bring-your-own attack)
  must ship it in attack/ (.py files only, capped; reconbench.core.attack_source), hashing to the
  signed value: the code a reproducer re-runs is the code that was signed.
- `reproduction.json` (written by `recon-submit reproduce --key`): schema, no duplicate keys, a
  signature by a key in the maintainers' reproducers file, and for THIS entry (entry id, team, the
  sha256 of its signed payload, its attack source). A forged or misplaced record fails the entry.
- The record is not trusted on its `verdict`: its metrics are compared with the entry's claim here,
  within the reproduction tolerances, exactly as `reproduce` compares them (reproduction/compare.py),
  and so are the scenario and query counts the re-run reported (schema_version 2 records), and the
  re-run's reconstructions hash with the entry's file (a run the signer did not make itself must have
  made these very bytes: compare.reconstruction_problems); a record of a handed-in run (`--from-run --key`
  of an earlier toolkit) lifts nothing at all (compare.handed_in_problems). Only a
  record with verdict "reproduced" whose own numbers agree with the claim lifts the trust level to
  "reproduced"; one whose numbers contradict the claim is reported and lifts nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

from reconbench.core.attack_source import ATTACK_DIR, is_file_attack, source_problem
from reconbench.reproduction import compare
from reconbench.reproduction.record import RECORD_FILE, RecordError, read_record, reproducer_keys, verify_record
from reconbench.reproduction.rerun import payload_sha256
from reconbench.submissions.attackdata import data_problems
from reconbench.submissions.checks.base import Check, CheckFailed, Context

REPRODUCERS: Path | None = None  # else RECONBENCH_REPRODUCERS, else maintainers/reproducers.toml of the checkout
# Automatic reproduction in CI (validate.yml sets it): entries of REGISTERED attacks on EMBEDDED tracks
# whose recorded wall time is at most this many seconds are re-run here (toolkit code only: no
# contributor code runs), unsigned; within tolerance they count as reproduced for this validation.
AUTO_ENV = "RECONBENCH_REPRODUCE_SECONDS"


def _source(ctx: Context) -> list[Check]:
    attack = ctx.result.payload.attack
    folder = ctx.entry_dir / ATTACK_DIR
    if attack.source_sha256 is None:
        if os.path.lexists(folder):
            raise CheckFailed(f"{ATTACK_DIR}/: present, but the payload signs no attack source (attack.source_sha256)")
        if is_file_attack(attack.code):
            return [Check("attack source", "warn", f"bring-your-own attack {attack.code} without its source: "
                                                   "it cannot be reproduced (evaluate again with this toolkit)")]
        return []
    problem = source_problem(folder, attack.source_sha256)
    if problem:
        raise CheckFailed(problem)
    carried = data_problems(folder)
    if carried:
        raise CheckFailed(f"{ATTACK_DIR}/ carries data in its code ({carried[0]}{'; ...' if len(carried) > 1 else ''}): "
                          "a reproduction proves that the code makes the bytes, not where its knowledge came from, so "
                          "an attack with embedded arrays or data is not ranked (site/reviewing.md)", tuple(carried))
    return [Check("attack source", "pass", f"{ATTACK_DIR}/ is the signed source ({attack.source_sha256[:12]}…)")]


def _auto(ctx: Context) -> list[Check]:
    """Re-run an eligible entry here (see AUTO_ENV); [] when not eligible."""
    import tempfile

    from reconbench.image.attacks import ATTACKS
    from reconbench.reproduction.rerun import ReproduceError, load_entry, rerun, score_run

    try:
        budget = float(os.environ.get(AUTO_ENV, "0"))
    except ValueError:
        return []
    p = ctx.result.payload
    registered = p.attack.source_sha256 is None and not is_file_attack(p.attack.code) and p.attack.name in ATTACKS
    if budget <= 0 or not registered or ctx.track is None or ctx.track.status != "embedded":
        return []
    if p.provenance.wall_seconds > budget:
        return [Check("reproduction", "not-run", f"not re-run here: recorded wall time {p.provenance.wall_seconds:.0f} s "
                                                 f"is over this CI's budget of {budget:.0f} s")]
    try:
        entry = load_entry(ctx.entry_dir)
        with tempfile.TemporaryDirectory() as tmp:
            rec = score_run(entry, rerun(entry, Path(tmp) / "run", device=ctx.device), device=ctx.device)
    except ReproduceError as exc:  # e.g. the registered attack's code changed version since
        return [Check("reproduction", "not-run", f"not re-run here: {str(exc)[:400]}")]
    except Exception as exc:  # noqa: BLE001 - the entry's other checks stand
        return [Check("reproduction", "warn", f"re-run here failed: {type(exc).__name__}: {str(exc)[:300]}")]
    line = ", ".join(f"{c.metric} {c.obtained:.4g} (claimed {c.claimed:.4g})" for c in rec.comparisons if c.obtained is not None)
    if rec.verdict != "reproduced":
        return [Check("reproduction", "warn", f"NOT reproduced by this CI's re-run of the registered attack: {line}")]
    ctx.reproduced = True
    return [Check("reproduction", "pass", f"reproduced by this CI's re-run of the registered attack "
                                          f"(unsigned; a maintainer's record makes it permanent): {line}")]


def record_accepted(entry_dir: Path, result, team: str) -> bool:
    """Whether the entry's reproduction.json lifts it, as check() decides: signed by a listed
    reproducer, for this entry and payload, verdict reproduced, and its numbers agree with the claim
    (the held rule's reference reads only such records: submissions/leakage.py)."""
    try:
        signed = read_record(entry_dir / RECORD_FILE)
        verify_record(signed, reproducer_keys(REPRODUCERS))
    except RecordError:
        return False
    rec, payload = signed.record, result.payload
    if (rec.entry_id, rec.team) != (payload.entry_id, team) or rec.payload_sha256 != payload_sha256(result) \
            or rec.attack_source_sha256 != payload.attack.source_sha256 or rec.verdict != "reproduced":
        return False
    problems = compare.metric_problems(compare.compare_metrics(payload.metrics, rec.metrics))
    if rec.reported_by_run is not None:
        problems += compare.run_problems(compare.run_checks(payload, rec.reported_by_run))
    problems += compare.handed_in_problems(rec.run_seen)
    return not problems


def check(ctx: Context) -> list[Check]:
    checks = _source(ctx)
    path = ctx.entry_dir / RECORD_FILE
    if not os.path.lexists(path):
        return checks + _auto(ctx)
    try:
        signed = read_record(path)
    except RecordError as exc:
        raise CheckFailed(str(exc)) from None
    try:
        keys = reproducer_keys(REPRODUCERS)
    except RecordError as exc:
        return checks + [Check("reproduction", "warn", f"record not verified here: {exc}")]
    try:
        who = verify_record(signed, keys)
    except RecordError as exc:
        raise CheckFailed(str(exc)) from None
    rec, payload = signed.record, ctx.result.payload
    if (rec.entry_id, rec.team) != (payload.entry_id, ctx.unit.team) or rec.payload_sha256 != payload_sha256(ctx.result) \
            or rec.attack_source_sha256 != payload.attack.source_sha256:
        raise CheckFailed(f"{RECORD_FILE}: the record is for another entry or another version of this one "
                          f"({rec.team}/{rec.entry_id}, payload {rec.payload_sha256[:12]}…)")
    comparisons = compare.compare_metrics(payload.metrics, rec.metrics)  # recomputed: the record's own list is not read
    problems = compare.metric_problems(comparisons)
    if rec.reported_by_run is not None:  # schema_version 2: the run's scenario and queries are part of the claim
        problems += compare.run_problems(compare.run_checks(payload, rec.reported_by_run))
    # the entry's file hashes to payload.reconstructions.sha256 (checked by the reconstructions stage)
    problems += compare.reconstruction_problems(payload.reconstructions.sha256, rec.reconstructions_sha256, rec.run_seen)
    problems += compare.handed_in_problems(rec.run_seen)  # signed only for a re-run the signer made
    line = ", ".join(f"{c.metric} {c.obtained:.4g}" for c in comparisons if c.obtained is not None)
    where = (f"by {who}, re-run on {rec.reported.device} as the run job reported it "
             f"(scored with toolkit {rec.toolkit_commit[:10] if rec.toolkit_commit else rec.toolkit_version})")
    if rec.verdict != "reproduced":
        return checks + [Check("reproduction", "warn", f"NOT reproduced {where}: {line}")]
    if problems:
        return checks + [Check("reproduction", "warn", f"the record says reproduced, but its own numbers contradict "
                                                       f"the claim, so it lifts nothing: {'; '.join(problems)}",
                               tuple(problems))]
    ctx.reproduced = True
    return checks + [Check("reproduction", "pass", f"reproduced {where}: {line}")]
