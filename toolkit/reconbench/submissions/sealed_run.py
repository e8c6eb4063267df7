"""The board's sealed run (issue 43, item 1): a sealed submission's attack, run on every draw of its twin,
scored with the key, one signed record of numbers (`recon-submit seal run`; docs/sealed.md).

    run(submission.toml, master key, out=PRIVATE, root=submissions) ->
        1. the submission parsed strictly (submissions/sealed_submission.py), the team's runs on this twin
           this season counted from the committed records: the (RUN_LIMIT + 1)-th is refused, before anything runs;
        2. per draw, inside core/sealed_weights.opening(key): `evaluate` runs the attack in the sandbox on the
           draw's cell, as for any entry (the key, the decrypted weights and the pool stay in this process; the
           sandbox hides the key file and the private output folder too, where they lie inside a bound folder);
        3. the copy rule with the key (image/sealed_scores.carried at the count's threshold): a draw whose
           outputs copy a public image that is not a member is "failed", with counts only;
        4. the draw's membership gap and extraction count with the key (image/sealed_scores.sealed_numbers), as
           few numbers as the verdict needs, rounded (core/sealed_run_verdict.published), and a MAC of its reconstructions' file under the season's
           key (`output_mac`: after the reveal it ties the published output to the record; before it, it says
           nothing, and the attack cannot grind it as it could a plain hash);
        5. the run's tier across the draws (core/sealed_run_verdict), and ONE record signed by the season's record
           signer at core/sealed_runs.record_path.

The record holds numbers only; the result folders (reconstructions, the signed results of each draw) go to
the private output folder: the board's artifact, published only after the reveal (`seal verify --runs-out`
recomputes the record from it).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from reconbench.core.sealed_runs import RUN_LIMIT, RUNS_DIR, RECORD_FILE, DrawOutcome, SealedAttack, SealedRun, record_path

OUTPUT_MAC = "reconbench-seal/run-output"
# The attack's failures (its own errors, its limits, a broken protocol, a bad output): the draw's outcome. Any other
# error is the board's (a sandbox that does not start, a registry problem, a result that does not validate): the
# run stops and records nothing.
FAILED_ATTACK = ("AttackError", "KnowledgeError", "QueryBudgetExceeded", "LimitExceeded", "RemoteTraceback",
                 "ProtocolError", "GuardError")


class SealedRunError(Exception):
    """The board cannot run this submission (or refuses to): one line saying why. Nothing was recorded."""


@dataclass(frozen=True)
class SealedRunOutput:
    record: SealedRun
    path: Path  # the signed record
    out: Path  # the private folder of the run's result folders


def scoring_key(master: bytes, track) -> bytes:
    """The key that opens a draw's membership and signs its records: the season's key in a v2 season
    (core/seal.season_key of the board's master key), the key itself in a v1 season."""
    from reconbench.core.seal import season_key

    return season_key(master, track.seal.season) if track.seal.scheme == "v2" else master


def output_mac(key: bytes, track_id: str, reconstructions: Path) -> str:
    digest = hashlib.sha256(Path(reconstructions).read_bytes()).hexdigest()
    return hmac.new(key, f"{OUTPUT_MAC}/{track_id}/{digest}".encode(), hashlib.sha256).hexdigest()


def committed_runs(root: Path) -> list[SealedRun]:
    """Every run record under root/sealed-runs; one that cannot be read stops the run (the count would be wrong)."""
    from pydantic import ValidationError

    from reconbench.core.io import strict_json_loads

    runs = []
    for path in sorted((Path(root) / RUNS_DIR).glob(f"*/*/*/{RECORD_FILE}")):
        try:
            runs.append(SealedRun.model_validate(strict_json_loads(path.read_text(encoding="utf-8"))))
        except (OSError, UnicodeDecodeError, ValueError, ValidationError) as exc:
            raise SealedRunError(f"{path}: not a readable sealed run record ({type(exc).__name__}); the run limit is "
                                 "counted from these records, so fix or remove it first") from None
    return runs


def check_limit(sub, root: Path) -> int:
    """The number of runs the team has used on this twin this season; SealedRunError when none is left."""
    from reconbench.core.sealed_runs import runs_used

    if record_path(root, sub.season, sub.team, sub.run).exists():
        raise SealedRunError(f"{sub.path}: run '{sub.run}' of team '{sub.team}' is already recorded "
                             f"({record_path(root, sub.season, sub.team, sub.run)}); a new run needs a new name")
    used = runs_used(committed_runs(root), sub.season, sub.team, sub.twin)
    if used >= RUN_LIMIT:
        raise SealedRunError(f"{sub.path}: team '{sub.team}' has used its {RUN_LIMIT} board runs on {sub.twin} in season "
                             f"{sub.season} (each run's outcome says something about the secret membership, so runs are "
                             "limited; docs/sealed.md, \"Threat model\"): nothing was run")
    return used


def _metrics(payload) -> dict:
    """The draw's image metrics against its pool (their means, rounded): not the evaluation classifier's accuracies,
    which the attack sets at will (the classifier is public), nor anything per image."""
    from reconbench.core.sealed_run_verdict import METRICS, rounded

    return {name: rounded(m.value) for name, m in sorted(payload.metrics.items())
            if name in METRICS and m.status == "computed" and m.value is not None}


def _reason_failed(exc: BaseException) -> str:
    # The attack's own message is not published: it comes from code that saw the draw's model, and a record
    # is public before the reveal. Its type is enough to say what happened; the private log has the rest.
    return f"the attack did not complete on this draw ({type(exc).__name__}); the board's private log has the details"


def _score_draw(track, key: bytes, folder: Path, result, device: str) -> DrawOutcome:
    from reconbench.core.io import load_arrays
    from reconbench.core.sealed_run_verdict import published
    from reconbench.image import sealed_scores as sealed
    from reconbench.image.results import RECONSTRUCTIONS_FILE
    from reconbench.submissions.publiccopy import non_member_copies, public_index

    arrays = load_arrays(folder / RECONSTRUCTIONS_FILE)
    images, labels = arrays["images"], arrays["labels"]
    model_sha256 = track.target_model_sha256

    def search(imgs, members, threshold):
        return non_member_copies(imgs, members, public_index(track), threshold)

    _, other = sealed.carried(track, key, images, search)
    if other.size:
        # Counts only: which outputs copy a non-member would tell which are members (issue 43, item 3).
        return DrawOutcome(track=track.id, model_sha256=model_sha256, status="failed",
                           reason=f"{other.size} of {len(images)} reconstructions are within the extraction threshold of "
                                  "public images that are not members of this draw, and of no member: carried data "
                                  "(which ones is not said)")
    numbers = published(sealed.sealed_numbers(track, key, images, labels, device))
    outcome = DrawOutcome(track=track.id, model_sha256=model_sha256, status="scored", metrics=_metrics(result.payload),
                          membership=numbers["membership"], extraction=numbers["extraction"])
    return outcome.model_copy(update={"output_mac": output_mac(key, track.id, folder / RECONSTRUCTIONS_FILE)})


def run(submission: Path | str, master_key: bytes, *, out: Path, root: Path, device: str = "cpu",
        seal_key_path: Path | None = None, echo=None) -> SealedRunOutput:
    """Run a sealed submission on every draw of its twin and write its signed record (module docstring).
    `seal_key_path`: the key's file, hidden from the sandbox wherever it lies; `echo(line)`: progress lines."""
    from reconbench.core.sealed_records import sign_record
    from reconbench.core.sealed_run_verdict import run_verdict
    from reconbench.core.sealed_weights import opening
    from reconbench.core.seal import SealError
    from reconbench.core.signing import generate_key
    from reconbench.core.tracks import sealed_draws
    from reconbench.image.evaluation import evaluate
    from reconbench.image.sealed import members
    from reconbench.pipeline.isolation import sandbox
    from reconbench.submissions.sealed_submission import parse

    say = echo or (lambda line: None)
    sub = parse(submission)
    check_limit(sub, root)
    draws = sealed_draws(sub.twin)
    key = scoring_key(master_key, draws[0])
    with opening(master_key):
        for track in draws:  # a key that opens no draw (another board's, another season's) fails before any run
            try:
                members(track, key)
            except SealError as exc:
                raise SealedRunError(str(exc)) from None
    if sandbox.choose() is None:
        raise SealedRunError("the board runs a contributor's code only in the sandbox (bubblewrap), and there is none "
                             f"here ({sandbox.ENV_VAR}): nothing was run")
    folder = Path(out) / sub.season / sub.team / sub.run
    if folder.exists():
        raise SealedRunError(f"{folder}: already exists (the private output of a run is written once)")
    folder.mkdir(parents=True)
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="reconbench-sealed-run-") as tmp, \
            sandbox.hiding([p for p in (seal_key_path, Path(out).resolve(), tmp) if p]):
        # The result folders are signed by a key of this run only (the record is what the board vouches for).
        signer = Path(tmp) / "run.pem"
        generate_key(signer)
        for track in draws:
            say(f"{track.id}: running {sub.name} ({sub.scenario}, budget {sub.budget})")
            draw_dir = folder / track.id
            with opening(master_key):
                try:
                    done = evaluate(track_id=track.id, attack_spec=sub.spec, scenario=sub.scenario, seed=sub.seed,
                                    device=device, out=draw_dir, key_path=signer, config=dict(sub.options),
                                    budget=sub.budget, command=f"recon-submit seal run {sub.season}/{sub.team}/{sub.run}")
                except Exception as exc:  # noqa: BLE001 - the attack's failure is the draw's outcome; the board's is not
                    if type(exc).__name__ not in FAILED_ATTACK:
                        raise
                    (folder / f"{track.id}.error.txt").write_text(f"{type(exc).__name__}: {exc}\n", encoding="utf-8")
                    outcomes.append(DrawOutcome(track=track.id, model_sha256=track.target_model_sha256, status="failed",
                                                reason=_reason_failed(exc)))
                    say(f"{track.id}: failed ({type(exc).__name__})")
                    continue
                outcome = _score_draw(track, key, draw_dir, done.result, device)
            outcomes.append(outcome)
            say(f"{track.id}: {outcome.status}")
    source = _source_sha256(sub)
    verdict = run_verdict([o.model_dump(mode="json") for o in outcomes])
    record = SealedRun(season=sub.season, twin=sub.twin, open_twin=draws[0].seal.open_twin, team=sub.team, run=sub.run,
                       attack=SealedAttack(name=sub.name, source_sha256=source or None, options=dict(sub.options),
                                           budget=sub.budget, scenario=sub.scenario, seed=sub.seed),
                       device=device, ran_at=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), draws=outcomes,
                       tier=verdict.tier.word if verdict.tier is not None else None, extracts=verdict.members)
    signed = sign_record(record.model_dump(mode="json", by_alias=True, exclude={"signature"}), key)
    path = write_record(root, signed)
    return SealedRunOutput(SealedRun.model_validate(signed), path, folder)


def _source_sha256(sub) -> str | None:
    """An own attack's source hash as evaluate signs it (payload.attack.source_sha256): what an open entry of the
    same code carries, so the open track's hold can be lifted by this run (core/sealed_runs.confirmed)."""
    from reconbench.core.attack_source import attack_source

    if not sub.own:
        return None
    return attack_source(sub.spec).sha256


def write_record(root: Path, record: dict) -> Path:
    from reconbench.core.io import atomic_path

    path = record_path(root, record["season"], record["team"], record["run"])
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


# The board's private output travels (a CI artifact, which anyone who can read a public repository can download)
# only encrypted: AES-256-GCM (core/sealed_weights) under a key derived from the season's key, so before the reveal
# it is the board's alone, and after it anyone with the revealed season key opens it.
OUTPUT_LABEL = "reconbench-seal/run-output-archive"


def output_key(key: bytes) -> bytes:
    """The archive key of a season's run outputs (key: the season's key)."""
    return hmac.new(key, OUTPUT_LABEL.encode(), hashlib.sha256).digest()


def pack_output(folder: Path, master_key: bytes, season: str, dst: Path) -> Path:
    """The folder `folder` (a run output) as one encrypted archive `dst` (a tar under core/sealed_weights' format)."""
    import io
    import tarfile

    from reconbench.core.seal import season_key
    from reconbench.core.sealed_weights import seal_bytes

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(str(folder), arcname=".")
    key = season_key(master_key, season) if _scheme(season) == "v2" else master_key
    Path(dst).write_bytes(seal_bytes(buffer.getvalue(), output_key(key), f"{OUTPUT_LABEL}/{season}"))
    return Path(dst)


def unpack_output(src: Path, key: bytes, season: str, dest: Path) -> Path:
    """Open an archive of `pack_output` with the season's key (after the reveal: the revealed key) into `dest`
    (a new folder); only plain files and folders come out (tarfile's data filter)."""
    import io
    import tarfile

    from reconbench.core.sealed_weights import open_file

    plain = open_file(Path(src), output_key(key), f"{OUTPUT_LABEL}/{season}")
    Path(dest).mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(plain), mode="r:gz") as tar:
        tar.extractall(dest, filter="data")
    return Path(dest)


def _scheme(season: str) -> str:
    """The season's scheme, as its draws in the registry say (else registry/seasons.json)."""
    from reconbench.core.seasons import seasons
    from reconbench.core.tracks import all_tracks

    found = {t.seal.scheme for t in all_tracks() if t.seal is not None and t.seal.season == season}
    return found.pop() if len(found) == 1 else seasons().get(season, {}).get("scheme", "v1")
