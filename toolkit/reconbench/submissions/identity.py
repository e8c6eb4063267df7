"""Look-alike identities: team slugs and display names are compared by a confusable key.

A reader tells teams apart by how their names look, so two teams whose slug or display name look the
same are one identity to a reader, whoever came first. The key of a text is built from:

1. Unicode TR39 section 4 skeletons: NFD, each character replaced by its prototype in the Unicode
   confusables table (confusables.txt, "MA" data), NFD again. This maps the digit 1, capital I and
   '|' to 'l', the digit 0 to 'O', Cyrillic 'а' to 'a', 'm' to 'rn', and thousands more homoglyphs.
   The table ships beside this module as confusables.json: the source -> prototype pairs of
   confusables.txt (version and date in its "_source" entry), written by `main` below from the file
   Unicode publishes, so a maintainer can update it (`python -m reconbench.submissions.identity
   confusables.txt > confusables.json`).
2. NFKD compatibility folding (fullwidth and mathematical letters, ligatures) and case folding.
3. Stricter than TR39, because a name is read at a glance: combining marks (accents) and default
   ignorable / format characters are dropped, and so is everything that is not a letter or a digit
   (spaces, hyphens, underscores, dots, punctuation): "ReconBench baselines", "reconbench-baselines"
   and "Recon-Bench_Baselines" are one identity.

Besides the clash between two names, a name on its own must be one a reader can see whole (UTS #39's
General Security Profile, section 3.1, and its mixed-script rule, section 5; `profile_problems`): no
default-ignorable or invisible code point (the Hangul filler U+3164, zero-width joiners), every letter
and digit of Identifier_Status=Allowed (which leaves out obsolete and technical letters such as the
tone letter U+0185 that passes for a b), ASCII spaces and punctuation beside them, and one script, or
Latin with Han and Japanese kana, Bopomofo or Hangul (the Highly Restrictive level, section 5.2).
Both tables (confusables.json, identifier_profile.json) are generated from the UTS #39 data ICU ships
by scripts/make_identity_tables.py, never typed by hand.

Skeleton, compatibility folding and case folding do not commute (capital I is l by the table but i
by case folding; the long s is f by the table but s by NFKD), so a text has two keys: skeleton, NFKD,
fold, and NFKD, fold, skeleton, each repeated until the text no longer changes, then letters and
digits kept; two texts clash when any key of one is a key of the other. Checked in the tests: for
every row of the table whose source is NFD-stable, source and prototype share a key.
"""

from __future__ import annotations

import functools
import json
import sys
import unicodedata
from pathlib import Path

TABLE = Path(__file__).with_name("confusables.json")
PROFILE = Path(__file__).with_name("identifier_profile.json")
ASCII_EXTRA = frozenset(" !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")  # beside Allowed letters and digits in a display name
# UTS #39 section 5.2, Highly Restrictive: one script, or Latin with one of these (Japanese, Chinese, Korean)
HIGHLY_RESTRICTIVE = (frozenset({"Latn", "Hani", "Hira", "Kana"}), frozenset({"Latn", "Hani", "Bopo"}),
                      frozenset({"Latn", "Hani", "Hang"}))
MAX_ROUNDS = 4  # prototypes are themselves skeleton-stable in TR39; a few rounds cover folding's new characters


@functools.lru_cache(maxsize=1)
def _table() -> dict[str, str]:
    data = json.loads(TABLE.read_text(encoding="utf-8"))
    return {chr(int(k, 16)): "".join(chr(int(c, 16)) for c in v.split()) for k, v in data.items() if not k.startswith("_")}


def skeleton(text: str) -> str:
    """The TR39 skeleton: NFD, prototype of each character, NFD."""
    table = _table()
    return unicodedata.normalize("NFD", "".join(table.get(c, c) for c in unicodedata.normalize("NFD", text)))


def _nfkd(text: str) -> str:
    return unicodedata.normalize("NFKD", text)


def _clean(text: str) -> str:
    """Letters and digits only: no marks, format or ignorable characters, spaces or punctuation."""
    return "".join(c for c in text if unicodedata.category(c)[0] in "LN")


def _fixpoint(text: str, steps) -> str:
    for _ in range(MAX_ROUNDS):
        before = text
        for step in steps:
            text = step(text)
        if text == before:
            break
    return text


def identity_keys(text: str) -> frozenset[str]:
    """The comparison keys of a slug or display name (see the module docstring). The skeleton runs on the
    whole text before anything is dropped: '|' and the multiplication sign are letters' homoglyphs."""
    fold = str.casefold
    return frozenset({_clean(_fixpoint(text, (skeleton, _nfkd, fold))), _clean(_fixpoint(text, (_nfkd, fold, skeleton)))})


def confusable(a: str, b: str) -> bool:
    return bool(identity_keys(a) & identity_keys(b))


class _Ranges:
    """A set of code points given as sorted [first, last] ranges."""

    def __init__(self, ranges: list[list[int]]):
        self.starts = [lo for lo, _ in ranges]
        self.ends = [hi for _, hi in ranges]

    def __contains__(self, c: str) -> bool:
        import bisect

        i = bisect.bisect_right(self.starts, ord(c)) - 1
        return i >= 0 and ord(c) <= self.ends[i]


@functools.lru_cache(maxsize=1)
def _profile() -> tuple[_Ranges, _Ranges, dict[str, _Ranges]]:
    data = json.loads(PROFILE.read_text(encoding="utf-8"))
    return (_Ranges(data["allowed"]), _Ranges(data["default_ignorable"]),
            {name: _Ranges(r) for name, r in data["script_extensions"].items()})


def _scripts(c: str) -> frozenset[str] | None:
    """Script_Extensions of an Allowed character; None for Common and Inherited (they go with any script)."""
    found = frozenset(name for name, ranges in _profile()[2].items() if c in ranges)
    return None if not found or found & {"Zyyy", "Zinh"} else found


def hidden(c: str) -> bool:
    """A character a reader cannot see or tell apart: default-ignorable, or not Allowed (and not ASCII)."""
    allowed, ignorable, _ = _profile()
    return c in ignorable or (c not in allowed and c not in ASCII_EXTRA)


def profile_problems(text: str) -> list[str]:
    """Why a display name (or slug) is not one a reader can see whole: see the module docstring."""
    allowed, ignorable, _ = _profile()
    problems = []
    invisible = sorted({c for c in text if c in ignorable or unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")})
    if invisible:
        problems.append("contains invisible or default-ignorable characters: "
                        + ", ".join(f"U+{ord(c):04X}" for c in invisible))
    odd = sorted({c for c in text if c not in invisible and c not in allowed and c not in ASCII_EXTRA})
    if odd:
        problems.append("contains characters outside UTS #39's identifier profile (Identifier_Status=Allowed): "
                        + ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, '')}".rstrip() for c in odd))
    sets = [found for c in text if c in allowed and (found := _scripts(c))]
    if sets and not frozenset.intersection(*sets) and not any(all(s & allowed_mix for s in sets)
                                                              for allowed_mix in HIGHLY_RESTRICTIVE):
        names = sorted(set().union(*sets))
        problems.append(f"mixes scripts ({', '.join(names)}): one script, or Latin with Han and kana, Bopomofo or "
                        "Hangul (UTS #39, Highly Restrictive)")
    return problems


def shown(text: str) -> str:
    """A name as the board prints it: what a reader could not see whole (hidden) escaped as \\uXXXX."""
    return "".join(f"\\u{ord(c):04x}" if hidden(c) or unicodedata.category(c) in ("Cc", "Cf") else c for c in str(text))


def parse_confusables_txt(text: str) -> dict[str, str]:
    """confusables.txt (Unicode's format: `source ; prototype ; MA # comment`) -> {source hex: prototype hex}."""
    table: dict[str, str] = {}
    header = []
    for line in text.lstrip("\ufeff").splitlines():
        if line.startswith("#"):
            if line.startswith(("# Version:", "# Date:", "# confusables.txt", "# ©", "# For terms of use")):
                header.append(line[2:].strip())
            continue
        data = line.split("#", 1)[0].strip()
        if not data:
            continue
        fields = [f.strip() for f in data.split(";")]
        if len(fields) < 3 or fields[2] != "MA":
            raise ValueError(f"unexpected line in confusables.txt: {line[:80]!r}")
        table[fields[0]] = fields[1]
    if not table:
        raise ValueError("no mappings found: not Unicode's confusables.txt")
    return {"_source": "Unicode confusables.txt (UTS #39): " + "; ".join(header), **table}


def main(argv: list[str] | None = None) -> int:
    """python -m reconbench.submissions.identity CONFUSABLES_TXT  > confusables.json"""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write(main.__doc__ + "\n")
        return 2
    table = parse_confusables_txt(Path(args[0]).read_text(encoding="utf-8"))
    sys.stdout.write(json.dumps(table, indent=0, sort_keys=True, ensure_ascii=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
