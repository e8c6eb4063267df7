"""Generate the identity check's Unicode tables from the UTS #39 data ICU ships (PyICU's wheel,
`pip install pyicu-wheels==2.15.2`: ICU 77.1, Unicode 16.0), never by hand:

- toolkit/reconbench/submissions/confusables.json: the TR39 skeleton of every assigned, NFD-stable
  code point whose skeleton is not itself (ICU's confusables data: the complete table, not a subset);
- toolkit/reconbench/submissions/identifier_profile.json: the code points with Identifier_Status=Allowed
  (UTS #39 section 3.1, the General Security Profile), their Script_Extensions (for the mixed-script
  rule, section 5), and the Default_Ignorable_Code_Point set, each as [first, last] ranges.

    python scripts/make_identity_tables.py [--check]

--check compares with the shipped files instead of writing them (tests/test_identity_profile.py runs it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[1] / "toolkit" / "reconbench" / "submissions"
CONFUSABLES = FOLDER / "confusables.json"
PROFILE = FOLDER / "identifier_profile.json"


def _ranges(uset) -> list[list[int]]:
    def cp(value) -> int:  # PyICU answers a code point as a one-character string
        return value if isinstance(value, int) else ord(value)

    return [[cp(uset.getRangeStart(i)), cp(uset.getRangeEnd(i))] for i in range(uset.getRangeCount())]


def tables() -> dict[Path, str]:
    import icu

    source = f"Unicode {icu.UNICODE_VERSION} UTS #39 data (Version: {icu.UNICODE_VERSION}) as ICU {icu.ICU_VERSION} ships it"
    checker, nfd = icu.SpoofChecker(), icu.Normalizer2.getNFDInstance()
    confusables = {"_source": f"{source}: TR39 skeleton of each NFD-stable code point (scripts/make_identity_tables.py)"}
    assigned = icu.UnicodeSet("[[:^Cn:]&[:^Cs:]&[:^Co:]]")
    for lo, hi in _ranges(assigned):
        for cp in range(lo, hi + 1):
            c = chr(cp)
            if nfd.normalize(c) != c:
                continue  # never looked up: TR39 maps the NFD form
            skeleton = checker.getSkeleton(0, c)
            if skeleton != c:
                confusables[f"{cp:04X}"] = " ".join(f"{ord(x):04X}" for x in skeleton)
    allowed = icu.UnicodeSet("[:Identifier_Status=Allowed:]")
    scripts: dict[str, list[int]] = {}
    for lo, hi in _ranges(allowed):
        for cp in range(lo, hi + 1):
            for code in icu.Script.getScriptExtensions(cp):
                scripts.setdefault(icu.Script(code).getShortName(), []).append(cp)
    profile = {
        "_source": f"{source}: Identifier_Status=Allowed, Script_Extensions, Default_Ignorable_Code_Point "
                   "(scripts/make_identity_tables.py)",
        "allowed": _ranges(allowed),
        "default_ignorable": _ranges(icu.UnicodeSet("[:Default_Ignorable_Code_Point:]")),
        "script_extensions": {name: _runs(cps) for name, cps in sorted(scripts.items())},
    }
    return {CONFUSABLES: json.dumps(confusables, indent=0, sort_keys=True, ensure_ascii=True) + "\n",
            PROFILE: json.dumps(profile, separators=(",", ":"), sort_keys=True) + "\n"}


def _runs(cps: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for cp in sorted(cps):
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return out


def main(argv: list[str]) -> int:
    made = tables()
    if "--check" in argv:
        stale = [str(p) for p, text in made.items() if p.read_text(encoding="utf-8") != text]
        print("stale: " + ", ".join(stale) if stale else "up to date")
        return 1 if stale else 0
    for path, text in made.items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path} ({len(text):,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
