"""What an entry says about its own run must tell one story: the recorded command, the payload's
track, attack, seed, scenario, budget and surrogate, and (for a registered attack) its configuration.

Everything here is signed by the contributor, so the signature proves nothing about it; but the board
reads these claims: the findings label a run's budget by its preset and the command's `--set` options
(leaderboard/findings_rule.budget_label), the seed groups key on version and configuration, readers
copy the command to re-run it. So a claim the rest of the entry contradicts is refused:

- each option the command gives (`--track`, `--attack`, `--seed`, `--scenario`, `--budget`,
  `--surrogate`) names what the payload records; an option given twice, or a command that does not
  split as a shell line, is refused (which one ran would be a guess);
- a registered attack's configuration is the one its budget preset and the command's `--set` options
  resolve to (reconbench.core.attack_options): an option the attack does not declare, a value out of
  its declared range, or a value the preset fixes that no `--set` changed is refused. An option the
  preset leaves "auto" is chosen by the attack for the track at run time, so any valid value stands;
  an option a result signed before it existed leaves out is not asked for;
- a registered attack's version is the registry's, or an earlier one (entries are re-issued, not
  relabelled, when an attack's code changes);
- a black-box cell records the queries the harness counted, within the track's budget, and a
  white-box cell none (an entry that left them out would pass the budget rule unseen).
"""

from __future__ import annotations

import json
import shlex

OPTIONS = ("--track", "--attack", "--seed", "--scenario", "--budget", "--surrogate")


def command_options(command: str) -> tuple[dict[str, str], list[str]] | str:
    """(the single-valued options, every `--set` item) of a recorded command, or why it cannot be read."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        return f"provenance.command does not split as a shell command line ({exc})"
    given: dict[str, str] = {}
    sets: list[str] = []
    for i, word in enumerate(words):
        name, eq, value = word.partition("=")
        if name not in (*OPTIONS, "--set"):
            continue
        if not eq:
            value = words[i + 1] if i + 1 < len(words) else ""
        if name == "--set":
            sets.append(value)
        elif name in given:
            return f"provenance.command gives {name} twice ('{given[name]}', '{value}'): which one ran is a guess"
        else:
            given[name] = value
    return given, sets


def command_problems(payload) -> list[str]:
    """Where the recorded command's options contradict the payload (image or text result)."""
    read = command_options(payload.provenance.command)
    if isinstance(read, str):
        return [read]
    given, _ = read
    attack = payload.attack
    surrogate = getattr(payload, "surrogate", None)
    expected = {
        "--track": (payload.track,),
        "--attack": (attack.name, attack.code),  # a user's own attack is given as file.py:Class
        "--seed": (str(payload.provenance.seed),),
        "--scenario": (payload.scenario,),
        "--budget": (attack.budget,) if attack.budget is not None else None,
        "--surrogate": (surrogate.method,) if surrogate is not None else ("",),
    }
    if ":" in given.get("--attack", ""):  # a file given by a path (attacks/x.py:X): the code records the file's name
        file, _, cls = given["--attack"].rpartition(":")
        given["--attack"] = f"{file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{cls}"
    # absent, the option is the CLI's default (the command evaluate records leaves those out)
    given.setdefault("--seed", "0")
    if attack.budget is not None:
        given.setdefault("--budget", "default")
    problems = []
    for name, value in given.items():
        allowed = expected[name]
        if allowed is not None and value not in allowed:
            problems.append(f"provenance.command gives {name} {value or '(nothing)'}, but the payload records "
                            f"{allowed[0] or 'none'}: the command is the line that re-runs this entry")
    if surrogate is not None and "--surrogate" not in given:
        problems.append(f"the entry ran through a stolen surrogate ({surrogate.method}), but provenance.command gives "
                        "no --surrogate")
    return problems


def queries_problems(payload, budget: int) -> list[str]:
    """provenance.queries against the cell: recorded in a black-box one (the harness counts every
    query), within `budget`; absent in a white-box one (it has the model, and makes no queries)."""
    queries = payload.provenance.queries
    black_box = payload.scenario.split("/")[1] == "black-box"
    if black_box and queries is None:
        return [f"provenance.queries is missing, but {payload.scenario} is a black-box cell: the harness counts "
                "every query and evaluate records the count (the track's query budget is held to it)"]
    if queries is not None and queries > budget:
        return [f"provenance.queries is {queries:,}, more than track '{payload.track}' allows ({budget:,}, its query budget)"]
    if not black_box and queries is not None:
        return [f"provenance.queries is {queries:,} in the white-box cell {payload.scenario}, which makes no queries"]
    return []


def config_problems(attack, cls, command: str) -> list[str]:
    """Where a registered attack's signed version and configuration are not what the registry's code,
    at the claimed budget and the command's `--set` options, would have run."""
    from reconbench.core.attack_options import OptionsError, options_model, resolve_options

    problems = []
    if not _not_after(attack.version, cls.version):
        problems.append(f"attack '{attack.name}' is at version {cls.version} in the registry; the entry says "
                        f"version '{attack.version}'")
    read = command_options(command)
    if isinstance(read, str):
        return problems + [read]
    _, sets = read
    overrides = {k: v for k, v in map(_set_item, sets) if not k.startswith("surrogate.")}
    declared = set(options_model(cls).model_fields)
    unknown = sorted(set(attack.config) - declared)
    if unknown:
        problems.append(f"attack '{attack.name}' declares no option {', '.join(unknown)} (its options: "
                        f"{', '.join(sorted(declared))}); its configuration is what the registered code ran")
        return problems
    budget = attack.budget or "default"
    try:
        resolve_options(cls, budget, dict(attack.config))  # every signed value within its declared type and range
        preset = resolve_options(cls, budget, overrides)
    except OptionsError as exc:
        return problems + [f"attack '{attack.name}' configuration: {exc}"]
    for key, value in sorted(attack.config.items()):
        fixed = preset.get(key)
        if fixed != "auto" and fixed != value:
            changed = f"the command's --set {key}={json.dumps(fixed)}" if key in overrides else f"the '{budget}' budget"
            problems.append(f"attack.config.{key} is {json.dumps(value)}, but {changed} runs {json.dumps(fixed)} "
                            f"(a changed option is recorded as --set {key}=... in provenance.command)")
    return problems


def _set_item(item: str) -> tuple[str, object]:
    """`--set key=value` as evaluate reads it (reconbench.cli.parse_overrides): JSON when it parses, else a string."""
    key, _, value = item.partition("=")
    try:
        return key.strip(), json.loads(value)
    except json.JSONDecodeError:
        return key.strip(), value


def _not_after(version: str, current: str) -> bool:
    if version == current:
        return True
    return version.isdigit() and current.isdigit() and 0 < int(version) <= int(current) and version == str(int(version))
