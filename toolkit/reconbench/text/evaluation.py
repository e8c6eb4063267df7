"""The text job: text track -> knowledge view -> attack -> per-text metrics -> signed result folder.

`evaluate_text()` is what `recon-submit evaluate --track <text track>` calls (reconbench.api
dispatches on the track id). Like the image `evaluate`, the target texts are loaded only here, on
the evaluator's side, after the attack has returned; the attack sees only its knowledge view
(prompts, or leaked embeddings and a counted query function; reconbench.text.knowledge).
Only registered text attacks run (reconbench.text.attacks.TEXT_ATTACKS): they are toolkit code,
so they run in this process.
"""

from __future__ import annotations

import platform
import time
from dataclasses import dataclass
from functools import lru_cache
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from reconbench.text.items import TextItem, TextSet
from reconbench.text.results import TextResultFile


@dataclass(frozen=True)
class TextEvaluationOutput:
    folder: Path
    result: TextResultFile
    items: tuple[TextItem, ...]  # the reconstructions, in the target set's order


def choose_text_scenario(track, attack_cls, requested: str | None) -> str:
    """The requested scenario, or the first of the attack's cells that the track offers."""
    from reconbench.image.knowledge import check_attack_fits
    from reconbench.core.scenario import Scenario
    from reconbench.core.attack_errors import AttackError

    if requested:
        scenario = Scenario.parse(requested)
        if not track.offers(scenario):
            raise AttackError(f"text track '{track.id}' does not offer {scenario} (offers: {', '.join(track.scenarios)})")
    else:
        offered = [s for s in attack_cls.scenarios if s in track.scenarios]
        if not offered:
            raise AttackError(f"attack '{attack_cls.name}' runs in [{', '.join(attack_cls.scenarios)}]; "
                              f"text track '{track.id}' offers none of them")
        scenario = Scenario.parse(offered[0])
    check_attack_fits(attack_cls.name, attack_cls.scenarios, scenario)
    return str(scenario)


def aligned(recs: TextSet | tuple[TextItem, ...], target: TextSet, what: str = "reconstructions") -> list[str]:
    """The reconstruction texts in the target set's order; exactly one per target id (jsonl.check_ids)."""
    from reconbench.text.jsonl import check_ids

    items = recs.items if isinstance(recs, TextSet) else tuple(recs)
    check_ids(TextSet("reconstructions", items), target.ids, what)
    return [i.text for i in items]


def score_against(recs: TextSet | tuple[TextItem, ...], target: TextSet, *, device: str = "cpu") -> dict:
    """score_text on (reconstruction, its own target) pairs, aligned by id: what evaluate and validate run."""
    return score_pairs(aligned(recs, target), target.texts, device=device)


def text_membership(track, recs, target: TextSet, role: str, *, device: str = "cpu"):
    """(MembershipInfo, {metric: membership.Gap}) against the track's holdout, or None where it names none.

    Against the generator (Complete) the attacker is handed each target's first `prompt_words` words:
    that knowledge is no leakage, so those words are left out of every text, reconstruction, target
    and holdout alike, and the gap compares what the attack added (text/metrics/leakage.py)."""
    from reconbench.core.envelope import MembershipInfo
    from reconbench.text.files import load_text_holdout
    from reconbench.text.metrics.leakage import without_prompt

    if not track.holdout_split:
        return None
    holdout = load_text_holdout(track)
    skip = track.prompt_words if role == "generator" else 0
    texts = tuple(i.text for i in (recs.items if isinstance(recs, TextSet) else recs))
    sides = tuple(tuple(without_prompt(t, skip) for t in side) for side in (texts, target.texts, holdout.texts))
    gaps = _text_gaps(*sides, str(device))
    count = _text_count(track, *sides, tuple(target.ids), tuple(holdout.ids))
    return (MembershipInfo.of(holdout.sha256, {n: g for n, (g, _) in gaps.items()}, count),
            {n: raw for n, (_, raw) in gaps.items()})


def _text_count(track, recs: tuple[str, ...], targets: tuple[str, ...], holdout: tuple[str, ...],
                target_ids: tuple[str, ...], holdout_ids: tuple[str, ...]):
    """The extraction count (text/metrics/extraction.py), without the prompt words as the gap."""
    from reconbench.core.extraction import ExtractionResult
    from reconbench.submissions.textcopy import track_edit_margin
    from reconbench.text.metrics.extraction import public_pair_rate, text_extraction

    margin = track_edit_margin(track)
    rate = public_pair_rate(track.id, track.target_set_sha256, margin)
    return ExtractionResult.of(text_extraction(list(recs), list(targets), list(target_ids), list(holdout),
                                               list(holdout_ids), margin, rate))


@lru_cache(maxsize=8)
def _text_gaps(recs: tuple[str, ...], targets: tuple[str, ...], holdout: tuple[str, ...], device: str) -> dict:
    from reconbench.text.metrics.leakage import text_gaps

    return text_gaps(list(recs), list(targets), list(holdout), device=device)


def score_pairs(reconstructions: list[str], targets: list[str], *, device: str = "cpu") -> dict:
    """score_text (round-off at a range's edge is put on the edge there). Memoised per
    process on the texts themselves: a board run re-scores byte-identical pairs once (MiniLM on 500
    pairs is ~20 CPU-seconds)."""
    return dict(_score_pairs(tuple(reconstructions), tuple(targets), str(device)))


@lru_cache(maxsize=8)
def _score_pairs(reconstructions: tuple[str, ...], targets: tuple[str, ...], device: str) -> tuple:
    from reconbench.text.metrics import score_text

    scored = score_text(list(reconstructions), list(targets), device=device)  # round-off at an edge: on it
    return tuple(scored.items())


def evaluate_text(*, track_id: str, attack: str, scenario: str | None = None, seed: int = 0, device: str = "cpu",
                  out: Path | None = None, key_path: Path, config: dict[str, Any] | None = None,
                  budget: str = "default", progress=None, command: str | None = None) -> TextEvaluationOutput:
    import torch

    from reconbench._version import __version__
    from reconbench.core.attack_errors import AttackError
    from reconbench.core.progress import Progress
    from reconbench.pipeline.preflight import device_name, preflight
    from reconbench.core.envelope import Provenance, TargetIdentity, git_state, make_entry_id
    from reconbench.core.signing import check_key_file, load_private_key
    from reconbench.text.attacks import TEXT_ATTACKS, enforce_one_per_id, load_text_attack
    from reconbench.core.run_command import recorded_command
    from reconbench.text.files import load_text_splits, model_sha256
    from reconbench.text.knowledge import build_text_knowledge
    from reconbench.text.results import TextAttackInfo, TextPayload, reconstructions_info, sign_text_result, write_text_result_dir
    from reconbench.text.tracks import get_text_track

    track = get_text_track(track_id)
    track.require_runnable()
    if attack not in TEXT_ATTACKS:
        raise AttackError(f"unknown text attack '{attack}' (known: {', '.join(sorted(TEXT_ATTACKS))}); "
                          "a text track runs the registered text attacks only")
    cls = load_text_attack(attack)
    chosen = choose_text_scenario(track, cls, scenario)
    instance = cls(budget=budget, **(config or {}))  # bad options fail here, before the key and the run
    check_key_file(key_path)  # the key itself is loaded only after the attack has ended
    torch_device = preflight(device=device, out=out, weights_dir=None)
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    knowledge = build_text_knowledge(track, chosen, cls.role, device=device, seed=seed)
    torch.manual_seed(seed)
    rec = enforce_one_per_id(instance.run(knowledge, seed=seed, progress=progress or Progress()), knowledge.target_ids)
    wall = time.perf_counter() - t0
    finished = datetime.now(timezone.utc)

    # Scoring is the evaluator's side: only here are the target texts loaded.
    target = load_text_splits(track, ["target"])["target"]
    items = tuple(rec.items)
    metrics = score_against(items, target, device=device)
    membership = text_membership(track, items, target, cls.role, device=device)
    info = reconstructions_info(items)
    git_commit, git_dirty = git_state(Path(__file__).parent.parent)
    payload = TextPayload(
        entry_id=make_entry_id(track.id, cls.name, started, info.sha256),
        track=track.id,
        scenario=chosen,
        role=cls.role,
        attack=TextAttackInfo(name=cls.name, version=cls.version, family=cls.family, paper=cls.paper,
                              code=cls.code_reference(), config=dict(instance.config), budget=instance.budget),
        target=TargetIdentity(model_sha256=model_sha256(track, cls.role), target_set_sha256=target.sha256),
        metrics=metrics,
        reconstructions=info,
        membership=None if membership is None else membership[0],
        provenance=Provenance(
            toolkit_version=__version__, git_commit=git_commit, git_dirty=git_dirty,
            python=platform.python_version(), torch=torch.__version__, device=device_name(torch_device),
            hardware=f"{platform.system()} {platform.machine()}, {torch.get_num_threads()} CPU threads",
            seed=seed, command=recorded_command(command, track_id, attack, scenario, seed, device, config, budget), started=started, finished=finished,
            wall_seconds=round(wall, 3), queries=knowledge.queries if chosen.split("/")[1] == "black-box" else None,
            attack_facts=_facts(rec.provenance),
            sandbox="none",  # registered text attacks run in this process (docs/sandbox.md)
        ),
    )
    result = sign_text_result(payload, load_private_key(key_path))
    folder = Path(out) if out else Path("recon-results") / payload.entry_id
    write_text_result_dir(folder, result, items)
    return TextEvaluationOutput(folder=folder, result=result, items=items)


def _facts(provenance: dict | None) -> dict | None:
    """The attack's own facts, as the schema takes them (scalars; at most 32)."""
    facts = {str(k)[:80]: v for k, v in (provenance or {}).items()
             if v is None or isinstance(v, (bool, int, float)) or (isinstance(v, str) and len(v) <= 2000)}
    return dict(list(facts.items())[:32]) or None
