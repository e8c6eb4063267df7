"""Checks 4 and 5 for a text entry (payload.modality "text"): registry pins, then the reconstructions file.

registry:
- the text track exists and is runnable; the scenario is one it offers;
- the role's target model is the registry's (target.model_sha256 = sha256 of the role's main weight
  file, reconbench.text.files.model_sha256), the target set its target split (splits_sha256.target);
- reconstructions.count is |D_tar| (one reconstruction per target text);
- the attack is a registered text attack (text tracks run nothing else): its code reference,
  family and role are the registered ones, and one of its cells fits the scenario.
reconstructions:
- reconstructions.jsonl is in the entry, its size and sha256 are as signed (checked before it is
  parsed), it reads under the strict format (reconbench.text.jsonl: UTF-8, canonical lines, no
  duplicate keys or ids, capped), and its ids are exactly the target split's ids, in order.
"""

from __future__ import annotations

import os
import stat

from reconbench.core.scenario import Scenario
from reconbench.submissions.checks.base import Check, CheckFailed, Context, require_signed_sha256
from reconbench.core.queries import DEFAULT_QUERY_BUDGET
from reconbench.submissions.claims import command_problems, config_problems, queries_problems


def _attack_problem(payload, scenario: Scenario) -> str | None:
    from reconbench.image.knowledge import KnowledgeError, check_attack_fits

    try:
        from reconbench.text.attacks import TEXT_ATTACKS
    except ImportError as exc:
        return f"the text attacks cannot be loaded here to check attack '{payload.attack.name}' ({exc})"
    attack = payload.attack
    cls = TEXT_ATTACKS.get(attack.name)
    if cls is None:
        return (f"attack '{attack.name}' is not a registered text attack (text tracks run "
                f"{', '.join(sorted(TEXT_ATTACKS))} only)")
    if attack.code != cls.code_reference():
        return f"attack name '{attack.name}' is registered to {cls.code_reference()}, but this entry ran '{attack.code}'"
    if getattr(attack, "source_sha256", None) is not None:
        from reconbench.submissions.checks.registry import registered_with_source

        return registered_with_source(attack, cls)
    if attack.family != cls.family:
        return f"attack '{attack.name}' is of family '{cls.family}', the entry says '{attack.family}'"
    if payload.role != cls.role:
        return f"attack '{attack.name}' attacks the {cls.role}, the entry says role '{payload.role}'"
    try:
        check_attack_fits(attack.name, cls.scenarios, scenario)
    except KnowledgeError as exc:
        return str(exc)
    return None


def registry(ctx: Context) -> list[Check]:
    from reconbench.core.hub import HubError
    from reconbench.core.io import FileFormatError
    from reconbench.text.files import load_text_splits, model_sha256
    from reconbench.text.tracks import get_text_track
    from reconbench.core.tracks import TrackError

    payload = ctx.result.payload
    try:
        track = get_text_track(payload.track)
        track.require_runnable()
        model = model_sha256(track, payload.role)  # TrackError when the track has no such role
    except TrackError as exc:
        raise CheckFailed(str(exc)) from None
    scenario = Scenario.parse(payload.scenario)
    if not track.offers(scenario):
        raise CheckFailed(f"text track '{track.id}' does not offer scenario {scenario} (offers: {', '.join(track.scenarios)})")
    problems = []
    if payload.target.model_sha256 != model:
        problems.append(f"target.model_sha256 is {payload.target.model_sha256}, the registry pins {model} for the "
                        f"{payload.role} of text track '{track.id}'")
    pinned = track.splits_sha256.get("target")
    if payload.target.target_set_sha256 != pinned:
        problems.append(f"target.target_set_sha256 is {payload.target.target_set_sha256}, the registry pins {pinned} "
                        f"as the target split of text track '{track.id}'")
    size = track.split_sizes.get("target")
    if payload.reconstructions.count != size:
        problems.append(f"reconstructions.count is {payload.reconstructions.count}, but |D_tar| = {size} "
                        "(exactly one reconstruction per target text)")
    attack_problem = _attack_problem(payload, scenario)
    if attack_problem:
        problems.append(attack_problem)
    else:  # a registered text attack: its version and configuration are the registry's (submissions/claims.py)
        from reconbench.text.attacks import TEXT_ATTACKS

        problems += config_problems(payload.attack, TEXT_ATTACKS[payload.attack.name], payload.provenance.command)
    problems += command_problems(payload)
    problems += queries_problems(payload, DEFAULT_QUERY_BUDGET)  # what the text harness enforces (text/knowledge.py)
    if problems:
        raise CheckFailed(problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""), problems)
    try:
        ctx.target_texts = load_text_splits(track, ["target"])["target"]
    except (TrackError, HubError, FileFormatError, ImportError) as exc:
        raise CheckFailed(f"cannot load the target split of '{track.id}': {exc}") from None
    ctx.track, ctx.scenario = track, scenario
    return [Check("registry", "pass", f"text track '{track.id}', {scenario}: {payload.role} and target split hashes "
                                      f"as pinned; registered text attack '{payload.attack.name}' fits the scenario")]


def reconstructions(ctx: Context) -> list[Check]:
    from reconbench.text.jsonl import TEXT_RECONSTRUCTIONS_FILE, TextFileError, check_ids, read_jsonl

    from reconbench.image.results import RECONSTRUCTIONS_FILE

    info = ctx.result.payload.reconstructions
    path = ctx.entry_dir / TEXT_RECONSTRUCTIONS_FILE
    if os.path.lexists(ctx.entry_dir / RECONSTRUCTIONS_FILE):
        raise CheckFailed(f"{ctx.entry_dir / RECONSTRUCTIONS_FILE}: an image entry's file in a text entry")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise CheckFailed(f"{path}: missing") from None
    if not stat.S_ISREG(st.st_mode):
        raise CheckFailed(f"{path}: not a regular file")
    if st.st_size != info.bytes:  # refused on its size alone, before a byte is read
        raise CheckFailed(f"{path}: {st.st_size:,} bytes, the signed result says {info.bytes:,} "
                          "(the file was changed, truncated or swapped after signing)")
    require_signed_sha256(path, info.sha256)
    try:
        texts = read_jsonl(path)
        check_ids(texts, ctx.target_texts.ids, str(path))
    except TextFileError as exc:
        raise CheckFailed(str(exc)) from None
    ctx.texts, ctx.recon_path = texts, path
    return [Check("reconstructions", "pass", f"{len(texts)} texts, one per target id in order, strict JSON Lines, "
                                             "sha256 as signed")]
