"""Builders for the submission tests: ONE real entry per test session (mi-face on digits, evaluated
and submitted for team 'alpha'), copied into a fresh submissions root for each test, and tools to
forge variants of it (re-signed payloads, swapped files)."""

from __future__ import annotations

import json
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from reconbench.image.results import RECONSTRUCTIONS_FILE, RESULT_FILE
from reconbench.core.signing import generate_key, load_private_key, sign_payload
from reconbench.submissions import validate_board
from reconbench.submissions.team import Team, write_team

_BASE: "Base | None" = None


@dataclass(frozen=True)
class Base:
    home: Path
    root: Path  # submissions/ with alpha/<entry> and beta/ (a second team, no entry)
    result_dir: Path  # what evaluate wrote
    alpha_key: Path
    beta_key: Path
    entry_id: str


def base(tmp_path_factory) -> Base:
    """Evaluate once per session (mi-face runs in seconds), then reuse."""
    global _BASE
    if _BASE is None:
        from reconbench.image.evaluation import evaluate
        from reconbench.submissions.submit import submit_result

        home = tmp_path_factory.mktemp("submission-base")
        alpha_key, _ = generate_key(home / "keys" / "alpha.pem")
        beta_key, beta_public = generate_key(home / "keys" / "beta.pem")
        out = evaluate(track_id="digits", attack_spec="mi-face", key_path=alpha_key, out=home / "result",
                       command="recon-submit evaluate --attack mi-face (test fixture)")
        root = home / "submissions"
        submit_result(home / "result", "alpha", root=root, key_path=alpha_key, team_name="Alpha lab")
        write_team(root / "beta", Team(slug="beta", name="Beta group", keys=[beta_public]))
        _BASE = Base(home, root, home / "result", alpha_key, beta_key, out.result.payload.entry_id)
    return _BASE


@dataclass
class Board:
    root: Path
    entry: Path
    alpha_key: Path
    beta_key: Path
    result_dir: Path

    @property
    def result_json(self) -> Path:
        return self.entry / RESULT_FILE

    @property
    def recon(self) -> Path:
        return self.entry / RECONSTRUCTIONS_FILE

    def payload(self) -> dict:
        return json.loads(self.result_json.read_text())["payload"]

    def resign(self, mutate, key: Path | None = None, entry: Path | None = None) -> None:
        """Change the payload, then sign it again (with the team's own key unless told otherwise)."""
        file = (entry or self.entry) / RESULT_FILE
        data = json.loads(file.read_text())
        mutate(data["payload"])
        data["signature"] = sign_payload(data["payload"], load_private_key(key or self.alpha_key))
        file.write_text(json.dumps(data, indent=2))

    def validate(self, paths=None, **kw):
        kw.setdefault("rescore", False)
        return validate_board(paths, self.root, **kw)

    def only(self, **kw):
        """The report of the alpha entry."""
        reports = [r for r in self.validate(**kw).entries if r.path == self.entry]
        assert len(reports) == 1
        return reports[0]


def fresh_board(tmp_path_factory, tmp_path: Path) -> Board:
    b = base(tmp_path_factory)
    root = tmp_path / "submissions"
    shutil.copytree(b.root, root, symlinks=True)
    return Board(root, root / "alpha" / b.entry_id, b.alpha_key, b.beta_key, b.result_dir)


def status(report, name: str) -> str:
    return next(c.status for c in report.checks if c.name == name)


def failure(report):
    """The failing check of a failed report (the entry stops there)."""
    fails = [c for c in report.checks if c.status == "fail"]
    assert report.trust == "failed" and fails, [c.to_dict() for c in report.checks]
    stage = fails[0].name.split(".")[0]
    assert all(c.name.split(".")[0] == stage for c in fails)  # it stopped at the first failing check
    # the later stages did not run (within the failing stage, e.g. rescore.*, other metrics may pass)
    after = [c for c in report.checks[report.checks.index(fails[-1]) + 1:] if c.name.split(".")[0] != stage]
    assert all(c.status == "not-run" for c in after)
    return fails[0]


def recorded(payload: dict, sets: dict | None = None) -> None:
    """Give a forged payload the command its run would record (core/run_command.py) after a test changed its
    seed, configuration (`sets`: the options changed on top of the budget) or cell: validation holds a
    payload to its command (submissions/claims.py), and these tests forge something else."""
    from reconbench.core.run_command import command_of

    attack = payload["attack"]
    payload["provenance"]["command"] = command_of(
        payload["track"], attack["name"], payload["scenario"], payload["provenance"]["seed"], "cpu", sets,
        attack.get("budget") or "default", (payload.get("surrogate") or {}).get("method"))


def with_seed(payload: dict, seed: int) -> None:
    """Another seed for a forged payload, in its provenance and in its command's --seed (the two must agree)."""
    import shlex

    words = shlex.split(payload["provenance"]["command"])
    if "--seed" in words:
        words[words.index("--seed") + 1] = str(seed)
    else:
        words += ["--seed", str(seed)]
    payload["provenance"].update(seed=seed, command=shlex.join(words))


def git(root, *args) -> None:
    """Run git in `root` with a fixed identity (the first-come tests build a history)."""
    import os
    import subprocess

    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"})


@contextmanager
def listed_reproducer(home: Path):
    """(reproducer key, stranger key): the first listed in a reproducers file that RECONBENCH_REPRODUCERS
    names while the context lasts, the second listed nowhere."""
    import pytest

    from reconbench.reproduction.record import REPRODUCERS_ENV

    key, public = generate_key(home / "reproducer.pem")
    stranger, _ = generate_key(home / "stranger.pem")
    file = home / "reproducers.toml"
    file.write_text(f'[[reproducer]]\nname = "test reproducer"\nkey = "{public}"\n')
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(REPRODUCERS_ENV, str(file))
        yield key, stranger
