"""Check the board's sealed run records (core/sealed_runs; written by `recon-submit seal run`), without the key.

    submissions/sealed-runs/<season>/<team>/<run>/record.json

A record is committed by a maintainer from the sealed job's artifact, so a pull request could bring one written
or changed by hand. Each record must:
- be the only kind of file there (a folder or file of any other shape is refused) and not a link;
- parse as core/sealed_runs.SealedRun (no unknown field), with season, team and run equal to its path;
- name a sealed twin of that season, and its draws exactly: every draw of the twin, in order, each with the
  draw's model hash as the registry pins it (`target_model_sha256`);
- be signed by the record signer the registry pins for those draws (core/sealed_records.signature_problem):
  a record written by hand, one with a changed number, or one signed by another season's signer fails;
- state the tier its own numbers give (core/sealed_run_verdict.run_verdict), and no tier unless every draw
  was scored;
- be within the team's RUN_LIMIT runs on the twin this season (counted in the order the runs were made):
  the (RUN_LIMIT + 1)-th record is refused.
After the reveal the signature proves nothing more; `recon-submit seal verify --runs-out` recomputes the numbers.
"""

from __future__ import annotations

import os
import stat
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from reconbench.core import untrusted
from reconbench.core.sealed_runs import RECORD_FILE, RUN_LIMIT, RUNS_DIR, SealedRun


@dataclass(frozen=True)
class RunCheck:
    path: str
    ok: bool
    message: str


def _files(folder: Path) -> tuple[list[Path], list[str]]:
    """(record files at <season>/<team>/<run>/record.json, problems with anything else under `folder`)."""
    records, problems = [], []
    for dirpath, dirnames, filenames in os.walk(folder):
        depth = len(Path(dirpath).relative_to(folder).parts)
        for name in list(dirnames):
            if os.path.islink(Path(dirpath) / name) or depth >= 3:
                problems.append(f"{Path(dirpath) / name}: not <season>/<team>/<run>/ of a run record")
                dirnames.remove(name)
        for name in filenames:
            path = Path(dirpath) / name
            if depth == 3 and name == RECORD_FILE and stat.S_ISREG(os.lstat(path).st_mode):
                records.append(path)
            else:
                problems.append(f"{path}: not a run record (only <season>/<team>/<run>/{RECORD_FILE} lives here)")
    return sorted(records), problems


def _one(path: Path, folder: Path) -> tuple[SealedRun | None, str | None]:
    """(the record, None) when it passes the checks of one record, else (record or None, why not)."""
    from pydantic import ValidationError

    from reconbench.core.io import strict_json_loads
    from reconbench.core.sealed_records import signature_problem
    from reconbench.core.sealed_run_verdict import run_verdict
    from reconbench.core.tracks import sealed_draws
    from reconbench.submissions.sealed_submission import SEASON, SLUG

    season, team, run = path.relative_to(folder).parts[:3]
    if not (SEASON.fullmatch(season) and SLUG.fullmatch(team) and SLUG.fullmatch(run)):
        return None, "its folders are not plain names (<season>/<team>/<run>)"
    try:
        data = strict_json_loads(path.read_text(encoding="utf-8"))
        record = SealedRun.model_validate(data)
    except (OSError, UnicodeDecodeError, ValueError, ValidationError) as exc:
        return None, f"not a sealed run record ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
    if (record.season, record.team, record.run) != (season, team, run):
        return record, f"it names {record.season}/{record.team}/{record.run}, but lies at {season}/{team}/{run}"
    draws = sealed_draws(record.twin)
    if not draws:
        return record, f"twin '{record.twin}' is not a sealed twin in the registry"
    if draws[0].seal.season != record.season or draws[0].seal.open_twin != record.open_twin:
        return record, f"twin '{record.twin}' is of season {draws[0].seal.season} (open twin {draws[0].seal.open_twin})"
    named = [(d.track, d.model_sha256) for d in record.draws]
    pinned = [(t.id, t.target_model_sha256) for t in draws]
    if named != pinned:
        return record, (f"its draws are not the twin's: {len(named)} named, the twin has {len(pinned)} "
                        f"({', '.join(t for t, _ in pinned)}), each with its model's sha256 as the registry pins it")
    signers = {t.seal.record_signer for t in draws}
    if len(signers) != 1:
        return record, "the twin's draws pin different record signers, so no run record of it can be checked"
    why = signature_problem(data, signers.pop())
    if why:
        return record, f"not the board's record: {why}"
    verdict = run_verdict([d.model_dump(mode="json") for d in record.draws])
    said = verdict.tier.word if verdict.tier is not None else None
    if (record.tier, record.extracts) != (said, verdict.members):
        return record, f"its tier ({record.tier}, {record.extracts}) is not what its numbers give ({said}, {verdict.members})"
    for d in record.draws:
        if d.status != "scored" and (d.membership or d.extraction or d.metrics or d.output_mac):
            return record, f"draw {d.track} is {d.status}, yet the record carries its numbers"
    return record, None


def check_runs(root: Path) -> list[RunCheck]:
    """One RunCheck per record (and per stray file) under root/sealed-runs; [] when there is none."""
    folder = Path(root) / RUNS_DIR
    if not os.path.lexists(folder):
        return []
    if os.path.islink(folder) or not folder.is_dir():
        return [RunCheck(str(folder), False, "not a folder (links are refused)")]
    paths, stray = _files(folder)
    out = [RunCheck(p.split(":", 1)[0], False, untrusted.line(p)) for p in stray]
    good: list[tuple[Path, SealedRun]] = []
    for path in paths:
        record, why = _one(path, folder)
        if why:
            out.append(RunCheck(str(path), False, untrusted.line(f"{path}: {why}")))
        else:
            good.append((path, record))
    # The run limit, in the order the runs were made: the first RUN_LIMIT of a team on a twin in a season pass.
    by_team: dict[tuple, list] = defaultdict(list)
    for path, record in good:
        by_team[(record.season, record.team, record.twin)].append((record.ran_at, record.run, path, record))
    for (season, team, twin), runs in sorted(by_team.items()):
        for i, (_, _, path, record) in enumerate(sorted(runs)):
            if i >= RUN_LIMIT:
                out.append(RunCheck(str(path), False, untrusted.line(
                    f"{path}: run {i + 1} of team '{team}' on {twin} in season {season}, over the limit of {RUN_LIMIT} "
                    "board runs per team, twin and season")))
            else:
                out.append(RunCheck(str(path), True, untrusted.line(
                    f"{path}: signed by the board; {record.tier or 'no verdict'} ({len(record.draws)} draws)")))
    return sorted(out, key=lambda c: c.path)


def touched(root: Path, selected: list[Path] | None) -> bool:
    """Whether a validation of these paths (None: everything) covers the run records."""
    if selected is None:
        return True
    folder = os.path.abspath(Path(root) / RUNS_DIR)
    return any(os.path.abspath(p) == os.path.abspath(root) or os.path.abspath(p).startswith(folder) for p in selected)


def runs_report(root: Path, selected: list[Path] | None, console, summary: Path | None, quiet: bool = False) -> bool:
    """`validate`'s part for the run records: one line per record that fails (and a count of those that pass);
    True when all pass or none was selected."""
    from reconbench.core.console import escape

    if not touched(root, selected):
        return True
    found = check_runs(root)
    if not found:
        return True
    bad = [c for c in found if not c.ok]
    lines = [f"sealed run records: {len(found) - len(bad)} of {len(found)} pass"] + [f"FAIL {c.message}" for c in bad]
    if not quiet:
        for line in lines:
            console.print(escape(line))
    if summary is not None:
        with open(summary, "a", encoding="utf-8") as f:
            f.write("\n### Sealed run records\n\n" + "".join(f"- {line}\n" for line in lines))
    return not bad
