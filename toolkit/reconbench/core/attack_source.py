"""The source of a bring-your-own attack (`path/to/file.py:ClassName`): which files, and their hash.

The source is the attack file and the modules it imports from beside it (modules and packages in its
folder, found by reading the imports with `ast`, transitively), so an attack may be split into
modules, and a file saved anywhere (in a checkout, beside hundreds of other files) ships only what
it uses. An import made some other way (importlib, __import__) is not followed: in the sandbox only
the shipped files exist. `evaluate` hashes the source before the attack runs and signs the hash
(payload.attack.source_sha256) and copies the files into the result folder's `attack/`; `submit`
carries them into the entry; `reproduce` re-runs exactly those files, and validation checks that
the entry's `attack/` hashes to the signed value. So the code that is re-run is the signed code.

Caps keep an entry reviewable and small in git (the attack folder is read by people), and the total
cap is the guard against carried data (issue 43): a data set packed in any way (strings, comments, hex
integers, split over modules) needs room in proportion to its images, and 256 KiB is far below a
dataset or a sealed block while far above what an attack's code needs. submissions/attackdata.py's literal rule only names the
usual packing in a friendly message; the cap holds whatever the packing. It is checked on the bytes
read (read_files), wherever a source is hashed, recorded, copied into an entry or into the sandbox.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from reconbench.core import untrusted

ATTACK_DIR = "attack"  # the folder in a result folder and in an entry
MAX_FILES = 32
MAX_FILE_BYTES = 128 * 1024
MAX_TOTAL_BYTES = 256 * 1024  # all files together (module docstring)
MAX_DEPTH = 3
PART = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")  # importable module and package names only
SKIPPED = ("__pycache__",)


class SourceError(Exception):
    """An attack source that cannot be shipped: the message names the file and the problem. The file's
    name is the contributor's (an entry's attack/ folder is a pull request's): the message is made
    inert (reconbench.core.untrusted), so a name holding a newline, a workflow command or a terminal
    escape prints as text in validate's CI log."""

    def __init__(self, message: str):
        super().__init__(untrusted.line(message))


HOW = ("Import a large library as an installed package (pip install), not as files beside the attack; data "
       "carried in the source buys nothing (docs/sandbox.md)")


def too_large(where: Path | str, files: int, total: int, last: Path | str | None = None) -> SourceError:
    """One message naming the source, the file that crossed a cap, and the sizes."""
    crossed = f" ({last} brought it to {total:,} bytes in {files} files)" if last is not None else ""
    if files > MAX_FILES:
        return SourceError(f"{where}: the attack source has {files} .py files, over the cap of {MAX_FILES}{crossed}. {HOW}")
    return SourceError(f"{where}: the attack source is {total:,} bytes in {files} files, over the {MAX_TOTAL_BYTES:,}-byte "
                       f"cap on all its files together{crossed}. {HOW}")


@dataclass(frozen=True)
class AttackSource:
    root: Path
    files: tuple[tuple[str, Path], ...]  # (path relative to root, with '/', file on disk), sorted
    entry_file: str  # the file named in the spec, relative to root
    sha256: str


def source_sha256(files: list[tuple[str, bytes]]) -> str:
    """sha256 of the manifest 'relative/path\\0sha256(content)\\n', lines sorted by path."""
    lines = sorted(f"{rel}\0{hashlib.sha256(data).hexdigest()}\n" for rel, data in files)
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def _check_file(path: Path, st: os.stat_result) -> None:
    if st.st_nlink > 1:
        raise SourceError(f"{path}: file with more than one hard link (refused)")
    if st.st_size > MAX_FILE_BYTES:
        raise SourceError(f"{path}: {st.st_size:,} bytes, over the {MAX_FILE_BYTES:,}-byte cap for one attack file")


def collect(root: Path, *, skip_caches: bool) -> list[tuple[str, Path]]:
    """Every .py file under root, checked against the rules; SourceError on the first problem."""
    found: list[tuple[str, Path]] = []
    total = 0

    def walk(folder: Path, rel: str, depth: int) -> None:
        nonlocal total
        for name in sorted(os.listdir(folder)):
            path, where = folder / name, f"{rel}{name}"
            st = os.lstat(path)
            if stat.S_ISDIR(st.st_mode) and name in SKIPPED and skip_caches:
                continue
            if stat.S_ISLNK(st.st_mode):
                raise SourceError(f"{path}: symbolic link in the attack source (refused)")
            if stat.S_ISDIR(st.st_mode):
                if not skip_caches or PART.fullmatch(name):
                    if not PART.fullmatch(name) or depth >= MAX_DEPTH:
                        raise SourceError(f"{path}: folder not allowed in the attack source (importable names, depth <= {MAX_DEPTH})")
                    walk(path, where + "/", depth + 1)
                continue
            if not name.endswith(".py") or not PART.fullmatch(name[:-3]) or not stat.S_ISREG(st.st_mode):
                if skip_caches:
                    continue  # the user's folder may hold other files; only .py files are the source
                raise SourceError(f"{path}: only .py files with importable names may be in {ATTACK_DIR}/")
            _check_file(path, st)
            total += st.st_size
            found.append((where, path))
            if len(found) > MAX_FILES or total > MAX_TOTAL_BYTES:
                raise too_large(root, len(found), total, path)

    walk(root, "", 0)
    return found


def read_files(files: list[tuple[str, Path]] | tuple[tuple[str, Path], ...]) -> list[tuple[str, bytes]]:
    """The files' bytes, capped on what is read: a file that grew after it was listed (its size was
    checked by lstat) is caught here, where the bytes are hashed and copied."""
    out, total = [], 0
    for rel, path in files:
        data = path.read_bytes()
        total += len(data)
        if len(data) > MAX_FILE_BYTES:
            raise SourceError(f"{path}: {len(data):,} bytes, over the {MAX_FILE_BYTES:,}-byte cap for one attack file")
        if total > MAX_TOTAL_BYTES:
            raise too_large(path.parent, len(out) + 1, total, path)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise SourceError(f"{path}: not UTF-8 text") from None
        out.append((rel, data))
    return out


def _checked(root: Path, rel: str) -> Path:
    """root/rel as a source file: no link on the way, one hard link, under the size cap."""
    path = root
    for part in rel.split("/"):
        path = path / part
        if os.path.islink(path):
            raise SourceError(f"{path}: symbolic link in the attack source (refused)")
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise SourceError(f"{path}: not a regular file")
    _check_file(path, st)
    return path


def _module_files(root: Path, parts: list[str]) -> list[str]:
    """The files beside the attack that importing the dotted name `parts` runs, as Python finds them
    with the attack's folder first on sys.path: each package's __init__.py, then the module itself."""
    found: list[str] = []
    for depth in range(1, len(parts) + 1):
        if not PART.fullmatch(parts[depth - 1]) or depth > MAX_DEPTH + 1:
            break
        rel = "/".join(parts[:depth])
        if os.path.isfile(root / rel / "__init__.py"):  # a package wins over a module of the same name
            found.append(f"{rel}/__init__.py")
        elif os.path.isfile(root / f"{rel}.py"):
            found.append(f"{rel}.py")
            break  # a module has no submodules
        elif not os.path.isdir(root / rel):  # not beside the attack (a namespace folder goes on)
            break
    return found


def _imported(tree: ast.AST, rel: str) -> list[list[str]]:
    """The dotted names a module's imports may load (anywhere in it: functions too), as lists of parts;
    `from a import b` also names a.b (b may be a submodule). Relative imports count from rel's folder."""
    names: list[list[str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name.split(".") for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base: list[str] = []
            if node.level:
                folder = rel.split("/")[:-1]
                if node.level - 1 > len(folder):
                    continue
                base = folder[:len(folder) - (node.level - 1)]
            module = base + (node.module.split(".") if node.module else [])
            if module:
                names.append(module)
            names += [module + [alias.name] for alias in node.names if alias.name != "*"]
    return names


def imported_source(root: Path, entry: str) -> list[tuple[str, Path]]:
    """The entry file and every module beside it that it imports, transitively; sorted, capped."""
    todo, seen, total = [entry], {}, 0
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        path = _checked(root, rel)
        seen[rel] = path
        total += os.lstat(path).st_size
        if len(seen) > MAX_FILES or total > MAX_TOTAL_BYTES:
            raise too_large(root / entry, len(seen), total, path)
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except SyntaxError as exc:  # the user's own file and line, before anything runs
            raise SourceError(f"{path}:{exc.lineno}: SyntaxError: {exc.msg}") from None
        except ValueError as exc:  # NUL bytes
            raise SourceError(f"{path}: not Python source ({exc})") from None
        except (RecursionError, MemoryError):  # the parser's own stack check (`x = ----...1`, `1+1+...`)
            raise SourceError(f"{path}: nested too deeply for Python's parser to read (an expression of "
                              "thousands of nested operators)") from None
        for parts in _imported(tree, rel):
            todo += [f for f in _module_files(root, parts) if f not in seen]
    return sorted(seen.items())


def attack_source(spec: str) -> AttackSource | None:
    """The source of a `file.py:Class` attack (None for a registered attack: its code is the toolkit's)."""
    if ":" not in spec:
        return None
    file = Path(spec.rsplit(":", 1)[0])
    if not file.is_file():
        return None  # load_attack reports the missing file with its own message
    root = file.resolve().parent
    entry = file.resolve().relative_to(root).as_posix()
    if not entry.endswith(".py") or not PART.fullmatch(entry[:-3]):
        raise SourceError(f"{file}: the attack file must be a .py file with an importable name")
    files = imported_source(root, entry)
    return AttackSource(root=root, files=tuple(files), entry_file=entry, sha256=source_sha256(read_files(files)))


def folder_sha256(folder: Path) -> str:
    """The hash of an entry's (or result folder's) attack/ folder, checked against the rules."""
    return source_sha256(read_files(collect(folder, skip_caches=False)))


def is_file_attack(code: str) -> bool:
    """A payload's attack.code names a bring-your-own file (file.py:Class), not module:Class."""
    return code.rpartition(":")[0].endswith(".py")


LABEL_CAP = 40


def own_attack_label(code: str, name: str, team: str | None = None) -> str:
    """How a bring-your-own attack is named on the board and in the CLI: its class name (file.py:Class),
    marked as the contributor's own (issue 45: "own attack" alone told a reader nothing)."""
    cls = code.rpartition(":")[2].strip() or name
    cls = cls if len(cls) <= LABEL_CAP else cls[:LABEL_CAP - 1] + "…"  # a signed string of any length: one board cell
    return f"{cls} ({team}'s own attack)" if team else f"{cls} (own attack)"


def source_problem(folder: Path, signed: str) -> str | None:
    """Why `folder` is not the signed attack source (missing, breaks the rules, other hash); None if it is."""
    if not os.path.isdir(folder) or os.path.islink(folder):
        return f"{folder}: missing; the payload signs an attack source ({signed[:12]}…)"
    try:
        actual = folder_sha256(folder)
    except (SourceError, OSError) as exc:
        return str(exc)
    if actual != signed:
        return (f"{folder}: hashes to {actual[:12]}…, the signed payload says {signed[:12]}…: "
                "the attack source is not the signed one (changed after signing)")
    return None


def copy_source(files, dest: Path) -> None:
    """Write the source files under dest (dest is created; it is inside an atomic folder)."""
    for rel, data in read_files(files):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
