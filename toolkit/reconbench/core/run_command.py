"""The command line a result records: the `recon-submit evaluate` line that re-runs it.

Validation holds a payload to its command's options (submissions/claims.py), and the findings read a
run's budget from it (leaderboard/findings_rule.budget_label), so evaluate called from Python records
the line its arguments are, never this process's own command line (which holds local paths).
"""

from __future__ import annotations

from pathlib import Path


def recorded_command(command: str | None, track: str, attack, scenario: str | None, seed: int, device: str,
                     options: dict | None, budget: str = "default", surrogate: str | None = None) -> str:
    """The command a result records: the caller's, else the evaluate line these arguments are (validation
    holds a payload to its command's options: submissions/claims.py); this process's own command line
    only for an attack given as a class, which no command line names."""
    from reconbench.core.redact import this_command

    if command is not None:
        return command
    if not isinstance(attack, str):
        return this_command()
    return command_of(track, attack, scenario, seed, device, options, budget, surrogate)


def command_of(track, attack, scenario, seed, device, options, budget, surrogate) -> str:
    """evaluate_command for options given as a dict (each becomes `--set key=<json>`)."""
    import json

    sets = [f"{k}={json.dumps(v)}" for k, v in (options or {}).items()]
    return evaluate_command(track, attack, scenario, seed, device, sets, budget, surrogate)


def evaluate_command(track: str, attack: str, scenario: str | None, seed: int, device: str, overrides: list[str],
                     budget: str = "default", surrogate: str | None = None) -> str:
    """The command line that reproduces a run. Local paths and keys are left out: they are the
    runner's (an attack file is recorded by its name, `myattack.py:MyAttack`, not its folder)."""
    import shlex

    if ":" in attack and attack.split(":", 1)[0].endswith(".py"):
        file, cls = attack.rsplit(":", 1)
        attack = f"{Path(file).name}:{cls}"
    args = ["recon-submit", "evaluate", "--track", track, "--attack", attack, "--seed", str(seed), "--device", device]
    if budget != "default":
        args += ["--budget", budget]
    if surrogate:
        args += ["--surrogate", surrogate]
    if scenario:
        args += ["--scenario", scenario]
    for item in overrides:
        args += ["--set", item]
    return shlex.join(args)
