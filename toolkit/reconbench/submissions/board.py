"""What is already on the board: signed entries by reconstruction hash and entry_id, keys by team.

Built lazily, once per validation run, from the cheap checks only (structure of the file, schema,
signature under the team's keys): no re-scoring, no reconstruction file read.
"""

from __future__ import annotations

import os
import stat
from collections import defaultdict
from pathlib import Path

from reconbench.results import RESULT_FILE, ResultError, parse_result_json, payload_dict
from reconbench.signing import SigningError, verify_payload
from reconbench.submissions.layout import SIZE_CAPS, discover_entries, lexical
from reconbench.submissions.team import Team, TeamError, load_team


class Board:
    def __init__(self, root: Path):
        self.root = lexical(root)
        self._built = False
        self._sha: dict[str, list[Path]] = defaultdict(list)
        self._ids: dict[str, list[Path]] = defaultdict(list)
        self._keys: dict[str, set[str]] = defaultdict(set)
        self._entries = 0

    def _team(self, folder: Path, cache: dict[Path, Team | None]) -> Team | None:
        if folder not in cache:
            try:
                cache[folder] = load_team(folder)
            except (TeamError, OSError, RecursionError):
                cache[folder] = None
        return cache[folder]

    def _build(self) -> None:
        if self._built:
            return
        self._built = True
        teams: dict[Path, Team | None] = {}
        if os.path.isdir(self.root) and not os.path.islink(self.root):
            for item in sorted(os.listdir(self.root)):
                folder = self.root / item
                if not os.path.islink(folder) and os.path.isdir(folder):
                    team = self._team(folder, teams)
                    for key in team.keys if team else ():
                        self._keys[key].add(team.slug)
        for entry in discover_entries(self.root):
            file = entry / RESULT_FILE
            try:
                st = os.lstat(file)
                if os.path.islink(entry) or not stat.S_ISREG(st.st_mode) or st.st_size > SIZE_CAPS[RESULT_FILE]:
                    continue
                result = parse_result_json(file)
                team = self._team(entry.parent, teams)
                if team is None:
                    continue
                verify_payload(payload_dict(result), result.signature.model_dump(), list(team.keys))
            except (OSError, ResultError, SigningError, ValueError, RecursionError):
                continue
            self._sha[result.payload.reconstructions.sha256].append(entry)
            self._ids[result.payload.entry_id].append(entry)
            self._entries += 1

    def by_sha256(self, sha: str) -> list[Path]:
        self._build()
        return list(self._sha.get(sha, []))

    def by_entry_id(self, entry_id: str) -> list[Path]:
        self._build()
        return list(self._ids.get(entry_id, []))

    def key_owners(self, public_key: str) -> set[str]:
        self._build()
        return set(self._keys.get(public_key, set()))

    def size(self) -> int:
        self._build()
        return self._entries
