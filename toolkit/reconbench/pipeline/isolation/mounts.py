"""What the attack's sandbox sees: bubblewrap mount arguments for a read-only view of the interpreter
and the installed libraries, and nothing else of the host (reconbench.pipeline.isolation.sandbox runs it).

Seen, read-only: /usr (the system's libraries and, on Debian, the interpreter), the interpreter's
prefixes (a venv and the Python it was made from, e.g. under ~/.pyenv), the library folders on
sys.path, and the toolkit's own package code. Hidden inside those: every file of the toolkit package
that is not code (its registry, the embedded tracks' weights, templates), every folder of an
installed library that holds data sets (scikit-learn's digits CSV, gensim's test corpora, ...:
`dataset_hides`), site-packages folders that are not on sys.path, the system's data sets
(/usr/share/datasets), and any cache, key or home folder that happens to lie inside a bound folder.
Not seen at all: home, /etc, /var, /run, /srv, /opt, /mnt, /work, the project's checkout, the
current folder. /tmp is a private, empty tmpfs; /proc belongs to the sandbox's own PID namespace.
A bound folder that lies under /tmp (a checkout and its venv cloned there) gets its top folder under
/tmp as a read-only skeleton (`tmp_skeletons`): the checkout's other files stay unseen, and the
mount points bubblewrap makes there are not a writable copy of the host's path.
"""

from __future__ import annotations

import glob
import os
import sys
import sysconfig
from functools import lru_cache
from pathlib import Path

# Suffixes of code: kept visible in folders whose data files are hidden.
CODE_SUFFIXES = (".py", ".pyc", ".pyi", ".so", ".pxd", ".pyx", ".typed", ".h", ".hpp", ".dll", ".dylib")
# Folder names under which libraries keep data sets and sample data (scikit-learn's datasets/data,
# gensim's test/test_data, scikit-image's data, matplotlib's sample_data, plotly's package_data/datasets).
DATA_FOLDER_NAMES = {"data", "datasets", "test_data", "testdata", "sample_data", "images", "descr"}
DATA_SCAN_DEPTH = 4  # site-packages/<pkg>/<sub>/<sub>/<data folder>
SYSTEM_DATASETS = ("/usr/share/datasets", "/usr/local/share/datasets")  # Debian's dataset-* packages
MERGED_USR = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def _is_code(name: str) -> bool:
    return name.endswith(CODE_SUFFIXES) or ".so." in name


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _outermost(paths) -> list[str]:
    """The given folders without those inside another one of them, sorted."""
    out: list[str] = []
    for p in sorted(set(paths)):
        if not any(_within(p, o) for o in out):
            out.append(p)
    return out


def python_roots() -> list[str]:
    """The interpreter's prefixes and the library folders on sys.path (outside /usr)."""
    roots = {os.path.realpath(p) for p in (sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix)}
    roots.add(os.path.dirname(os.path.realpath(sys.executable)))
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        roots.add(os.path.realpath(sysconfig.get_paths()[key]))
    for entry in sys.path:
        real = os.path.realpath(entry) if entry else ""
        if entry and (real.endswith((".zip", "lib-dynload")) or os.path.basename(real) in ("site-packages", "dist-packages")):
            roots.add(real)
    return [r for r in _outermost(roots) if not _within(r, "/usr") and os.path.exists(r)]


def library_folders(roots: list[str]) -> list[str]:
    """Every site-/dist-packages folder inside the bound roots (on sys.path or not)."""
    found = set()
    for root in roots:
        for pattern in ("lib/python3*/site-packages", "lib/python3*/dist-packages", "lib/python3/dist-packages",
                        "lib64/python3*/site-packages", "local/lib/python3*/site-packages",
                        "local/lib/python3*/dist-packages"):
            found.update(os.path.realpath(p) for p in glob.glob(os.path.join(root, pattern)))
        if os.path.basename(root) in ("site-packages", "dist-packages"):
            found.add(root)
    return sorted(found)


def _hide_data_in(folder: str, args: list[str]) -> None:
    """Hide every non-code file under `folder`: a sub-folder with no code at all is replaced by an
    empty one; elsewhere each data file is covered by /dev/null (the code beside it stays importable)."""
    has_code: dict[str, bool] = {}
    for dirpath, dirnames, filenames in os.walk(folder, topdown=False):
        has_code[dirpath] = any(map(_is_code, filenames)) or any(has_code.get(os.path.join(dirpath, d), False)
                                                                 for d in dirnames)
    for dirpath, dirnames, filenames in os.walk(folder):
        if not has_code.get(dirpath, True):
            args += ["--tmpfs", dirpath, "--remount-ro", dirpath]
            dirnames.clear()
            continue
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            path = os.path.join(dirpath, name)
            if not _is_code(name) and os.path.isfile(path) and not os.path.islink(path):
                args += ["--ro-bind", "/dev/null", path]


def _data_folders(library: str) -> list[str]:
    """Folders named like data-set folders, up to DATA_SCAN_DEPTH below a site-packages folder."""
    out: list[str] = []

    def walk(folder: str, depth: int) -> None:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return
        for e in entries:
            if not e.is_dir(follow_symlinks=False) or e.name.startswith(".") or e.name in ("__pycache__", "include"):
                continue
            if e.name in DATA_FOLDER_NAMES:
                out.append(e.path)
            elif depth < DATA_SCAN_DEPTH:
                walk(e.path, depth + 1)

    walk(library, 1)
    return out


@lru_cache(maxsize=8)
def _library_args(roots: tuple[str, ...], on_path: tuple[str, ...]) -> tuple[str, ...]:
    args: list[str] = []
    for library in library_folders(list(roots)):
        if library not in on_path:  # e.g. the base interpreter's site-packages under a venv: not importable
            args += ["--tmpfs", library, "--remount-ro", library]
            continue
        for folder in _data_folders(library):
            _hide_data_in(folder, args)
    return tuple(args)


def dataset_hides(roots: list[str]) -> list[str]:
    """Arguments hiding the data sets of the installed libraries and of the system."""
    on_path = tuple(sorted(os.path.realpath(p) for p in sys.path if p))
    args = list(_library_args(tuple(roots + ["/usr"]), on_path))
    for folder in SYSTEM_DATASETS:
        if os.path.isdir(folder):
            args += ["--tmpfs", folder, "--remount-ro", folder]
    return args


def package_args(package: Path) -> list[str]:
    """The toolkit package read-only, without its data: registry, embedded weights, templates."""
    pkg = str(package.resolve())
    args = ["--ro-bind", pkg, pkg]
    _hide_data_in(pkg, args)
    return args


def private_hides(bound: list[str], secrets: list[str]) -> list[str]:
    """Folders that must never be seen (home, caches, keys) but lie inside a bound folder."""
    args = []
    for path in _outermost(os.path.realpath(p) for p in secrets if p):
        if any(_within(path, b) and path != b for b in bound) and os.path.isdir(path):
            args += ["--tmpfs", path, "--remount-ro", path]
        elif any(_within(path, b) for b in bound) and os.path.isfile(path):
            args += ["--ro-bind", "/dev/null", path]
    return args


def system_args(tmp_bytes: int, shm_bytes: int) -> list[str]:
    """/usr read-only, the merged-/usr links (or the folders themselves on older systems), a minimal
    /dev with a /dev/shm of `shm_bytes` (the rest of /dev is made read-only at the end: `dev_seal`),
    the sandbox's own /proc, a private /tmp of `tmp_bytes` (bubblewrap 0.7+: --size)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for path in MERGED_USR:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args + ["--dev", "/dev", "--size", str(shm_bytes), "--tmpfs", "/dev/shm", "--proc", "/proc",
                   "--size", str(tmp_bytes), "--tmpfs", "/tmp"]


# After every mount point inside /dev exists (a GPU's nodes): /dev itself read-only, so the only
# writable memory-backed folders are the sized /tmp and /dev/shm.
DEV_SEAL = ["--remount-ro", "/dev"]


def tmp_skeletons(bound: list[str], writable: list[str]) -> tuple[list[str], list[str]]:
    """For bound folders under /tmp: (arguments before the binds, arguments after every bind).

    bubblewrap makes a bind's missing parents as plain folders on the private /tmp, which the attack
    could write into (a file in `/tmp/<checkout>` looks like the host's checkout from inside). Each
    such top folder becomes an empty tmpfs before the binds and is made read-only after them; the
    binds inside keep their own flags. A writable folder that is itself such a top is left as it is."""
    tops = sorted({"/tmp/" + os.path.relpath(p, "/tmp").split("/")[0] for p in map(os.path.realpath, bound)
                   if _within(p, "/tmp") and p != "/tmp"} - {os.path.realpath(w) for w in writable})
    return [a for top in tops for a in ("--tmpfs", top)], [a for top in tops for a in ("--remount-ro", top)]
