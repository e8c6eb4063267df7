"""Data carried in an attack's code: what a reviewer looks for before approving a reproduction,
checked on every validate (checks/reproduction.py refuses an entry whose attack/ has it).

A reproduction proves that the code makes the bytes; it cannot prove where the code's knowledge
came from. The target set of a public dataset drawn with a public seed can be computed before
submission and pasted into the attack (issue 33: such a file ranked #1 as reproduced on digits).
attack/ holds .py files only (core/attack_source.py), so carried data is a literal in Python source:
a long string or bytes literal (base64, hex, a compressed array), many of them, or a long run of
numbers in list/tuple/set displays. The limits sit far above what an attack's code needs (its
options, a few class names, a docstring) and far below a target set: digits' 500 targets are
32,000 numbers, one Fashion-MNIST image is 1,024.
"""

from __future__ import annotations

import ast
from pathlib import Path

MAX_LITERAL_BYTES = 4096  # one str/bytes constant
MAX_LITERAL_TOTAL = 16384  # all str/bytes constants of 256 bytes or more in one file
LONG = 256
MAX_NUMBERS = 1024  # numeric constants inside list/tuple/set/dict displays of one file


def file_problems(path: Path, source: str) -> list[str]:
    try:
        tree = ast.parse(source, filename=str(path))
    except (SyntaxError, ValueError) as exc:
        return [f"{path.name}: does not parse as Python ({exc.__class__.__name__}), so it cannot be reviewed"]
    problems, long_total, numbers = [], 0, 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            size = len(node.value.encode("utf-8", "surrogatepass") if isinstance(node.value, str) else node.value)
            if size > MAX_LITERAL_BYTES:
                problems.append(f"{path.name}:{node.lineno}: a {size:,}-byte literal (over {MAX_LITERAL_BYTES:,})")
            if size >= LONG:
                long_total += size
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            items = node.values if isinstance(node, ast.Dict) else node.elts
            numbers += sum(1 for e in items if isinstance(e, ast.Constant) and isinstance(e.value, (int, float, complex))
                           and not isinstance(e.value, bool))
    if long_total > MAX_LITERAL_TOTAL:
        problems.append(f"{path.name}: {long_total:,} bytes in long literals (over {MAX_LITERAL_TOTAL:,})")
    if numbers > MAX_NUMBERS:
        problems.append(f"{path.name}: {numbers:,} numbers in list/tuple/set/dict displays (over {MAX_NUMBERS:,})")
    return problems


def data_problems(folder: Path) -> list[str]:
    """What in attack/ looks like carried data (module docstring); [] when nothing does."""
    out = []
    for path in sorted(Path(folder).rglob("*")):
        if path.is_file() and not path.is_symlink():
            if path.suffix != ".py":
                out.append(f"{path.name}: a data file (attack/ holds .py files only)")
                continue
            out += file_problems(path, path.read_text(encoding="utf-8", errors="replace"))
    return out
