"""Which keys a team listed when each entry reached the main line, read from the git history itself.

team.toml's `added` and `removed` dates are the team's own words, and a commit's dates are whatever its
author and committer wrote: neither can tell when a key stopped being the team's. The history can. On
HEAD's first-parent line (main's merges; a pull request's merge commit last), an entry arrives at the
first commit whose diff against its first parent adds a file of it, and at that commit team.toml lists
the keys it lists. A signature by a key the team.toml of that commit did not list as current (absent,
or marked removed) is refused, whatever dates anyone wrote (checks/signature.py).

Without a base branch, the key changes a maintainer must review are those of the last commit on that
line against its first parent, and of any uncommitted change (keys.py compares the teams): a pull
request's merge commit checked out alone still shows every key it adds to or removes from a team.
"""

from __future__ import annotations

import bisect
import subprocess
import tomllib
from pathlib import Path

from reconbench.submissions.layout import TEAM_FILE, lexical


def _git(root: Path, *args: str) -> bytes | None:
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def current_keys(text: bytes) -> frozenset[str]:
    """The keys a team.toml lists as in use (not marked removed); empty if it does not parse."""
    try:
        data = tomllib.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return frozenset()
    keys = data.get("keys") if isinstance(data, dict) else None
    out = set()
    for item in keys if isinstance(keys, list) else []:
        if isinstance(item, str):
            out.add(item)
        elif isinstance(item, dict) and isinstance(item.get("key"), str) and item.get("removed") is None:
            out.add(item["key"])
    return frozenset(out)


class KeyHistory:
    """Entries' arrivals and teams' listed keys along HEAD's first-parent line ({} without git)."""

    def __init__(self, root: Path):
        self.root = lexical(root)
        self.arrivals: dict[Path, tuple[int, str]] = {}  # entry folder -> (index on the line, commit)
        self.states: dict[str, list[tuple[int, frozenset[str]]]] = {}  # slug -> (index, current keys) by index
        top = _git(self.root, "rev-parse", "--show-toplevel")
        if top is None:
            return
        self.top = Path(top.decode().strip())
        line = _git(self.root, "rev-list", "--first-parent", "--reverse", "HEAD")
        if not line:
            return
        self.index = {c: i for i, c in enumerate(line.decode().split())}
        # a shallow clone's oldest commit shows every file as added there: it says nothing of arrivals
        self.boundary = (_git(self.root, "rev-parse", "--is-shallow-repository") or b"").strip() == b"true"
        self._read_arrivals()
        self._read_team_states()

    def _log(self, *args: str) -> list[tuple[str, list[str]]]:
        """(commit, paths) along the first-parent line, oldest first, each diffed against its first parent."""
        raw = _git(self.root, "log", "--first-parent", "--diff-merges=first-parent", "--reverse", "--no-renames",
                   "--format=%x00%H", "--name-only", *args, "--", ".")
        out: list[tuple[str, list[str]]] = []
        for block in (raw or b"").decode("utf-8", "surrogateescape").split("\0"):
            lines = [x for x in block.split("\n") if x]
            if lines and lines[0] in self.index:
                out.append((lines[0], lines[1:]))
        return out

    def _relative(self, path: str) -> tuple[str, ...] | None:
        try:
            return lexical(self.top / path).relative_to(self.root).parts
        except ValueError:
            return None

    def _read_arrivals(self) -> None:
        for commit, paths in self._log("--diff-filter=A"):
            for path in paths:
                parts = self._relative(path)
                if parts and len(parts) >= 3:
                    self.arrivals.setdefault(self.root / parts[0] / parts[1], (self.index[commit], commit))

    def _read_team_states(self) -> None:
        for commit, paths in self._log():
            for path in paths:
                parts = self._relative(path)
                if not parts or len(parts) != 2 or parts[1] != TEAM_FILE:
                    continue
                blob = _git(self.root, "show", f"{commit}:{path}")
                self.states.setdefault(parts[0], []).append((self.index[commit], current_keys(blob or b"")))

    def listed_at_arrival(self, entry: Path, key: str) -> tuple[bool, str] | None:
        """(whether the team's team.toml listed `key` as current at the commit the entry arrived, that
        commit); None where the history cannot say (no git, an entry not committed yet)."""
        arrival = self.arrivals.get(lexical(entry))
        if arrival is None:
            return None
        index, commit = arrival
        if index == 0 and self.boundary:
            return None
        states = self.states.get(lexical(entry).parent.name, [])
        at = bisect.bisect_right([i for i, _ in states], index) - 1
        return (at >= 0 and key in states[at][1]), commit


def teams_at_parent(root: Path) -> dict[str, frozenset[str]] | None:
    """slug -> current keys of each team.toml at HEAD's first parent (the base of the last commit on the
    line); None without git or without a parent."""
    root = lexical(root)
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None or _git(root, "rev-parse", "--verify", "-q", "HEAD^1") is None:
        return None
    top_path = Path(top.decode().strip())
    listing = _git(top_path, "ls-tree", "-r", "--name-only", "--full-tree", "HEAD^1")
    out = {}
    for path in (listing or b"").decode("utf-8", "surrogateescape").splitlines():
        try:
            parts = lexical(top_path / path).relative_to(root).parts
        except ValueError:
            continue
        if len(parts) == 2 and parts[1] == TEAM_FILE:
            out[parts[0]] = current_keys(_git(top_path, "show", f"HEAD^1:{path}") or b"")
    return out
