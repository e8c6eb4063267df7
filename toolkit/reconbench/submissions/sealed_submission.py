"""A sealed submission: the attack the board runs on every draw of a sealed twin (issue 43, item 1).

On a sealed twin of a v2 season the draws' models are encrypted and their pools secret, so a contributor
cannot run there: the submission is the attack itself, and the board runs it (`recon-submit seal run`).

    sealed-submissions/<season>/<team>/<run>/submission.toml
    sealed-submissions/<season>/<team>/<run>/attack/        (an own attack only: its .py files)

    twin = "fashion-n100-sealed-s2"          # the sealed twin: its every draw is run
    scenario = "static/white-box/none"       # one of the twin's cells
    budget = "quick"                         # quick | default | paper
    seed = 0

    [attack]
    name = "mi-face"                         # a registered attack (`recon-submit attacks`), or:
    # file = "my_attack.py"                  #   an own attack: this file of attack/ beside submission.toml
    # class = "MyAttack"                     #   and its Attack class

    [options]                                # the attack's options (as --set name=value)
    iterations = 200

Parsed strictly, before anything runs: an unknown key, a name that is not a plain slug, a link or a
folder trick on the way, an oversize file, an own attack folder that holds anything but the .py files its
attack imports, or one over core/attack_source's caps (256 KiB for all files together), each is one
SealedSubmissionError naming the file. The season, team and run are the folder names: the path is the
record's identity, so a submission cannot claim another team's runs.
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconbench.core import untrusted

SUBMISSIONS_DIR = "sealed-submissions"
SUBMISSION_FILE = "submission.toml"
ATTACK_DIR = "attack"
MAX_TOML_BYTES = 16 * 1024
MAX_OPTIONS = 32
MAX_OPTION_CHARS = 4096  # all options together, as text: an option is a setting, not a place to carry data
SLUG = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?")  # the team slug of submissions/layout.py
SEASON = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?")
CLASS = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
FILE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\.py")
BUDGETS = ("quick", "default", "paper")
TOP_KEYS = {"twin", "scenario", "budget", "seed", "attack", "options"}
ATTACK_KEYS = ({"name"}, {"file", "class"})


class SealedSubmissionError(Exception):
    """A sealed submission that cannot be run: one line naming the file and the problem (made inert: the
    names in it are a pull request's)."""

    def __init__(self, message: str):
        super().__init__(untrusted.line(message))


@dataclass(frozen=True)
class SealedSubmission:
    path: Path  # the submission.toml
    season: str
    team: str
    run: str
    twin: str
    scenario: str
    budget: str
    seed: int
    name: str  # a registered attack's name, or the own attack's class
    attack_file: Path | None = None  # an own attack: its entry file inside attack/
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def own(self) -> bool:
        return self.attack_file is not None

    @property
    def spec(self) -> str:
        """What evaluate takes: the registered name, or path/to/attack/file.py:Class."""
        return f"{self.attack_file}:{self.name}" if self.attack_file is not None else self.name


def _fail(path: Path, why: str) -> SealedSubmissionError:
    return SealedSubmissionError(f"{path}: {why}")


def _read(path: Path) -> dict:
    try:
        st = os.lstat(path)
    except OSError:
        raise _fail(path, "no such file") from None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
        raise _fail(path, "not a regular file (links are refused)")
    if st.st_size > MAX_TOML_BYTES:
        raise _fail(path, f"{st.st_size:,} bytes, over the {MAX_TOML_BYTES:,}-byte cap of a sealed submission")
    data = path.read_bytes()[: MAX_TOML_BYTES + 1]
    if len(data) > MAX_TOML_BYTES:
        raise _fail(path, f"over the {MAX_TOML_BYTES:,}-byte cap of a sealed submission")
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise _fail(path, "not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise _fail(path, f"not valid TOML ({exc})") from None


def _identity(path: Path) -> tuple[str, str, str]:
    """(season, team, run) from .../<season>/<team>/<run>/submission.toml; no link on the way."""
    parts = path.parts
    if path.name != SUBMISSION_FILE or len(parts) < 4:
        raise _fail(path, f"a sealed submission is {SUBMISSIONS_DIR}/<season>/<team>/<run>/{SUBMISSION_FILE}")
    season, team, run = parts[-4], parts[-3], parts[-2]
    for what, value, rule in (("season", season, SEASON), ("team", team, SLUG), ("run", run, SLUG)):
        if not rule.fullmatch(value):
            raise _fail(path, f"the {what} folder {value!r} is not a plain name (lowercase letters, digits and '-')")
    for folder in (path.parent, path.parent.parent, path.parent.parent.parent):
        if os.path.islink(folder):
            raise _fail(path, f"{folder.name!r} is a link (refused)")
    return season, team, run


def _options(path: Path, options: Any) -> dict:
    if not isinstance(options, dict):
        raise _fail(path, "[options] must be a table of the attack's options")
    if len(options) > MAX_OPTIONS:
        raise _fail(path, f"{len(options)} options, over the cap of {MAX_OPTIONS}")
    for name, value in options.items():
        if not CLASS.fullmatch(name):
            raise _fail(path, f"option name {name!r} is not an identifier")
        if isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value)):
            raise _fail(path, f"option {name!r}: a number, a string, a boolean or a flat list")
        if not isinstance(value, (int, float, str, bool, list)):
            raise _fail(path, f"option {name!r}: a number, a string, a boolean or a flat list (not a date)")
    if len(repr(options)) > MAX_OPTION_CHARS:
        raise _fail(path, f"the options are over {MAX_OPTION_CHARS} characters: options are settings, not data")
    return dict(options)


def _own_attack(path: Path, attack: dict) -> tuple[str, Path]:
    """(class, entry file) of an own attack folder beside the submission, held to the attack-source rules."""
    from reconbench.core.attack_source import SourceError, collect, imported_source, read_files

    file, cls = attack["file"], attack["class"]
    if not isinstance(file, str) or not FILE.fullmatch(file):
        raise _fail(path, f"attack.file {file!r}: the name of a .py file directly inside {ATTACK_DIR}/ (no folder, no '..')")
    if not isinstance(cls, str) or not CLASS.fullmatch(cls):
        raise _fail(path, f"attack.class {cls!r} is not a Python class name")
    folder = path.parent / ATTACK_DIR
    try:
        st = os.lstat(folder)
    except OSError:
        raise _fail(path, f"attack.file names an own attack, but there is no {ATTACK_DIR}/ folder beside it") from None
    if not stat.S_ISDIR(st.st_mode):
        raise _fail(path, f"{ATTACK_DIR}/ is not a folder (links are refused)")
    try:
        every = collect(folder, skip_caches=False)  # every file: .py only, no link, the 256 KiB cap on all of them
        read_files(every)
        if file not in {rel for rel, _ in every}:
            raise _fail(path, f"attack.file {file!r} is not in {ATTACK_DIR}/")
        used = {rel for rel, _ in imported_source(folder, file)}
    except SourceError as exc:
        raise SealedSubmissionError(f"{path}: {ATTACK_DIR}/: {exc}") from None
    unused = sorted({rel for rel, _ in every} - used)
    if unused:  # the record's source hash is the imported files' (as on an open entry): nothing beside them
        raise _fail(path, f"{ATTACK_DIR}/ holds {len(unused)} file(s) the attack does not import (e.g. {unused[0]!r}): "
                          "the folder is exactly the attack's source")
    return cls, folder / file


def parse(path: Path | str) -> SealedSubmission:
    """The sealed submission at `path`, checked against the registry (its twin, season, scenario) and the
    attack's own rules; SealedSubmissionError otherwise. Nothing is run or imported from the submission."""
    path = Path(path)
    season, team, run = _identity(path)
    data = _read(path)
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise _fail(path, f"unknown key {unknown[0]!r} (allowed: {', '.join(sorted(TOP_KEYS))})")
    missing = sorted({"twin", "scenario", "attack"} - set(data))
    if missing:
        raise _fail(path, f"missing key {missing[0]!r}")
    twin, scenario = data["twin"], data["scenario"]
    budget, seed = data.get("budget", "default"), data.get("seed", 0)
    if not isinstance(twin, str) or not SEASON.fullmatch(twin):
        raise _fail(path, f"twin {twin!r} is not a sealed twin's id")
    if budget not in BUDGETS:
        raise _fail(path, f"budget {budget!r}: one of {', '.join(BUDGETS)}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 31:
        raise _fail(path, "seed must be an integer from 0 to 2**31 - 1")
    attack = data["attack"]
    if not isinstance(attack, dict) or set(attack) not in ATTACK_KEYS:
        raise _fail(path, "[attack] takes `name` (a registered attack) or `file` and `class` (an own attack in attack/)")
    options = _options(path, data.get("options", {}))
    _check_twin(path, twin, season, scenario)
    if "name" in attack:
        name, file = _registered(path, attack["name"], budget, options, twin, scenario), None
    else:
        name, file = _own_attack(path, attack)
    return SealedSubmission(path=path, season=season, team=team, run=run, twin=twin, scenario=scenario, budget=budget,
                            seed=seed, name=name, attack_file=file, options=options)


def _check_twin(path: Path, twin: str, season: str, scenario: Any) -> None:
    from reconbench.core.scenario import Scenario
    from reconbench.core.seasons import burned, burned_why
    from reconbench.core.tracks import sealed_draws

    draws = sealed_draws(twin)
    if not draws:
        raise _fail(path, f"twin {twin!r} is not a sealed twin (`recon-submit tracks` lists them)")
    if draws[0].seal.season != season:
        raise _fail(path, f"twin {twin!r} is of season {draws[0].seal.season}, but the submission is filed under season {season!r}")
    if burned(season):
        raise _fail(path, f"season {season} is burned ({burned_why(season)}): its draws are public practice draws, "
                          "run them yourself with `recon-submit evaluate`")
    if not isinstance(scenario, str):
        raise _fail(path, "scenario must be a string such as 'static/white-box/none'")
    try:
        parsed = str(Scenario.parse(scenario))
    except Exception:  # noqa: BLE001 - the parser's own message may quote the hostile text at length
        raise _fail(path, f"scenario {scenario!r} is not training/access/data (e.g. static/white-box/none)") from None
    if parsed not in [str(s) for s in draws[0].scenarios]:
        raise _fail(path, f"scenario {parsed} is not a cell of twin {twin!r} ({', '.join(map(str, draws[0].scenarios))})")


def _registered(path: Path, name: Any, budget: str, options: dict, twin: str, scenario: str) -> str:
    from reconbench.core.tracks import sealed_draws
    from reconbench.image.attacks import ATTACKS
    from reconbench.image.evaluation import choose_scenario

    if not isinstance(name, str) or name not in ATTACKS:
        raise _fail(path, f"attack.name {name!r} is not a registered attack (`recon-submit attacks`)")
    try:
        ATTACKS[name](budget=budget, **options)  # the toolkit's own code: its options checked before any run
        choose_scenario(sealed_draws(twin)[0], ATTACKS[name], scenario)
    except Exception as exc:  # noqa: BLE001 - an option or cell error of the toolkit's attack: its own message
        raise _fail(path, f"attack {name!r}: {exc}") from None
    return name


def submissions_in(paths: list[Path]) -> list[Path]:
    """The submission.toml files that changed paths touch (a file of an own attack folder names its submission);
    a path outside <anything>/sealed-submissions/<season>/<team>/<run>/ or one that no longer exists is left out."""
    found: list[Path] = []
    for given in paths:
        parts = Path(given).parts
        if SUBMISSIONS_DIR not in parts:
            continue
        at = len(parts) - 1 - parts[::-1].index(SUBMISSIONS_DIR)
        if len(parts) < at + 4:
            continue
        path = Path(*parts[:at + 4]) / SUBMISSION_FILE
        if path not in found and (os.path.lexists(path) or os.path.lexists(given)):
            found.append(path)
    return found


def check(paths: list[Path]) -> list[tuple[Path, str | None]]:
    """(submission, None when it parses, else the one-line reason) for each submission the paths touch."""
    out = []
    for path in submissions_in(paths):
        try:
            parse(path)
            out.append((path, None))
        except SealedSubmissionError as exc:
            out.append((path, str(exc)))
    return out
