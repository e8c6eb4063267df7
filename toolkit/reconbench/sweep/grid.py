"""GRID.toml -> a list of jobs: tracks x attacks x scenarios x seeds at one budget preset.

    name = "digits-quick"                  # optional, names the default output folder
    tracks = ["digits"]                    # track ids or shell patterns ("cifar10-*-n1000")
    attacks = ["mi-face", "deepinversion"]
    scenarios = "default"                  # "default": the cell `evaluate` picks (the attack's first
                                           # cell the track offers); "all": every cell both offer;
                                           # or a list of cells ("static/white-box/none", ...)
    seeds = [0, 1]
    budget = "quick"                       # quick | default | paper: each attack's preset (`evaluate --budget`)

    [options."mi-face"]                    # `evaluate --set` overrides, per attack
    iterations = 30

    [[exclude]]                            # drop every job matching all keys given (a list = any of)
    attack = "deepinversion"
    seed = 1

    [[include]]                            # add jobs: same axes as the top level (scalars or lists);
    tracks = ["digits-mlp"]                # an axis left out takes the top level's value
    attacks = ["mi-face"]

    [[include]]                            # white-box attacks in black-box cells through a stolen
    attacks = ["deepinversion"]            # surrogate (`evaluate --surrogate`): "default" = the
    scenarios = "all"                      # cell evaluate picks, "all" = every static black-box cell
    surrogate = "dfme"                     # the track offers in which the attack can run that way

Excludes apply to the product, includes are added after them (an explicit include wins). A
combination whose attack cannot run in the requested cell is not a job (counted as not applicable).
A job's id is derived from its parameters (not the device), so a rerun finds the jobs it has done.
"""

from __future__ import annotations

import fnmatch
import hashlib
import itertools
import json
import re
import tomllib
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reconbench.core.attack_options import BUDGETS



class GridError(ValueError):
    """A grid file that cannot be read or names what does not exist; the message names the file."""


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    track: str | list[str] | None = None
    attack: str | list[str] | None = None
    scenario: str | list[str] | None = None
    seed: int | list[int] | None = None

    def matches(self, job: "Job") -> bool:
        for key in ("track", "attack", "scenario", "seed"):
            want = getattr(self, key)
            if want is not None and getattr(job, key) not in (want if isinstance(want, list) else [want]):
                return False
        return True


class Axes(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    tracks: list[str] | None = None
    attacks: list[str] | None = None
    scenarios: Literal["default", "all"] | list[str] | None = None
    seeds: list[int] | None = None
    surrogate: Literal["dfme", "aux"] | None = None


class GridFile(Axes):
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
    tracks: list[str] = Field(min_length=1)
    attacks: list[str] = Field(min_length=1)
    scenarios: Literal["default", "all"] | list[str] = "default"
    seeds: list[int] = Field([0], min_length=1)
    budget: Literal["quick", "default", "paper"] | None = None
    options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    include: list[Axes] = Field(default_factory=list)
    exclude: list[Rule] = Field(default_factory=list)
    # the findings page's conditions per claim (reconbench.leaderboard.findings_rule); not read by the sweep
    claims: dict[str, dict[str, Any]] = Field(default_factory=dict)


@dataclass(frozen=True)
class Job:
    track: str
    attack: str
    scenario: str
    seed: int
    budget: str | None = None
    options: dict = field(default_factory=dict, hash=False, compare=False)
    surrogate: str | None = None  # `evaluate --surrogate`

    def params(self) -> dict:
        """Every parameter; `surrogate` only when set, so that the ids of other jobs stay as they were."""
        params = asdict(self)
        if params["surrogate"] is None:
            del params["surrogate"]
        return params

    @property
    def id(self) -> str:
        """Readable prefix + a hash of every parameter (options included, device not)."""
        canonical = json.dumps(self.params(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        digest = hashlib.sha256(canonical.encode()).hexdigest()[:12]
        attack = self.attack + (f"-via-{self.surrogate}" if self.surrogate else "")
        return f"{_slug(self.track)}--{_slug(attack)}--s{self.seed}--{digest}"

    @classmethod
    def from_params(cls, params: dict) -> "Job":
        return cls(**params)


@dataclass
class Grid:
    name: str
    jobs: list[Job]
    not_applicable: int  # combinations whose attack does not run in the requested cell


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")[:40] or "x"


def read_grid(path: Path) -> GridFile:
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GridError(f"{path}: grid file not found") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise GridError(f"{path}: not a readable TOML file ({exc})") from None
    try:
        return GridFile.model_validate(raw)
    except ValidationError as exc:
        from reconbench.core.envelope import first_error

        raise GridError(f"{path}: {first_error(exc)}") from None


@lru_cache(maxsize=64)
def attack_meta(spec: str, options: str = "{}", budget: str = "default"):
    """An attack's declaration (name, scenarios), its `options` (JSON) checked at `budget`.

    A registered attack is our code: its class answers. A user's `file.py:Class` is loaded the way
    `evaluate` loads it, in its own process (reconbench.pipeline.isolation), never imported by the sweep,
    whose process later evaluates and signs (--local) or hands out the signing key's path.
    """
    from reconbench.image.attacks import ATTACKS
    from reconbench.pipeline.isolation.parent import AttackProcess

    if spec in ATTACKS:
        ATTACKS[spec](budget=budget, **json.loads(options))
        return ATTACKS[spec]
    with AttackProcess(spec, json.loads(options), budget) as process:
        return process.meta()


def _track_ids(names: list[str], source: Path) -> list[str]:
    """Track ids, with shell patterns ("cifar10-*") matched against the registry in its order."""
    from reconbench.core.tracks import all_tracks

    out = []
    for name in names:
        if not any(c in name for c in "*?["):
            out.append(name)
            continue
        matched = [t.id for t in all_tracks() if fnmatch.fnmatchcase(t.id, name)]
        if not matched:
            raise GridError(f"{source}: track pattern '{name}' matches no track of the registry")
        out += matched
    return list(dict.fromkeys(out))


def _cells(track, attack_cls, requested) -> tuple[list[str], int]:
    """(cells to run, cells requested but not applicable) for one track and attack."""
    from reconbench.image.evaluation import choose_scenario

    if requested == "default":
        try:
            return [str(choose_scenario(track, attack_cls, None))], 0
        except Exception:  # the attack runs in no cell of this track
            return [], 1
    offered = [s for s in attack_cls.scenarios if s in track.scenarios]
    if requested == "all":
        return offered, 0 if offered else 1
    return [s for s in requested if s in offered], sum(s not in offered for s in requested)


def _surrogate_cells(track, attack_cls, requested, method: str) -> tuple[list[str], int]:
    """(black-box cells to run through a `method` surrogate, cells requested but not applicable)."""
    from reconbench.image.surrogate.route import choose_cell

    def fits(cell: str | None) -> str | None:
        try:
            return str(choose_cell(track, attack_cls, cell, method))
        except Exception:  # the attack cannot run through a surrogate in this cell
            return None

    if requested == "default":
        cell = fits(None)
        return ([cell], 0) if cell else ([], 1)
    wanted = [s for s in track.scenarios if s.startswith("static/black-box/")] if requested == "all" else requested
    cells = [c for c in wanted if fits(c)]
    return cells, ((0 if cells else 1) if requested == "all" else len(wanted) - len(cells))


def expand(grid: GridFile, *, source: Path, budget: str | None = None) -> Grid:
    """All jobs of the grid (tracks and attacks checked, scenarios resolved), in a stable order."""
    from reconbench.image.attacks import AttackError
    from reconbench.core.scenario import Scenario
    from reconbench.core.tracks import TrackError, get_track

    budget = budget or grid.budget
    if budget is not None and budget not in BUDGETS:
        raise GridError(f"--budget {budget}: expected one of {', '.join(BUDGETS)}")
    for cells in [grid.scenarios] + [inc.scenarios for inc in grid.include]:
        for cell in cells if isinstance(cells, list) else []:
            try:
                Scenario.parse(cell)
            except ValueError as exc:
                raise GridError(f"{source}: scenario '{cell}': {exc}") from None
    unused = set(grid.options) - set(grid.attacks) - {a for inc in grid.include for a in inc.attacks or []}
    if unused:
        raise GridError(f"{source}: [options] for attack(s) not in the grid: {', '.join(sorted(unused))}")

    def product(axes: Axes) -> tuple[list[Job], int]:
        jobs, skipped = [], 0
        for track_id in _track_ids(axes.tracks or grid.tracks, source):
            try:
                track = get_track(track_id)
            except TrackError as exc:
                raise GridError(f"{source}: {exc}") from None
            for attack in axes.attacks or grid.attacks:
                options = json.dumps(grid.options.get(attack, {}), sort_keys=True)
                try:
                    attack_cls = attack_meta(attack, options, budget or "default")  # options checked now
                except AttackError as exc:
                    raise GridError(f"{source}: {exc}") from None
                surrogate = axes.surrogate or grid.surrogate
                requested = axes.scenarios or grid.scenarios
                cells, missing = (_surrogate_cells(track, attack_cls, requested, surrogate) if surrogate
                                  else _cells(track, attack_cls, requested))
                skipped += missing * len(axes.seeds or grid.seeds)
                for cell, seed in itertools.product(cells, axes.seeds or grid.seeds):
                    jobs.append(Job(track_id, attack, cell, seed, budget, dict(grid.options.get(attack, {})), surrogate))
        return jobs, skipped

    jobs, not_applicable = product(grid)
    jobs = [j for j in jobs if not any(rule.matches(j) for rule in grid.exclude)]
    for inc in grid.include:
        extra, missing = product(inc)
        jobs += extra
        not_applicable += missing
    unique = list({job.id: job for job in jobs}.values())
    return Grid(name=grid.name or Path(source).stem, jobs=unique, not_applicable=not_applicable)


def load_grid(path: Path, *, budget: str | None = None) -> Grid:
    return expand(read_grid(path), source=Path(path), budget=budget)
