"""The shape of `submissions/`: which names, files and sizes are allowed, and where entries are.

```
submissions/<team>/team.toml                      display name, links, contact, public keys
submissions/<team>/<entry-id>/result.json         the signed result
submissions/<team>/<entry-id>/reconstructions.safetensors   (or a pinned Hub reference in result.json)
submissions/<team>/<entry-id>/reconstructions.jsonl         a text entry's reconstructions instead (text/jsonl.py)
submissions/<team>/<entry-id>/README.md           optional: method, code link, notes
submissions/<team>/<entry-id>/attack/*.py         a bring-your-own attack's source (its sha256 is signed)
submissions/<team>/<entry-id>/reproduction.json   a reproducer's signed record (recon-submit reproduce)
submissions/<team>/<entry-id>/sealed.json         a sealed track's membership numbers, written by validate --seal-key
```

Everything here is lexical: paths are normalised with `os.path.abspath` (which removes `..`
without following links) and nothing ever follows a symbolic link, so a path that leaves
`submissions/` through `..` or a link is seen for what it is.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from reconbench.image.results import RECONSTRUCTIONS_FILE, RESULT_FILE
from reconbench.text.jsonl import MAX_FILE_BYTES as TEXT_RECONSTRUCTIONS_CAP
from reconbench.text.jsonl import TEXT_RECONSTRUCTIONS_FILE

DEFAULT_ROOT = Path("submissions")
TEAM_FILE = "team.toml"
README_FILE = "README.md"
REPRODUCTION_FILE = "reproduction.json"  # a reproducer's signed record (reconbench.reproduction.record)
ATTACK_DIR = "attack"  # a bring-your-own attack's source (reconbench.core.attack_source): the one sub-folder allowed
SEALED_FILE = "sealed.json"  # a sealed track's numbers scored at validation with the seal key (reconbench.image.sealed)
ENTRY_FILES = (RESULT_FILE, RECONSTRUCTIONS_FILE, TEXT_RECONSTRUCTIONS_FILE, README_FILE, REPRODUCTION_FILE, SEALED_FILE)
ROOT_FILES = (README_FILE,)  # a page that explains the folder may sit at submissions/README.md
# The board's sealed run records (core/sealed_runs.RUNS_DIR): not a team's folder; submissions/sealed_run_check.py
# checks them, and accepts nothing there but <season>/<team>/<run>/record.json: a team folder of that name fails.
RUNS_FOLDER = "sealed-runs"
ALLOWED_SUFFIXES = (".json", ".toml", ".md", ".safetensors", ".jsonl")

# Size caps, checked with lstat before a byte is read (a sparse 2 GB file costs nothing to refuse).
SIZE_CAPS = {
    # results.parse_result_json's own limit; a real result is ~3 KB (config values are short scalars).
    RESULT_FILE: 1_000_000,
    # A method description; anything longer belongs in the paper or the code repository it links to.
    README_FILE: 64 * 1024,
    # A display name, a few links and keys (one key is a 44-character line): 16 KB is ~100x that.
    TEAM_FILE: 16 * 1024,
    # Kept in git: a CIFAR-sized D_tar (10,000 x 3x32x32 uint8) is 30 MB, and GitHub warns at 50 MB
    # and refuses files over 100 MB. Larger sets go to the Hub, pinned in result.json (repo, revision,
    # sha256), where the cap is the exact size the signed count and shape imply (see reconstructions).
    RECONSTRUCTIONS_FILE: 64 * 1024 * 1024,
    # A text entry's reconstructions (reconbench.text.jsonl states why 32 MiB).
    TEXT_RECONSTRUCTIONS_FILE: TEXT_RECONSTRUCTIONS_CAP,
}

# Formats that can carry a pickle (and so run code when loaded). Refused by name here, and by
# content in checks/structure.py whatever the name.
PICKLE_SUFFIXES = (".pt", ".pth", ".pkl", ".pickle", ".bin", ".ckpt", ".joblib", ".dill", ".npy", ".npz",
                   ".h5", ".hdf5", ".mar", ".sav", ".p", ".tar", ".zip")

# Team folder names are identities on the board: ASCII lower-case letters, digits and inner
# hyphens only, so that no homoglyph (Cyrillic 'а'), width variant, combining mark or
# right-to-left override can make one team's folder look like another's.
TEAM_SLUG = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?")
# Entry folders are named by the payload's entry_id (results.Slug: [a-z0-9][a-z0-9._-]{0,79}).
ENTRY_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,79}")


class LayoutError(Exception):
    """A path that is not where a submission may be; the message names it."""


def show(name: str) -> str:
    """A file name as it can be printed safely: plain ASCII as is, anything else escaped.

    Escaping shows right-to-left overrides, zero-width characters and homoglyphs for what they
    are ('\\u202e', '\\u0430') instead of letting them rearrange or disguise the message.
    """
    if name.isascii() and name.isprintable():
        return name
    return ascii(name)[1:-1]


def is_plain_text(text: str) -> bool:
    """No control or format characters (bidi overrides, zero-width joiners), and already NFC."""
    if unicodedata.normalize("NFC", text) != text:
        return False
    return not any(unicodedata.category(c) in ("Cc", "Cf", "Co", "Cs") and c not in "\n\t" for c in text)


def lexical(path: Path) -> Path:
    return Path(os.path.abspath(path))


def is_hidden(name: str) -> bool:
    return name.startswith(".")


@dataclass(frozen=True)
class Unit:
    """One thing to validate: an entry folder, or a team folder / root file that holds no entry."""

    path: Path  # lexical path under the root
    team: str
    entry_id: str  # "" for a team folder or a root-level file


@dataclass
class Selection:
    units: list[Unit] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)  # given paths that are not under the root
    removed: list[str] = field(default_factory=list)  # given paths whose entry no longer exists

    def add(self, unit: Unit) -> None:
        if unit not in self.units:
            self.units.append(unit)


def _scan(folder: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def _is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def entry_folders(team_dir: Path) -> list[Path]:
    """Sub-folders of a team folder (links to folders included, so that they are reported)."""
    if not _is_real_dir(team_dir):
        return []
    return [team_dir / e.name for e in _scan(team_dir) if e.is_dir(follow_symlinks=False) or e.is_symlink()]


def discover_entries(root: Path = DEFAULT_ROOT) -> list[Path]:
    """Every entry folder under `root` (submissions/<team>/<entry>/), sorted, links not followed.

    Badly named or hidden folders are returned too: the validator is what refuses them.
    """
    root = lexical(root)
    if not _is_real_dir(root):
        return []
    out: list[Path] = []
    for team in _scan(root):
        if team.name != RUNS_FOLDER or not team.is_dir(follow_symlinks=False):
            out += entry_folders(root / team.name)
    return out


def all_units(root: Path = DEFAULT_ROOT) -> Selection:
    """Entries, plus team folders without entries and stray files at the root and team level."""
    root = lexical(root)
    sel = Selection()
    if os.path.islink(root) or (os.path.lexists(root) and not _is_real_dir(root)):
        sel.add(Unit(root, "", ""))  # the root itself is wrong: one failing unit says so
        return sel
    for item in _scan(root):
        path = root / item.name
        if item.name == RUNS_FOLDER and item.is_dir(follow_symlinks=False):
            continue  # run records, checked on their own (sealed_run_check)
        if item.is_dir(follow_symlinks=False) or item.is_symlink():
            _add_team(sel, path)  # a link is reported as a team folder that is a link
        elif item.name not in ROOT_FILES:
            sel.add(Unit(path, "", ""))
    return sel


def _add_team(sel: Selection, team_dir: Path) -> None:
    entries = entry_folders(team_dir)
    for entry in entries:
        sel.add(Unit(entry, team_dir.name, entry.name))
    if not entries:
        sel.add(Unit(team_dir, team_dir.name, ""))


def select(paths: list[Path], root: Path = DEFAULT_ROOT) -> Selection:
    """Map changed paths (any file or folder inside an entry or a team folder) to units.

    A path inside an entry selects that entry; a team folder or a file directly in it (team.toml:
    its keys vouch for every entry) selects all of the team's entries; the root selects everything.
    """
    root_abs = lexical(root)
    sel = Selection()
    for given in paths:
        path = lexical(given)
        try:
            rel = path.relative_to(root_abs)
        except ValueError:
            sel.outside.append(show(str(given)))
            continue
        parts = rel.parts
        if parts and parts[0] == RUNS_FOLDER and _is_real_dir(root_abs / RUNS_FOLDER):
            continue  # a run record: checked on its own (sealed_run_check)
        if not parts:
            for unit in all_units(root).units:
                sel.add(unit)
        elif len(parts) == 1:
            if os.path.islink(root_abs):
                sel.add(Unit(root_abs, "", ""))
            elif _is_real_dir(path):
                _add_team(sel, path)
            elif os.path.lexists(path):
                if parts[0] not in ROOT_FILES:
                    sel.add(Unit(path, "", ""))
            else:
                sel.removed.append(show(str(given)))
        else:
            team_dir = root_abs / parts[0]
            second = team_dir / parts[1]
            if os.path.islink(root_abs):
                sel.add(Unit(root_abs, "", ""))
            elif not os.path.lexists(team_dir) or (not _is_real_dir(team_dir) and not os.path.islink(team_dir)):
                sel.removed.append(show(str(given)))
            elif os.path.islink(team_dir):
                sel.add(Unit(team_dir, parts[0], ""))
            elif _is_real_dir(second) or os.path.islink(second):
                sel.add(Unit(second, parts[0], parts[1]))
            elif os.path.lexists(second):  # team.toml or a stray file: every entry of the team
                _add_team(sel, team_dir)
            elif len(parts) == 2 and parts[1] == TEAM_FILE:
                _add_team(sel, team_dir)  # team.toml deleted: its entries lost their keys
            else:
                sel.removed.append(show(str(given)))
    return sel
