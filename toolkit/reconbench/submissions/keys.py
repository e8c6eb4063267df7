"""Key changes of a pull request: every key added to or removed from an existing team's team.toml,
compared with the base branch's submissions/ folder, or without one with the git history's
(HEAD's first parent: key_history.py). Each is flagged "maintainer review required"
in the validation report: a signature proves who signed, and team.toml says who that may be, so a
change to it is a change of identity that only a person can confirm (reviewing guide: site/reviewing.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from reconbench.core.signing import key_id
from reconbench.submissions.layout import TEAM_FILE, lexical
from reconbench.submissions.team import Team, TeamError, load_team


@dataclass(frozen=True)
class KeyChange:
    team: str
    key_id: str
    change: str  # "added" | "removed"
    also_listed_by: tuple[str, ...] = ()  # other teams that list the same key (a red flag)

    def text(self) -> str:
        more = f"; the same key is listed by team(s) {', '.join(self.also_listed_by)}" if self.also_listed_by else ""
        return f"team '{self.team}': key {self.key_id} {self.change}{more} — maintainer review required"

    def to_dict(self) -> dict:
        return {"team": self.team, "key_id": self.key_id, "change": self.change,
                "also_listed_by": list(self.also_listed_by)}


def _teams(root: Path) -> dict[str, Team]:
    out = {}
    root = lexical(root)
    if not os.path.isdir(root) or os.path.islink(root):
        return out
    for name in sorted(os.listdir(root)):
        folder = root / name
        if os.path.isdir(folder) and not os.path.islink(folder) and os.path.lexists(folder / TEAM_FILE):
            try:
                out[name] = load_team(folder)
            except (TeamError, OSError, RecursionError):
                continue  # the validator reports a broken team.toml itself
    return out


def key_changes(root: Path, base_root: Path | None) -> list[KeyChange]:
    """Keys added to / removed from teams that exist in `base_root` (a new team's keys are its own).
    Without a base branch, the base is the git history's: HEAD's first parent (key_history.py)."""
    now = {slug: frozenset(t.current_keys) for slug, t in _teams(root).items()}
    if base_root is not None:
        before = {slug: frozenset(t.current_keys) for slug, t in _teams(base_root).items()}
    else:
        from reconbench.submissions.key_history import teams_at_parent

        before = teams_at_parent(root)
        if before is None:
            return []
    return _changes(now, before)


def _changes(now: dict[str, frozenset[str]], before: dict[str, frozenset[str]]) -> list[KeyChange]:
    owners: dict[str, set[str]] = {}
    for slug, keys in now.items():
        for k in keys:
            owners.setdefault(k, set()).add(slug)
    changes = []
    for slug, keys in sorted(now.items()):
        if slug not in before:
            for k in sorted(keys):  # a new team listing a key another team already has
                others = tuple(sorted(owners[k] - {slug}))
                if others:
                    changes.append(KeyChange(slug, key_id(k), "added", others))
            continue
        old, new = before[slug], keys
        for k in sorted(new - old):
            changes.append(KeyChange(slug, key_id(k), "added", tuple(sorted(owners[k] - {slug}))))
        for k in sorted(old - new):
            changes.append(KeyChange(slug, key_id(k), "removed"))
    for slug in sorted(set(before) - set(now)):  # a team.toml deleted: its keys are gone
        for k in sorted(before[slug]):
            changes.append(KeyChange(slug, key_id(k), "removed"))
    return changes
