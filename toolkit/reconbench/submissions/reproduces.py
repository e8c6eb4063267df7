"""A re-run of an entry already on the board: recognised, named, and what to do instead.

A deterministic attack run again with the same track, scenario, attack, configuration and seed
gives the same reconstructions (bit-identical on the same machine and thread count, within the
reproduction tolerances elsewhere). That is a reproduction of the earlier entry, not a new
result and not a forgery: there is nothing new to rank. `submit` (before it writes anything) and
`validate` (the duplicates check) say so in one line and offer the two useful ways on:
  - record it as an independent reproduction of the earlier entry (`recon-submit reproduce
    ENTRY --from-run YOUR_RUN` compares every metric, unsigned; a listed reproducer's record comes from a
    re-run it makes itself, `reproduce ENTRY --key K`), or
  - run again with another seed or budget, which is a new point on the board.

`same_run` compares what makes a run, as a re-run made today would record it: the attack's code by
its current module name (core/moved.py) and its configuration with the current defaults filled in
(an option added since, at its default, is the same run). `finding` decides whether a run
reproduces an earlier entry: the same run, and the same reconstruction file, or reconstructions
near the earlier ones (more than the duplicate share within the track's near-copy thresholds).
The same run whose reconstructions are others (other images: another thread count or
device changes the bytes of an honest run) does not reproduce it, and is not refused either: it is
a *replicate* of that setting, accepted and listed beside the earlier entry, never ranked on its own
(the setting ranks once, by the entry that came first). Where its metrics also differ beyond the
reproduction tolerances, the replicate is said plainly to be a failed reproduction attempt.
Where reconstructions cannot be compared (text),
the metrics decide as before. `advice` turns a finding, or a duplicate found by the duplicates
check, into the message; an attack whose output does not depend on the seed at these settings
(Attack.seed_ignored) is told what changes it instead of another seed. The duplicate search itself (exact file, near-duplicate reconstructions) lives in
checks/duplicates.py; this module only reads its result.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from reconbench.core.attack_source import is_file_attack
from reconbench.core.moved import canonical_code
from reconbench.reproduction import tolerances

REPRODUCES = "reproduces"
REPLICATE = "replicate"
# Who can record a reproduction, said where it is offered: without a listed reproducer's key nothing is written.
RECORD_WHO = ("it writes nothing: only a reproducer listed in maintainers/reproducers.toml records a reproduction, "
              "by re-running the entry itself (reproduce ENTRY --key), so paste its output into your pull request or "
              "an issue for a maintainer")  # the same run, other reconstructions: accepted, listed beside the original, not ranked


@lru_cache(maxsize=256)
def _attack(name: str, budget: str, config_json: str):
    """The registered attack configured as recorded (None: not registered, or the config no longer fits)."""
    from reconbench.modalities import for_attack

    try:
        return for_attack(name).load_attack(name)(budget=budget, **json.loads(config_json))
    except Exception:  # noqa: BLE001 - an unknown name or an old config: compare what was recorded
        return None


def configured(payload):
    """The payload's attack as the current toolkit configures it, or None (a file attack, an unknown name)."""
    attack = payload.attack
    if is_file_attack(attack.code):
        return None
    return _attack(attack.name, getattr(attack, "budget", None) or "default", json.dumps(dict(attack.config), sort_keys=True))


def effective_config(payload) -> dict:
    """The recorded configuration with the current defaults of options added since (what a re-run records)."""
    attack = configured(payload)
    return {**attack.config, **dict(payload.attack.config)} if attack is not None else dict(payload.attack.config)


def seed_ignored(payload) -> str | None:
    """Why this run's output does not depend on its seed (Attack.seed_ignored), or None."""
    ignored = getattr(configured(payload), "seed_ignored", None)  # text attacks have their own base class
    return ignored() if ignored is not None else None


def run_settings(payload) -> dict:
    """What makes two runs the same run (a budget preset is only where the config started from:
    the config holds every value that ran)."""
    attack = payload.attack
    surrogate = getattr(payload, "surrogate", None)
    return {
        "track": payload.track, "scenario": payload.scenario, "role": getattr(payload, "role", None),
        "attack": attack.name, "code": canonical_code(attack.code), "source": attack.source_sha256,
        "config": effective_config(payload), "seed": payload.provenance.seed,
        "model": payload.target.model_sha256, "target_set": payload.target.target_set_sha256,
        "surrogate": None if surrogate is None else (surrogate.method, dict(surrogate.config)),
    }


def same_run(a, b) -> bool:
    return run_settings(a) == run_settings(b)


def metrics_within_tolerance(a, b) -> bool:
    """Every metric computed in both agrees within the reproduction tolerances (at least one)."""
    shared = [n for n, m in a.metrics.items()
              if m.status == "computed" and n in b.metrics and b.metrics[n].status == "computed"]
    for name in shared:
        mine, theirs = a.metrics[name], b.metrics[name]
        if not tolerances.for_metric(name).allows(theirs.value, mine.value):
            return False
        if mine.coverage is not None and theirs.coverage is not None \
                and not tolerances.COVERAGE.allows(theirs.coverage, mine.coverage):
            return False
    return bool(shared)


@dataclass(frozen=True)
class Finding:
    """`original` (a folder under the submissions root) ran the same run and came first; `how` says
    how the new run matches it; `kind`: REPRODUCES, or REPLICATE (same run, other reconstructions);
    `agrees`: for a replicate, whether every metric is within the reproduction tolerances of the original's."""

    original: Path
    how: str
    kind: str = REPRODUCES
    agrees: bool = True


def near_share(board, track, images) -> Callable[[Path], float | None] | None:
    """share(entry): how many of `images` (uint8 N x C x H x W) are near that entry's reconstructions, by
    the track's near-copy thresholds (submissions/nearcopy.py); None where images cannot be compared
    (text, a track without a public pool, an unreadable file)."""
    from reconbench.submissions.nearcopy import public_thresholds

    if images is None or track is None:
        return None
    try:
        thresholds = public_thresholds(track)
    except Exception:  # noqa: BLE001 - as the near-copy checks: no public pool, no near comparison
        return None

    def share(entry: Path) -> float | None:
        space = board.space(entry)
        return None if space is None else space.flag(images, thresholds).share
    return share


def finding(payload, candidates: list[tuple[Path, object]],
            near: Callable[[Path], float | None] | None = None, share: float = 0.05) -> Finding | None:
    """The first of `candidates` (earliest first: (folder, payload)) that this run re-runs.
    `near(folder)`: the share of this run's reconstructions near that entry's (None: not comparable);
    above `share` (the duplicates check's) they are the same reconstructions in all but bytes.
    The same file is a reproduction (REPRODUCES: nothing new at all); any other file of the same run
    is a replicate (REPLICATE), which `agrees` with the original where its reconstructions are near
    the original's or, where they cannot be compared (text), every metric is within the tolerances."""
    runs = [(folder, other) for folder, other in candidates
            if other.entry_id != payload.entry_id and same_run(payload, other)]  # the same result again: its own message
    for folder, other in runs:  # the same bytes first, whichever came first among the same runs
        if other.reconstructions.sha256 == payload.reconstructions.sha256:
            return Finding(folder, "the same reconstruction file")
    closeness = {folder: near(folder) if near is not None else None for folder, _ in runs}
    for folder, close in closeness.items():
        if close is not None and close > share:
            return Finding(folder, f"other bytes, but {close:.0%} of the reconstructions are near-duplicates of its "
                                   "reconstructions", REPLICATE)
    for folder, other in runs:
        close = closeness[folder]
        if metrics_within_tolerance(payload, other):
            if close is None:  # reconstructions not comparable here (text): the metrics decide
                return Finding(folder, "other bytes, every metric within the reproduction tolerances", REPLICATE)
            return Finding(folder, f"every metric within the reproduction tolerances, but only {close:.0%} of the "
                                   "reconstructions are near its reconstructions", REPLICATE, agrees=False)
    if runs:  # the same run, and neither its reconstructions nor its metrics match: a failed reproduction attempt
        folder, other = runs[0]
        return Finding(folder, f"other reconstructions, and metrics that differ from its beyond the reproduction "
                               f"tolerances ({differing(payload, other)})", REPLICATE, agrees=False)
    return None


def differing(a, b) -> str:
    """The metrics of `a` outside the reproduction tolerances of `b`'s, as `name value vs value`."""
    out = []
    for name, mine in a.metrics.items():
        theirs = b.metrics.get(name)
        if mine.status != "computed" or theirs is None or theirs.status != "computed":
            continue
        if not tolerances.for_metric(name).allows(theirs.value, mine.value):
            out.append(f"{name} {mine.value:.4g} vs {theirs.value:.4g}")
    return ", ".join(out) or "no metric computed in both, or a coverage outside its tolerance"


def _evaluate_again(payload) -> str:
    """The run's own recorded command with another seed (the first option a newcomer has)."""
    words = shlex.split(payload.provenance.command) if payload.provenance.command else []
    if not words or words[:2] != ["recon-submit", "evaluate"]:
        return "recon-submit evaluate ... --seed N"
    if "--seed" in words and words.index("--seed") + 1 < len(words):
        words[words.index("--seed") + 1] = str(payload.provenance.seed + 1)
    else:
        words += ["--seed", str(payload.provenance.seed + 1)]
    return shlex.join(words)


def seed_note(original) -> str:
    """For a duplicate of `original`'s reconstruction file: why another seed did not change it, if so."""
    why = seed_ignored(original)
    return (f"; {original.attack.name}'s output does not depend on the seed there ({why}): another budget or option "
            "makes a new run, another seed does not") if why else ""


def new_point(payload) -> str:
    """What makes a new point on the board: another seed, or, where the seed changes nothing, what does."""
    why = seed_ignored(payload)
    if why is None:
        return (f"or run again with another seed or budget, a new point on the board: {_evaluate_again(payload)} "
                "(or --budget quick|default|paper)")
    return (f"or change what the output depends on: {payload.attack.name}'s output does not depend on the seed here "
            f"({why}); another --budget (quick|default|paper) or option (recon-submit attacks {payload.attack.name}) "
            "is a new point on the board")


def advice(found: Finding, payload, root: Path, run_dir: str | None = None, first: str | None = None) -> tuple[str, list[str]]:
    """The one line, and the two ways on. `root`: the submissions folder the original is under;
    `run_dir`: the newcomer's result folder, when known; `first`: how the board knows the original
    came first (Board.how_first), when it was decided by arrival."""
    name = f"{found.original.parent.name}/{found.original.name}"
    try:
        shown = Path(root.name) / found.original.relative_to(root)
    except ValueError:
        shown = found.original
    came = f"already on the board, which came first ({first})" if first else "already on the board"
    record = (f"recon-submit reproduce {shlex.quote(str(shown))} "
              f"--from-run {shlex.quote(run_dir) if run_dir else 'YOUR_RESULT_FOLDER'}")
    line = (f"this reproduces entry {name}, {came}: same attack, settings and seed, and {found.how}; "
            "nothing new to rank")
    return line, [f"record it as an independent reproduction of {name}: {record} compares every metric with the "
                  f"claim; {RECORD_WHO}", new_point(payload)]


def replicate_line(found: Finding, first: str | None = None) -> str:
    """What a replicate is, in one line (the held reason on the board, submit's note, validate's warning):
    accepted and listed beside the original, never ranked on its own; where its reconstructions are not
    the original's, a failed reproduction attempt of it, said so."""
    name = f"{found.original.parent.name}/{found.original.name}"
    came = f", which came first ({first})" if first else ""
    said = ("it reproduces that entry in all but bytes" if found.agrees
            else "as a reproduction of that entry it is a failed attempt")
    return (f"a replicate of entry {name}{came}: same attack, settings and seed, {found.how}; {said}. Listed beside "
            f"it and never ranked on its own: the setting ranks once, by {name}")
