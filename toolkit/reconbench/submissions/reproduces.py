"""A re-run of an entry already on the board: recognised, named, and what to do instead.

A deterministic attack run again with the same track, scenario, attack, configuration and seed
gives the same reconstructions (bit-identical on the same machine and thread count, within the
reproduction tolerances elsewhere). That is a reproduction of the earlier entry, not a new
result and not a forgery: there is nothing new to rank. `submit` (before it writes anything) and
`validate` (the duplicates check) say so in one line and offer the two useful ways on:
  - record it as an independent reproduction of the earlier entry (`recon-submit reproduce
    ENTRY --from-run YOUR_RUN` compares every metric; a listed reproducer signs the record), or
  - run again with another seed or budget, which is a new point on the board.

`same_run` compares what makes a run; `finding` decides whether a run reproduces an earlier entry
(same run, and the same reconstruction file or every shared metric within the reproduction
tolerances); `advice` turns a finding, or a duplicate found by the duplicates check, into the
message. The duplicate search itself (exact file, near-duplicate reconstructions) lives in
checks/duplicates.py; this module only reads its result.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from reconbench.reproduction import tolerances


def run_settings(payload) -> dict:
    """What makes two runs the same run (a budget preset is only where the config started from:
    the config holds every value that ran)."""
    attack = payload.attack
    surrogate = getattr(payload, "surrogate", None)
    return {
        "track": payload.track, "scenario": payload.scenario, "role": getattr(payload, "role", None),
        "attack": attack.name, "code": attack.code, "source": attack.source_sha256,
        "config": dict(attack.config), "seed": payload.provenance.seed,
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
    how the new run matches it."""

    original: Path
    how: str


def finding(payload, candidates: list[tuple[Path, object]]) -> Finding | None:
    """The first of `candidates` (earliest first: (folder, payload)) that this run reproduces."""
    for folder, other in candidates:
        if other.entry_id == payload.entry_id:
            continue  # the same result submitted again, not a re-run (its own message says so)
        if not same_run(payload, other):
            continue
        if other.reconstructions.sha256 == payload.reconstructions.sha256:
            return Finding(folder, "the same reconstruction file")
        if metrics_within_tolerance(payload, other):
            return Finding(folder, "every metric within the reproduction tolerances")
    return None


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
    line = (f"this reproduces entry {name}, {came}: same attack, settings and seed, and {found.how}; "
            "nothing new to rank")
    options = [
        f"record it as an independent reproduction of {name}: recon-submit reproduce {shlex.quote(str(shown))} "
        f"--from-run {shlex.quote(run_dir) if run_dir else 'YOUR_RESULT_FOLDER'}",
        f"or run again with another seed or budget, a new point on the board: {_evaluate_again(payload)} "
        "(or --budget quick|default|paper)",
    ]
    return line, options
