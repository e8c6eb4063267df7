"""Check 1, structure: only the allowed files, no links, nothing hidden, nothing pickled, sizes capped.

Nothing is read before its size is known (lstat), and nothing is followed: a symbolic link is an
error wherever it is (root, team folder, entry folder, file), so no path can leave submissions/.
Every problem of the entry is listed, not only the first, so one CI run shows all there is to fix.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from reconbench.submissions.checks.base import Check, CheckFailed, Context
from reconbench.submissions.layout import (
    ALLOWED_SUFFIXES,
    ATTACK_DIR,
    ENTRY_FILES,
    ENTRY_ID,
    PICKLE_SUFFIXES,
    ROOT_FILES,
    SIZE_CAPS,
    TEAM_FILE,
    TEAM_SLUG,
    is_hidden,
    show,
)
from reconbench.core.envelope import RESULT_FILE

SNIFF_BYTES = 512

# Leading bytes of formats that are, or may wrap, a pickle (loading one can run code).
_MAGIC = [
    (re.compile(rb"\A\x80[\x02-\x05]", re.S), "a pickle (protocol 2-5 opcode stream)"),
    (re.compile(rb"\APK\x03\x04", re.S), "a zip archive (torch.save writes its pickle, data.pkl, inside one)"),
    (re.compile(rb"\A\x1f\x8b"), "a gzip stream (compressed pickles, joblib)"),
    (re.compile(rb"\ABZh"), "a bzip2 stream (compressed pickles)"),
    (re.compile(rb"\A\xfd7zXZ\x00"), "an xz stream (compressed pickles)"),
    (re.compile(rb"\A\x93NUMPY"), "a NumPy .npy array (object arrays are pickles)"),
    (re.compile(rb"\A\x89HDF\r\n"), "an HDF5 file (Keras/h5py checkpoints)"),
    # Protocol 0/1 pickles are text: a GLOBAL opcode ('c' module NL name NL) or a MARK+DICT/LIST start.
    (re.compile(rb"\Ac[A-Za-z_][\w.]*\n[A-Za-z_][\w.]*\n"), "a pickle (protocol 0/1, GLOBAL opcode)"),
    (re.compile(rb"\A\((?:dp|lp|tp)\d*\n"), "a pickle (protocol 0/1)"),
]


def sniff(path: Path) -> str | None:
    """What the first bytes say the file is, when that is a pickle or a pickle container."""
    with os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)), "rb") as f:
        head = f.read(SNIFF_BYTES)
    if len(head) > 262 and head[257:262] == b"ustar":
        return "a tar archive (torch's legacy format)"
    for pattern, what in _MAGIC:
        if pattern.search(head):
            if what.startswith("a zip") and b"data.pkl" in head:
                return "a torch zip checkpoint (holds data.pkl, a pickle)"
            return what
    if path.name.endswith(".safetensors") and head and not _safetensors_head(head):
        return "not a safetensors file (8-byte little-endian header length, then a JSON header)"
    return None


def _safetensors_head(head: bytes) -> bool:
    return len(head) >= 9 and head[8:9] == b"{" and 2 <= int.from_bytes(head[:8], "little") <= 100_000_000


def file_problems(path: Path, allowed: tuple[str, ...], where: str) -> list[str]:
    """Problems of one directory entry that should be a small regular file of an allowed name."""
    name = show(path.name)
    try:
        st = os.lstat(path)
    except OSError as exc:
        return [f"{where}/{name}: cannot be inspected ({exc.strerror})"]
    if stat.S_ISLNK(st.st_mode):
        return [f"{where}/{name}: symbolic link (links are refused: they can point outside submissions/)"]
    if stat.S_ISDIR(st.st_mode):
        return [f"{where}/{name}/: sub-folders are not allowed here"]
    if not stat.S_ISREG(st.st_mode):
        return [f"{where}/{name}: not a regular file (FIFO, socket or device)"]
    if st.st_nlink > 1:
        # git cannot carry one, but a local build can: the same inode may be a file outside submissions/
        return [f"{where}/{name}: has {st.st_nlink} hard links (refused: it may be a file outside submissions/)"]
    problems = []
    suffix = os.path.splitext(path.name)[1].lower()
    if is_hidden(path.name):
        problems.append(f"{where}/{name}: hidden file")
    elif suffix in PICKLE_SUFFIXES:
        problems.append(f"{where}/{name}: '{suffix}' files can hold pickles, which are refused "
                        "(use safetensors for arrays and weights)")
    elif suffix not in ALLOWED_SUFFIXES:
        problems.append(f"{where}/{name}: file type not allowed (only {', '.join(ALLOWED_SUFFIXES)})")
    elif path.name not in allowed:
        problems.append(f"{where}/{name}: unexpected file (allowed here: {', '.join(allowed)})")
    cap = SIZE_CAPS.get(path.name)
    if cap is not None and st.st_size > cap:
        # Refused on its size alone: not one byte of it is read.
        problems.append(f"{where}/{name}: {st.st_size:,} bytes, over the {cap:,}-byte cap for {path.name}")
        return problems
    if st.st_size <= 1 << 30:  # sniffing reads 512 bytes; still, never open something absurd
        try:
            what = sniff(path)
        except OSError as exc:
            return problems + [f"{where}/{name}: cannot be read ({exc.strerror})"]
        if what:
            problems.append(f"{where}/{name}: content is {what}; refused whatever its name")
    return problems


def _root_problems(root: Path) -> list[str]:
    if os.path.islink(root):
        return [f"{show(root.name)}/ is a symbolic link (it must be a plain folder)"]
    if not os.path.isdir(root):
        return [f"{show(root.name)}/ is not a folder"]
    return []


def _folder_problems(folder: Path, kind: str, not_a_folder: str, pattern: re.Pattern, naming: str
                     ) -> tuple[str, list[str], bool]:
    """Where the folder is shown, the problems of the folder itself (a link, not a folder, hidden,
    a badly formed name), and whether its contents may be listed (not for a link or a non-folder)."""
    where = f"{show(folder.parent.name)}/{show(folder.name)}"
    if os.path.islink(folder):
        return where, [f"{where}: {kind} folder is a symbolic link (links are refused)"], False
    if not os.path.isdir(folder):
        return where, [f"{where}: {not_a_folder}"], False
    if is_hidden(folder.name):
        return where, [f"{where}: hidden folder"], True
    if not pattern.fullmatch(folder.name):
        return where, [f"{where}: {naming}"], True
    return where, [], True


def _team_problems(team_dir: Path) -> list[str]:
    where, problems, listable = _folder_problems(
        team_dir, "team", "not a folder (only team folders and README.md may sit in submissions/)", TEAM_SLUG,
        "team folder names must match [a-z0-9-] (1-40 characters, no leading or trailing hyphen): ASCII only, "
        "so no homoglyph or bidi trick can imitate another team")
    if not listable:
        return problems
    has_team_file = False
    for item in sorted(os.listdir(team_dir)):
        path = team_dir / item
        if item == TEAM_FILE:
            has_team_file = True
            problems += file_problems(path, (TEAM_FILE,), where)
        elif os.path.islink(path) or stat.S_ISDIR(os.lstat(path).st_mode):
            continue  # entry folders (and any link) are units of their own, reported there
        else:
            problems += file_problems(path, (TEAM_FILE,), where)
    if not has_team_file:
        problems.append(f"{where}/{TEAM_FILE}: missing (the team's display name and public keys)")
    return problems


# Windows drops trailing dots and refuses these device names: on such a checkout (or a site built
# there) two entries would share one folder. Each entry's site files live in a folder named by its id.
_DEVICE_NAMES = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def colliding_name(name: str) -> str | None:
    """Why an entry id could collide with another entry's (or the site's) files, or None."""
    if name.endswith(".") or ".." in name:
        return ("a trailing dot or '..' is dropped or collapsed on some file systems, so this entry could "
                "share a folder with another; rename it (the entry_id is signed: evaluate again or re-sign)")
    if name.split(".")[0] in _DEVICE_NAMES:
        return f"'{name.split('.')[0]}' is a reserved device name on Windows; it cannot be a folder there"
    return None


def _attack_problems(folder: Path) -> list[str]:
    """attack/: .py files only, importable names, no links, capped (reconbench.core.attack_source)."""
    from reconbench.core.attack_source import SourceError, collect

    try:
        collect(folder, skip_caches=False)
    except (SourceError, OSError) as exc:
        return [str(exc)]
    return []


def _entry_problems(entry_dir: Path) -> list[str]:
    where, problems, listable = _folder_problems(
        entry_dir, "entry", "not a folder", ENTRY_ID,
        "entry folder names are the entry_id: [a-z0-9][a-z0-9._-]{0,79}, ASCII only")
    if not listable:
        return problems
    clash = colliding_name(entry_dir.name)
    if clash:
        problems.append(f"{where}: {clash}")
    names = sorted(os.listdir(entry_dir))
    for item in names:
        if item == ATTACK_DIR and stat.S_ISDIR(os.lstat(entry_dir / item).st_mode):
            problems += _attack_problems(entry_dir / item)
            continue
        problems += file_problems(entry_dir / item, ENTRY_FILES, where)
    if RESULT_FILE not in names:
        problems.append(f"{where}/{RESULT_FILE}: missing")
    return problems


def _stray_problems(path: Path) -> list[str]:
    if path.name in ROOT_FILES and not os.path.islink(path):
        return file_problems(path, ROOT_FILES, show(path.parent.name))
    problems = file_problems(path, ROOT_FILES, show(path.parent.name))
    return problems or [f"{show(path.parent.name)}/{show(path.name)}: only team folders (and README.md) may sit here"]


def check(ctx: Context) -> list[Check]:
    unit = ctx.unit
    problems = _root_problems(ctx.root)
    if not problems and unit.path != ctx.root:
        if not unit.team:  # a stray file at the root
            problems = _stray_problems(unit.path)
        else:
            problems = _team_problems(ctx.team_dir)
            if unit.entry_id and not os.path.islink(ctx.team_dir):
                problems += _entry_problems(unit.path)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise CheckFailed(problems[0] + more, problems)
    if not unit.entry_id:
        return [Check("structure", "pass", "team folder: team.toml only, no stray files")]
    files = sorted(os.listdir(unit.path))
    return [Check("structure", "pass", f"files: {', '.join(files)} (all within their size caps, none pickled)")]
