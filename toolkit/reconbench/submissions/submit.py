"""`recon-submit submit`: put a signed result folder into the submissions/ layout of a checkout.

Everything is checked before anything is written: the result verifies, the private key given is
the one that signed it, the team's keys list it (a new team is created with it; an existing team
gains it only with `add_key=True`, a change its members see in review), and the entry folder is new.
Then the entry appears whole or not at all (io.atomic_dir), and team.toml is written atomically.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from reconbench.core.hub import HubError, download_pinned
from reconbench.core.io import sha256_file
from reconbench.core.io import atomic_dir
from reconbench.image.results import RECONSTRUCTIONS_FILE, RESULT_FILE, HubReference, ResultFile, Signature
from reconbench.text.results import verify_any_result_dir
from reconbench.core.signing import default_key_path, key_id, load_private_key, public_key_b64, sign_payload
from reconbench.submissions.layout import DEFAULT_ROOT, README_FILE, SIZE_CAPS, TEAM_FILE, TEAM_SLUG, lexical
from reconbench.submissions.team import TeamError, load_team, read_capped, team_file, write_team
from reconbench.submissions.team import new_team as new_team_of


class SubmitError(Exception):
    """A result that cannot be submitted as asked; the message says why and what to do."""

    def __init__(self, message: str, options: list[str] | tuple[str, ...] = ()):
        super().__init__(message)
        self.options = tuple(options)  # what to do instead, one line each (shown under the message)


def require_run(run_dir: Path) -> Path:
    """The run folder's result.json, or an error that says where a run folder comes from (`evaluate`)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise SubmitError(f"{run_dir}: no such folder: pass the folder `recon-submit evaluate` wrote "
                          "(it prints its path; under recon-results/ unless --out was given)")
    if not (run_dir / RESULT_FILE).is_file():
        raise SubmitError(f"{run_dir}: holds no {RESULT_FILE}, so it is not a run: `recon-submit evaluate ... "
                          f"--out {run_dir}` writes one (result.json, signed, and the reconstructions)")
    return run_dir / RESULT_FILE


def _refuse_a_rerun(result: ResultFile, result_dir: Path, root: Path) -> str | None:
    """A re-run of an entry already under `root` with the same reconstruction file
    is refused before anything is written (submissions/reproduces.py): validate would fail it, and the
    newcomer has better options. The same run with other reconstructions (another thread count or
    device) is an honest replicate: accepted, and the line that says what the board does with it is
    returned."""
    from reconbench.core.tracks import get_track
    from reconbench.submissions import reproduces
    from reconbench.submissions.board import Board, _load_images
    from reconbench.submissions.checks.duplicates import DUPLICATE_SHARE

    if not root.is_dir():
        return None
    board = Board(root)
    p = result.payload
    candidates = sorted(board.same_target(p.track, p.scenario.split("/")[0]), key=board.arrival)
    images = _load_images(result_dir, p.reconstructions) if p.reconstructions.file == RECONSTRUCTIONS_FILE else None
    near = reproduces.near_share(board, get_track(p.track), images) if images is not None else None
    found = reproduces.finding(p, [(e, board.payload(e)) for e in candidates], near=near, share=DUPLICATE_SHARE)
    if found is None:
        return None
    if found.kind == reproduces.REPLICATE:
        return reproduces.replicate_line(found)
    line, options = reproduces.advice(found, p, root, run_dir=str(result_dir))
    raise SubmitError(line, options)


@dataclass(frozen=True)
class HubPin:
    """Where the reconstructions were uploaded: repo, full commit sha, file name in the repo."""

    repo: str
    revision: str
    filename: str = RECONSTRUCTIONS_FILE


@dataclass(frozen=True)
class SubmitOutcome:
    entry: Path
    team_file: Path
    team_created: bool
    key_added: bool
    result: ResultFile
    note: str | None = None  # a replicate of an entry already on the board: what the board does with it


def _with_hub(result: ResultFile, pin: HubPin, key, local: Path) -> ResultFile:
    """The same payload with a Hub reference for its reconstructions, re-signed by the same key."""
    info = result.payload.reconstructions
    try:
        ref = HubReference(repo=pin.repo, revision=pin.revision, filename=pin.filename)
    except ValueError as exc:
        raise SubmitError(f"Hub reference: {exc}") from None
    try:
        download_pinned(ref.repo, ref.filename, revision=ref.revision, sha256=info.sha256)
    except HubError as exc:
        raise SubmitError(f"the Hub copy must be the signed file ({local.name}, sha256 {info.sha256}): {exc}") from None
    payload = result.payload.model_copy(update={"reconstructions": info.model_copy(update={"hub": ref})})
    payload = type(payload).model_validate(payload.model_dump(mode="json"))
    return ResultFile(payload=payload, signature=Signature(**sign_payload(payload.model_dump(mode="json"), key)))


def _copy_attack_source(result_dir: Path, signed: str, dest: Path) -> None:
    from reconbench.core.attack_source import ATTACK_DIR, SourceError, collect, copy_source, folder_sha256

    source = result_dir / ATTACK_DIR
    try:
        if not source.is_dir() or folder_sha256(source) != signed:
            raise SubmitError(f"{source}: missing or not the signed attack source (sha256 {signed[:12]}…); "
                              "submit the folder `recon-submit evaluate` wrote")
        copy_source(collect(source, skip_caches=False), dest / ATTACK_DIR)
    except SourceError as exc:
        raise SubmitError(str(exc)) from None


def submit_result(result_dir: Path, team: str, *, root: Path = DEFAULT_ROOT, key_path: Path | None = None,
                  team_name: str | None = None, links: list[str] | None = None, contact: str | None = None,
                  add_key: bool = False, readme: Path | None = None, hub: HubPin | None = None) -> SubmitOutcome:
    if not TEAM_SLUG.fullmatch(team):
        raise SubmitError(f"team '{team}': use lower-case ASCII letters, digits and inner hyphens (1-40 characters)")
    result_dir = Path(result_dir)
    require_run(result_dir)
    result = verify_any_result_dir(result_dir)  # image or text; ResultError: names the file and the problem
    recon_file = result.payload.reconstructions.file  # reconstructions.safetensors, or .jsonl for a text result
    in_git = getattr(result.payload.reconstructions, "hub", None) is None
    key = load_private_key(key_path or default_key_path())
    public = public_key_b64(key.public_key())
    if public != result.signature.public_key:
        raise SubmitError(f"{result_dir / RESULT_FILE} was signed by key {result.signature.key_id}, but "
                          f"{key_path or default_key_path()} is key {key_id(public)}: submit with the key that signed it")
    local_recon = result_dir / recon_file
    if hub is not None and recon_file != RECONSTRUCTIONS_FILE:
        raise SubmitError(f"{result_dir / RESULT_FILE}: a text result's reconstructions.jsonl is kept in git "
                          "(capped at 32 MiB); --hub-repo is for image reconstructions")
    if hub is not None:
        result = _with_hub(result, hub, key, local_recon)
    elif in_git:
        size = local_recon.stat().st_size
        cap = SIZE_CAPS[recon_file]
        if size > cap:
            raise SubmitError(f"{local_recon}: {size:,} bytes, over the {cap:,}-byte cap for files kept in git; "
                              "upload it to the Hub and pass its repo and commit (--hub-repo, --hub-revision)")
    readme_path = readme if readme is not None else (result_dir / README_FILE if (result_dir / README_FILE).is_file() else None)
    readme_bytes = None
    if readme_path is not None:
        try:
            readme_bytes = read_capped(Path(readme_path), SIZE_CAPS[README_FILE])
            readme_bytes.decode("utf-8")
        except (TeamError, UnicodeDecodeError) as exc:
            raise SubmitError(f"{readme_path}: cannot be used as README.md ({exc})") from None

    root = lexical(root)
    team_dir = root / team
    today = datetime.now(timezone.utc).date()  # the date the key is listed from (team.toml keeps it)
    team_created = key_added = False
    if team_file(team_dir).exists():
        try:
            existing = load_team(team_dir)
        except TeamError as exc:
            raise SubmitError(str(exc)) from None
        new_team = existing
        listed = existing.record(public)
        if listed is not None and listed.removed is not None:
            raise SubmitError(f"{team_file(team_dir)}: key {key_id(public)} was removed on {listed.removed}; "
                              "sign with a current key of the team")
        if public not in existing.keys:
            if not add_key:
                raise SubmitError(f"{team_file(team_dir)} does not list key {key_id(public)}; if you are a member "
                                  f"of team '{team}', pass --add-key (the other members will see it in review)")
            try:
                new_team = existing.with_key(public, today)  # dated; validation enforces the key-count limit
            except ValueError as exc:
                raise SubmitError(f"{team_file(team_dir)}: cannot add key {key_id(public)} ({exc})") from None
            key_added = True
    else:
        try:
            new_team = new_team_of(team, team_name or team, links or [], contact, public, today)
        except ValueError as exc:
            raise SubmitError(f"team.toml for a new team '{team}': {exc}") from None
        team_created = True

    note = _refuse_a_rerun(result, result_dir, root)  # before anything is written
    entry = team_dir / result.payload.entry_id
    if os.path.lexists(entry):
        raise SubmitError(f"{entry}: already exists (this result was submitted before)")
    with atomic_dir(entry) as tmp:
        (tmp / RESULT_FILE).write_text(
            json.dumps(result.model_dump(mode="json"), indent=2, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8")
        if getattr(result.payload.reconstructions, "hub", None) is None:
            shutil.copyfile(local_recon, tmp / recon_file)
            if sha256_file(tmp / recon_file) != result.payload.reconstructions.sha256:
                raise SubmitError(f"{local_recon}: changed while it was being copied")
        if readme_bytes is not None:
            (tmp / README_FILE).write_bytes(readme_bytes)
        if result.payload.attack.source_sha256:  # a bring-your-own attack ships its signed source
            _copy_attack_source(result_dir, result.payload.attack.source_sha256, tmp)
        os.chmod(tmp, 0o755)  # public files in a public folder (mkdtemp creates 0700)
    if team_created or key_added:
        try:
            write_team(team_dir, new_team)
        except BaseException:
            shutil.rmtree(entry, ignore_errors=True)
            raise
    return SubmitOutcome(entry=entry, team_file=team_dir / TEAM_FILE, team_created=team_created,
                         key_added=key_added, result=result, note=note)
