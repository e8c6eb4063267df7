"""`validate` for judge studies: judgements/<study-id>/study.json, each checked on its own.

    1 layout     the folder is named by the study id, holds study.json (and at most a README.md), no links
    2 schema     strict JSON (no duplicate keys, no NaN), the study schema
    3 signature  verifies with a key of the team the study names (submissions/<team>/team.toml)
    4 entries    every condition is an entry under submissions/ whose result.json and reconstructions
                 have the recorded sha256, on the study's track
    5 protocol   the prompt is the SoK's for K conditions; the targets are the seeded sample; each
                 order is the seeded permutation (or the identity in fixed mode); each vote's condition
                 is what its position maps to; every candidate is a highest-PSNR reconstruction
                 (recomputed when the target set is available here)
    6 aggregates recomputed from the per-target votes

    7 rerun      (when judgements/<study-id>/rerun.json is there) a maintainer's re-run of the study's own
                 plan with the maintainers' endpoint (judge/rerun.py): signed by a listed reproducer key,
                 for this very payload; its Pred Rates compared with the study's here

Trust decision: only keys a registered team lists in its team.toml can sign a study; maintainers sign
theirs with a key of their team (reconbench-baselines). A study that fails is not published. A study
that passes is still its signer's claim (the answers came from an endpoint only the signer saw; a
re-signed study with other votes is just as consistent): the site shows it as self-reported unless a
maintainer's re-run agrees with it (judge/rerun.py).
"""

from __future__ import annotations

import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from reconbench.judge import STUDY_FILE
from reconbench.judge.aggregate import aggregates
from reconbench.judge.order import candidate_order
from reconbench.judge.prompt import build_prompt, parse_answer
from reconbench.judge.selection import exact_mse, sample_targets
from reconbench.judge.rerun_record import RERUN_FILE, RerunError, verify_rerun
from reconbench.judge.study import StudyError, StudyFile, read_study

REPRODUCERS: Path | None = None  # else RECONBENCH_REPRODUCERS, else maintainers/reproducers.toml of the checkout

ALLOWED = {STUDY_FILE, "README.md", RERUN_FILE}
MSE_TOL = 1e-9  # recorded vs recomputed MSE of a candidate (float64 of uint8 pixels: exact to ~1e-16)


@dataclass
class StudyReport:
    study_id: str
    path: Path
    ok: bool
    checks: list[tuple[str, str, str]] = field(default_factory=list)  # (name, pass|fail|note, message)
    study: StudyFile | None = None
    rerun: dict | None = None  # a maintainer's verified re-run (judge/rerun.verify_rerun); None: self-reported

    def to_dict(self) -> dict:
        return {"study_id": self.study_id, "path": str(self.path), "ok": self.ok,
                "checks": [{"name": n, "status": s, "message": m} for n, s, m in self.checks]}


class Failed(Exception):
    pass


def discover(root: Path) -> list[Path]:
    root = Path(root)
    if not root.is_dir() or root.is_symlink():
        return []
    return sorted(root / e.name for e in os.scandir(root) if not e.name.startswith("."))


def _layout(folder: Path) -> Path:
    if folder.is_symlink() or not stat.S_ISDIR(os.lstat(folder).st_mode):
        raise Failed(f"{folder}: a study is a folder judgements/<study-id>/ (not a file or a link)")
    for e in os.scandir(folder):
        if e.name not in ALLOWED:
            raise Failed(f"{folder / e.name}: unexpected file (a study folder holds {STUDY_FILE}, an optional README.md "
                         f"and a maintainer's {RERUN_FILE})")
        if e.is_symlink() or not e.is_file(follow_symlinks=False):
            raise Failed(f"{folder / e.name}: not a regular file")
    path = folder / STUDY_FILE
    if not path.is_file():
        raise Failed(f"{path}: file not found")
    return path


def _signature(study: StudyFile, raw: dict, path: Path, submissions: Path) -> str:
    from reconbench.core.signing import SigningError, verify_payload
    from reconbench.submissions.team import TeamError, load_team

    team_dir = submissions / study.payload.team
    try:
        team = load_team(team_dir)
    except TeamError as exc:
        raise Failed(f"{path}: names team '{study.payload.team}', whose team.toml cannot be used ({exc})") from None
    try:
        key = verify_payload(raw, study.signature.model_dump(), trusted_keys=list(team.keys))
    except SigningError as exc:
        raise Failed(f"{path}: {exc}") from None
    return f"signed by key {key} of team {team.slug}"


def _entries(study: StudyFile, path: Path, submissions: Path) -> list:
    from reconbench.core.io import sha256_file
    from reconbench.image.results import RECONSTRUCTIONS_FILE, RESULT_FILE, ResultError, load_reconstructions, parse_result_json

    loaded = []
    for i, c in enumerate(study.payload.conditions):
        entry = submissions / c.team / c.entry_id
        result = entry / RESULT_FILE
        if entry.is_symlink() or not result.is_file() or result.is_symlink():
            raise Failed(f"{path}: condition {i + 1} names entry {c.team}/{c.entry_id}, which is not under {submissions}")
        if sha256_file(result) != c.result_sha256:
            raise Failed(f"{path}: condition {i + 1}: {c.team}/{c.entry_id}/result.json changed since the study (sha256 differs)")
        try:
            payload = parse_result_json(result).payload
        except ResultError as exc:
            raise Failed(f"{path}: condition {i + 1}: {exc}") from None
        if payload.track != study.payload.track or payload.attack.name != c.attack:
            raise Failed(f"{path}: condition {i + 1}: entry is {payload.attack.name} on {payload.track}, "
                         f"the study says {c.attack} on {study.payload.track}")
        rec = entry / RECONSTRUCTIONS_FILE
        if payload.reconstructions.sha256 != c.reconstructions_sha256 or not rec.is_file() or sha256_file(rec) != c.reconstructions_sha256:
            raise Failed(f"{path}: condition {i + 1}: {c.team}/{c.entry_id}'s reconstructions are not the ones the study used")
        try:
            loaded.append(load_reconstructions(rec))
        except Exception as exc:  # noqa: BLE001 - any unreadable file is this study's failure
            raise Failed(f"{path}: condition {i + 1}: {exc}") from None
    keys = [(c.team, c.entry_id) for c in study.payload.conditions]
    if len(set(keys)) != len(keys):
        raise Failed(f"{path}: an entry appears twice among the conditions")
    return loaded


def _protocol(study: StudyFile, path: Path, recs: list) -> list[str]:
    p = study.payload
    k, notes = len(p.conditions), []
    if p.prompt != build_prompt(k):
        raise Failed(f"{path}: the prompt is not the SoK's prompt for {k} candidates")
    indices = [t.index for t in p.targets]
    if p.options.targets != len(indices) or indices != sample_targets(p.target_set_size, len(indices), p.options.seed):
        raise Failed(f"{path}: the targets are not the seeded sample (seed {p.options.seed}) of the target set")
    for t in p.targets:
        if len(t.candidates) != k or set(t.votes) != set(p.options.modes):
            raise Failed(f"{path}: target {t.index}: candidates or order modes do not match the study's")
        for mode, votes in t.votes.items():
            if [v.repeat for v in votes] != list(range(p.options.repeats)):
                raise Failed(f"{path}: target {t.index} ({mode}): expected repeats 0..{p.options.repeats - 1}")
            for v in votes:
                if v.order != candidate_order(mode, k, p.options.seed, t.index, v.repeat):
                    raise Failed(f"{path}: target {t.index} ({mode}) repeat {v.repeat}: not the seeded candidate order")
                if v.position is not None and v.position > k + 1:
                    raise Failed(f"{path}: target {t.index}: position {v.position} beyond image {k + 1}")
                # The recorded position is what the last answer's text reads as, after only invalid ones,
                # and an invalid vote used every re-ask: votes cannot be dropped or moved by hand.
                texts = v.answers
                if (parse_answer(texts[-1], k) != v.position or any(parse_answer(a, k) is not None for a in texts[:-1])
                        or (v.position is None and len(texts) != p.options.invalid_retries + 1)):
                    raise Failed(f"{path}: target {t.index} ({mode}) repeat {v.repeat}: the position does not match the answers")
                expected = None if v.position is None else v.order[v.position - 2]
                if v.condition != expected or len(v.answers) > p.options.invalid_retries + 1:
                    raise Failed(f"{path}: target {t.index} ({mode}) repeat {v.repeat}: the vote does not map to its condition")
        for c, cand in enumerate(t.candidates):
            if cand.rec_index >= len(recs[c][0]):
                raise Failed(f"{path}: target {t.index}: candidate index {cand.rec_index} beyond condition {c + 1}'s file")
    targets = _target_set(p)
    if targets is None:
        notes.append(f"track {p.track}'s target set is not available here: candidates not recomputed")
        return notes
    images, labels = targets
    if len(images) != p.target_set_size:
        raise Failed(f"{path}: target_set_size {p.target_set_size} differs from the track's {len(images)}")
    for c, (rec_images, rec_labels) in enumerate(recs):
        for t in p.targets:
            cand = t.candidates[c]
            if int(labels[t.index]) != t.label:
                raise Failed(f"{path}: target {t.index}: label {t.label} is not the target set's")
            pool = np.flatnonzero(rec_labels == t.label)
            if cand.same_class != (len(pool) > 0):
                raise Failed(f"{path}: target {t.index}, condition {c + 1}: same_class is wrong")
            if not len(pool):
                pool = np.arange(len(rec_labels))
            if cand.rec_index not in set(pool.tolist()):
                raise Failed(f"{path}: target {t.index}, condition {c + 1}: candidate not of the target's class")
            mse = exact_mse(rec_images[pool], images[t.index][None])
            own = float(exact_mse(rec_images[[cand.rec_index]], images[t.index][None])[0])
            if abs(own - cand.mse) > MSE_TOL or own > float(mse.min()) + MSE_TOL:
                raise Failed(f"{path}: target {t.index}, condition {c + 1}: reconstruction {cand.rec_index} is not the "
                             f"highest-PSNR one (MSE {own:.6g} vs best {float(mse.min()):.6g})")
    return notes


def _target_set(payload):
    from reconbench.judge.selection import target_split

    training = "dynamic" if payload.split == "update" else "static"
    try:
        images, labels, _ = target_split(payload.track, training)
    except Exception:  # noqa: BLE001 - a Hub track offline: the other checks still stand
        return None
    return images, labels


def _same(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None or isinstance(a, bool) or isinstance(b, bool):
            return False
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)  # scipy's p-value may differ in its last digits
    return type(a) is type(b) and a == b


def _aggregates(study: StudyFile, raw: dict, path: Path) -> None:
    p = study.payload
    if set(p.aggregates) != set(p.options.modes):
        raise Failed(f"{path}: aggregates for {sorted(p.aggregates)}, but the study ran {p.options.modes}")
    for mode in p.options.modes:
        votes = [{"votes": t["votes"][mode]} for t in raw["targets"]]
        again = aggregates(votes, len(p.conditions), p.options.repeats)
        if not _same(raw["aggregates"][mode], again):
            raise Failed(f"{path}: the {mode}-order aggregates differ from those recomputed from the votes")


def _rerun(folder: Path, raw: dict, report: StudyReport) -> dict | None:
    path = folder / RERUN_FILE
    if not os.path.lexists(path):
        report.checks.append(("rerun", "note", "self-reported: no maintainer has re-run this study"))
        return None
    try:
        rerun = verify_rerun(path, raw, raw["aggregates"], REPRODUCERS)
    except RerunError as exc:
        raise Failed(str(exc)) from None
    worst = max(rerun["comparisons"], key=lambda c: abs(c.study - c.rerun))
    report.checks.append(("rerun", "pass" if rerun["agrees"] else "note",
                          f"re-run by {rerun['by']}: Pred Rates {'agree' if rerun['agrees'] else 'DISAGREE'} (largest "
                          f"difference {abs(worst.study - worst.rerun):.3f}, tolerance {worst.tolerance:.3f})"))
    return rerun


def check_study(folder: Path, submissions: Path) -> StudyReport:
    folder = Path(folder)
    report = StudyReport(study_id=folder.name, path=folder, ok=False)
    try:
        path = _layout(folder)
        report.checks.append(("layout", "pass", str(path)))
        try:
            study, raw = read_study(path)
        except StudyError as exc:
            raise Failed(str(exc)) from None
        if study.payload.study_id != folder.name:
            raise Failed(f"{path}: study_id {study.payload.study_id!r} differs from its folder name")
        report.study = study
        report.checks.append(("schema", "pass", "strict JSON, study schema"))
        report.checks.append(("signature", "pass", _signature(study, raw, path, submissions)))
        recs = _entries(study, path, submissions)
        report.checks.append(("entries", "pass", f"{len(recs)} entries exist with the recorded hashes"))
        notes = _protocol(study, path, recs)
        report.checks.append(("protocol", "pass", "; ".join(notes) or "prompt, targets, orders, votes, candidates"))
        _aggregates(study, raw, path)
        report.checks.append(("aggregates", "pass", "recomputed from the votes"))
        report.rerun = _rerun(folder, raw, report)
        report.ok = True
    except Failed as exc:
        report.checks.append(("study", "fail", str(exc)))
        report.study = None
    except OSError as exc:
        report.checks.append(("study", "fail", f"{folder}: cannot be read ({exc.strerror})"))
        report.study = None
    return report


def check_studies(root: Path, submissions: Path, paths: list[Path] | None = None) -> list[StudyReport]:
    """Every study under `root`, or those the given paths (files or folders inside root) touch."""
    root = Path(os.path.abspath(root))
    if paths is None:
        folders = discover(root)
    else:
        folders = []
        for p in paths:
            rel = Path(os.path.abspath(p)).relative_to(root)
            folder = root / rel.parts[0] if rel.parts else None
            for f in ([folder] if folder else discover(root)):
                if f not in folders and os.path.lexists(f):
                    folders.append(f)
    reports = [check_study(f, Path(submissions)) for f in folders]
    prefix = str(root.parent).rstrip(os.sep) + os.sep  # messages name judgements/<id>/..., not this machine's path
    for r in reports:
        r.checks = [(n, s, m.replace(prefix, "")) for n, s, m in r.checks]
    return reports
