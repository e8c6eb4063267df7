"""What is already on the board: signed entries by reconstruction hash and entry_id, keys by team,
and the order in which entries reached the main branch (who was first).

Built lazily, once per validation run, from the cheap checks only (structure of the file, schema,
signature under the team's keys): no re-scoring. Reconstruction files are read only when the
near-duplicate search needs them: once per entry for its index features (nearindex.py, cached by the
file's sha256 in validation_cache.py), and for the exact comparison with a candidate.

First come, first served (docs/architecture.md: a newcomer can never hurt an entry already on the board).
Order of arrival, earliest first:
  1. entries whose files are in the git history, by the topological position of the first commit
     that added a file of the entry (`git log --topo-order --reverse --diff-filter=A`): a pull
     request's commits descend from main, so they come after everything on main, whatever dates
     their author wrote into them;
  2. then entries not (yet) committed, and every entry when there is no git history at all
     (a plain folder, an exported tarball): by provenance `finished` time, then by path.
Two entries added by the same commit fall back to (2) between them.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections import defaultdict
from datetime import date, datetime, timezone
from pathlib import Path

from reconbench.image.results import RECONSTRUCTIONS_FILE, RESULT_FILE, ResultError, payload_dict
from reconbench.text.results import parse_any_result
from reconbench.core.signing import SigningError, verify_payload
from reconbench.submissions.layout import SIZE_CAPS, discover_entries, lexical
from reconbench.submissions.team import Team, TeamError, load_team

_NEVER = datetime.max.replace(tzinfo=timezone.utc)


def git_first_added(root: Path) -> dict[Path, tuple[int, int]]:
    """entry folder -> (topological index, committer time) of the first commit that added one of its
    files; {} without git."""
    try:
        top = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, timeout=30)
        if top.returncode != 0:
            return {}
        log = subprocess.run(["git", "-C", str(root), "log", "--topo-order", "--reverse", "--no-renames",
                              "--diff-filter=A", "--format=%x00%H %ct", "--name-only", "-z", "--", "."],
                             capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return {}
    if log.returncode != 0:
        return {}
    base = Path(top.stdout.strip())
    root = lexical(root)
    first: dict[Path, tuple[int, int]] = {}
    index, when = -1, 0
    for token in log.stdout.decode("utf-8", "surrogateescape").split("\0"):
        token = token.strip("\n")
        if not token:
            continue
        head = token.split(" ")
        if len(head) == 2 and len(head[0]) == 40 and all(c in "0123456789abcdef" for c in head[0]) and head[1].isdigit():
            index, when = index + 1, int(head[1])  # a commit line (format %x00%H %ct)
            continue
        path = lexical(base / token)
        try:
            rel = path.relative_to(root)
        except ValueError:
            continue
        if len(rel.parts) >= 3:  # <team>/<entry>/<file>
            first.setdefault(root / rel.parts[0] / rel.parts[1], (index, when))
        if len(rel.parts) >= 2:  # <team>/<file>: when the team (its team.toml or first entry) arrived
            first.setdefault(root / rel.parts[0], (index, when))
    return first


class Board:
    def __init__(self, root: Path, base_root: Path | None = None, cache=None):
        self.root = lexical(root)
        # the base branch's submissions/ (a pull request's CI): entries not there arrive today
        self.base_root = lexical(base_root) if base_root is not None else None
        self._built = False
        self._sha: dict[str, list[Path]] = defaultdict(list)
        self._ids: dict[str, list[Path]] = defaultdict(list)
        self._keys: dict[str, set[str]] = defaultdict(set)
        self._info: dict[Path, dict] = {}
        self._payloads: dict[Path, object] = {}  # entry -> its signed payload (image or text)
        self._entries = 0
        self._git: dict[Path, tuple[int, int]] = {}
        self._history = None  # key_history.KeyHistory, read when a signature check first asks
        self._spaces: dict[Path, object] = {}
        self._teams: dict[str, Team] = {}
        self._features: dict[Path, object] = {}
        self._indexes: dict[tuple[str, str], object] = {}
        self._readable: dict[Path, bool] = {}
        self.cache = cache  # a validation_cache.ValidationCache, or None: features are computed here

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
                    if team is not None:
                        self._teams[team.slug] = team
        self._git = git_first_added(self.root)
        for entry in discover_entries(self.root):
            file = entry / RESULT_FILE
            try:
                st = os.lstat(file)
                if (os.path.islink(entry) or not stat.S_ISREG(st.st_mode) or st.st_nlink > 1
                        or st.st_size > SIZE_CAPS[RESULT_FILE]):
                    continue
                result = parse_any_result(file)  # image or text entries
                team = self._team(entry.parent, teams)
                if team is None:
                    continue
                verify_payload(payload_dict(result), result.signature.model_dump(), list(team.keys))
            except (OSError, ResultError, SigningError, ValueError, RecursionError):
                continue
            p = result.payload
            self._sha[p.reconstructions.sha256].append(entry)
            self._ids[p.entry_id].append(entry)
            self._info[entry] = dict(track=p.track, training=p.scenario.split("/")[0], team=entry.parent.name,
                                     public_key=result.signature.public_key, recon=p.reconstructions,
                                     finished=_utc(p.provenance.finished), setting=setting_of(p))
            self._payloads[entry] = p
            self._entries += 1

    # ---------------------------------------------------------------- who was first

    def arrival(self, entry: Path) -> tuple:
        """Sort key: earlier arrival sorts first (see the module docstring)."""
        self._build()
        info = self._info.get(entry)
        finished = info["finished"] if info else _NEVER
        index = self._git.get(entry, (None, 0))[0]
        return (0 if index is not None else 1, index if index is not None else 0, finished, str(entry))

    def entry_day(self, entry: Path) -> date:
        """The day an entry reached the board, for key dates (team.py): today for an entry a pull
        request adds (not in the base branch's folder; its commit dates are the author's to write);
        else the day of its first commit; else (no history) the day its provenance says it finished."""
        self._build()
        today = datetime.now(timezone.utc).date()
        if self.base_root is not None and not os.path.lexists(self.base_root / entry.relative_to(self.root)):
            return today
        if entry in self._git:
            return datetime.fromtimestamp(self._git[entry][1], timezone.utc).date()
        info = self._info.get(entry)
        return info["finished"].date() if info else today

    def listed_at_arrival(self, entry: Path, key: str) -> tuple[bool, str] | None:
        """Whether the team.toml of the commit that brought `entry` to the main line listed `key` as current
        (key_history.py: read from the history, not from anyone's dates); None where it cannot say."""
        if self._history is None:
            from reconbench.submissions.key_history import KeyHistory

            self._history = KeyHistory(self.root)
        return self._history.listed_at_arrival(entry, key)

    def teams(self) -> dict[str, Team]:
        """Every team folder under the root whose team.toml parses, by slug."""
        self._build()
        return dict(self._teams)

    def team_arrival(self, slug: str) -> tuple:
        """Sort key of a team, earlier first, as for entries (module docstring): the topological position
        of the first commit that added a file of it; without history, its earliest entry's finish time,
        then its slug."""
        self._build()
        folder = self.root / slug
        if folder in self._git:
            return (0, self._git[folder][0], _NEVER, slug)
        entries = [self.arrival(e) for e, i in self._info.items() if i["team"] == slug]
        earliest = min(entries) if entries else (1, 0, _NEVER, "")
        return (1, 0, earliest[2], slug)

    def how_first(self, entry: Path) -> str:
        self._build()
        return "first commit in the git history" if entry in self._git else "provenance finished time, then path"

    def earlier(self, me: Path, others: list[Path]) -> list[Path]:
        """Those of `others` that reached the board before `me`, earliest first."""
        mine = self.arrival(me)
        return sorted((o for o in others if o != me and self.arrival(o) < mine), key=self.arrival)

    # ---------------------------------------------------------------- lookups

    def by_sha256(self, sha: str) -> list[Path]:
        self._build()
        return list(self._sha.get(sha, []))

    def by_entry_id(self, entry_id: str) -> list[Path]:
        self._build()
        return list(self._ids.get(entry_id, []))

    def key_owners(self, public_key: str) -> set[str]:
        self._build()
        return set(self._keys.get(public_key, set()))

    def same_target(self, track: str, training: str) -> list[Path]:
        """Signed entries scored against the same target set (same track, same training type)."""
        self._build()
        return [e for e, i in self._info.items() if i["track"] == track and i["training"] == training]

    def signed_with(self, public_key: str) -> list[Path]:
        self._build()
        return [e for e, i in self._info.items() if i["public_key"] == public_key]

    def payload(self, entry: Path):
        """The entry's signed payload, as parsed and verified when the board was built."""
        self._build()
        return self._payloads[entry]

    def team_of(self, entry: Path) -> str:
        self._build()
        return self._info[entry]["team"]

    def setting(self, entry: Path) -> str:
        """The entry's configuration (setting_of): entries of one team that share it are seeds of one run."""
        self._build()
        return self._info[entry]["setting"]

    def space(self, entry: Path):
        """The entry's reconstructions as a nearcopy.Space (None when unreadable or not as signed)."""
        from reconbench.submissions.nearcopy import Space

        if entry not in self._spaces:
            images = _load_images(entry, self._info[entry]["recon"])
            self._spaces[entry] = None if images is None else Space(images)
        return self._spaces[entry]

    def readable(self, entry: Path) -> bool:
        """Whether space(entry) would find the entry's reconstructions (a plain file, as signed)."""
        if entry not in self._readable:
            if entry in self._spaces:
                self._readable[entry] = self._spaces[entry] is not None
            else:
                self._readable[entry] = _load_images(entry, self._info[entry]["recon"]) is not None
        return self._readable[entry]

    def recon_sha256(self, entry: Path) -> str:
        self._build()
        return self._info[entry]["recon"].sha256

    def features_of(self, sha256: str, images):
        """nearindex.Features of a set of reconstructions (its file's sha256), from the cache if there."""
        from reconbench.submissions.nearindex import compute_features

        found = self.cache.load_features(sha256) if self.cache is not None else None
        if found is None or len(found) != len(images):
            found = compute_features(images)
            if self.cache is not None:
                self.cache.store_features(sha256, found)
        return found

    def features(self, entry: Path):
        """The index features of a signed entry (None when its file is unreadable or not as signed).
        A cached copy is used without reading the file: the exact comparison reads it (space())."""
        if entry not in self._features:
            recon = self._info[entry]["recon"]
            found = self.cache.load_features(recon.sha256) if self.cache is not None and recon.hub is None else None
            if found is None:
                images = _load_images(entry, recon)
                found = None if images is None else self.features_of(recon.sha256, images)
            self._features[entry] = found
        return self._features[entry]

    def near_index(self, track, training: str):
        """A nearindex.NearIndex over every signed entry of one target set (a track, a training type),
        built once per run."""
        from reconbench.submissions.nearindex import NearIndex, track_basis

        key = (track.id, training)
        if key not in self._indexes:
            members = [(e, self.features(e)) for e in sorted(self.same_target(track.id, training), key=self.arrival)]
            self._indexes[key] = NearIndex(((e, f) for e, f in members if f is not None), track_basis(track))
        return self._indexes[key]

    def size(self) -> int:
        self._build()
        return self._entries


def _load_images(entry: Path, recon):
    """The entry's reconstructed images if its file is a plain file in the entry, as signed; else None."""
    from reconbench.core.io import FileFormatError, sha256_file
    from reconbench.image.results import load_reconstructions

    path = entry / RECONSTRUCTIONS_FILE
    try:
        st = os.lstat(path)
        if recon.hub is not None or not stat.S_ISREG(st.st_mode) or st.st_nlink > 1 \
                or st.st_size > SIZE_CAPS[RECONSTRUCTIONS_FILE] or sha256_file(path) != recon.sha256:
            return None
        images, _ = load_reconstructions(path)
    except (OSError, FileFormatError):
        return None
    return images


def setting_of(payload) -> str:
    """What makes two entries runs of one configuration, differing only in the seed: track, scenario,
    attack name and version, and the resolved configuration (the seed groups' key, leaderboard/seeds.py)."""
    a = payload.attack
    return json.dumps([payload.track, payload.scenario, a.name, a.version, a.config], sort_keys=True, default=str)


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
