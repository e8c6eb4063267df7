"""Key history from the git history itself (issue 36, item 6), with no base branch to compare with:
a back-dated entry signed by a key its team had removed, and an attacker's key added to a victim team.
(submissions/key_history.py; the dates in team.toml and in commits are the writer's own.)"""

from __future__ import annotations

import datetime
import os
import shutil

import pytest

from reconbench.submissions.team import load_team, write_team
from submission_helpers import failure, fresh_board, git
from test_submissions_hostile import add_team, alpha_public


@pytest.fixture
def board(tmp_path_factory, tmp_path):
    return fresh_board(tmp_path_factory, tmp_path)


def commit(board, message: str, when: str | None = None) -> None:
    """Commit everything under the board; `when` back-dates both the author and the committer date."""
    git(board.root, "add", "-A")
    if when is None:
        git(board.root, "commit", "-q", "-m", message)
        return
    env = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        git(board.root, "commit", "-q", "-m", message)
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


def beta_public(board) -> str:
    return (board.beta_key.parent / "beta.pem.pub").read_text().split()[-1]


def test_a_back_dated_entry_under_a_removed_key_fails(board, tmp_path):
    """alpha removes its key A (and lists a new one); later someone holding A commits an entry signed by A,
    with author and committer dates years before the removal. team.toml's dates would let it through; the
    team.toml of the commit that brought it lists A as removed."""
    parked = tmp_path / "parked"
    shutil.move(board.entry, parked)
    git(board.root, "init", "-q")
    commit(board, "the teams")
    team = load_team(board.root / "alpha")
    data = team.model_dump()
    today = datetime.datetime.now(datetime.timezone.utc).date()
    data["records"] = [{**r, "added": None, "removed": today} for r in data["records"]] + [{"key": beta_public(board)}]
    write_team(board.root / "alpha", type(team).model_validate(data))
    commit(board, "alpha retires key A")
    shutil.move(parked, board.entry)
    commit(board, "an entry signed by A", when="2001-01-01T00:00:00+00:00")
    check = failure(board.only())
    assert check.name == "signature" and "did not list as a current key at commit" in check.message, check.message


def test_the_same_entry_committed_before_the_removal_stands(board):
    """The control: an entry that reached the main line while its key was current stays valid after the removal."""
    git(board.root, "init", "-q")
    commit(board, "the board, with alpha's entry signed by A")
    team = load_team(board.root / "alpha")
    data = team.model_dump()
    data["records"] = [{**r, "removed": datetime.datetime.now(datetime.timezone.utc).date() + datetime.timedelta(days=1)}
                       for r in data["records"]] + [{"key": beta_public(board)}]
    write_team(board.root / "alpha", type(team).model_validate(data))
    commit(board, "alpha retires key A after the entry")
    report = board.only()
    assert report.trust == "signed" and any(c.name == "signature" and "at commit" in c.message for c in report.checks)


def test_an_attackers_key_added_to_a_victim_team_is_flagged_without_a_base(board):
    """The last commit adds beta's key to alpha's team.toml: with no --base-root, the history's base (HEAD's
    first parent) flags it for maintainer review, as a base branch would."""
    git(board.root, "init", "-q")
    commit(board, "the board")
    assert board.validate().key_changes == []
    add_team(board, "alpha", [alpha_public(board), beta_public(board)])
    commit(board, "an attacker adds a key to alpha")
    (change,) = board.validate().key_changes
    assert change.team == "alpha" and change.change == "added" and change.also_listed_by == ("beta",)
    assert "maintainer review required" in change.text()
