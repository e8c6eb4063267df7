"""One reproduction end to end (what `recon-submit reproduce` calls; usable from Python)."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from reconbench.modalities import for_result
from reconbench.reproduction.record import (RECORD_FILE, RecordError, ReproductionRecord, SignedRecord, reproducer_keys,
                                            write_record)
from reconbench.reproduction.rerun import load_entry, rerun, score_run
from reconbench.core.envelope import Signature
from reconbench.core.signing import check_key_file, load_private_key, public_key_b64, sign_payload


@dataclass(frozen=True)
class Outcome:
    record: ReproductionRecord | None  # None after --run-only
    record_path: Path | None  # where the signed record was written, if a key was given
    run_dir: Path | None


def require_sandboxed(record: ReproductionRecord, entry) -> None:
    """A record is signed only for a re-run made in the OS sandbox (provenance.sandbox "bubblewrap <version>",
    as the run reported it): outside it, the attack's process could have reached the target model, the
    target set or the evaluator, and the reconstructions would prove nothing. A modality whose re-runs
    run no code of the entry's says so (RERUN_NEEDS_SANDBOX: text, whose entries name a registered
    text attack only)."""
    if not for_result(entry.result).RERUN_NEEDS_SANDBOX:
        return
    sandbox = record.reported.sandbox or "none"
    if not sandbox.startswith("bubblewrap "):
        raise RecordError(f"{entry.folder}: the re-run was made without the sandbox (provenance.sandbox: {sandbox}); "
                          "a reproduction record is signed only for a sandboxed re-run (install bubblewrap: docs/sandbox.md)")


def seen(record: ReproductionRecord, entry, made_here: bool) -> ReproductionRecord:
    """The record, saying how the signer came by the run; a handed-in run that did not make the entry's
    own file is not a reproduction of it (reproduction/compare.py)."""
    from reconbench.reproduction.compare import reconstruction_problems

    run_seen = "same-invocation" if made_here else "handed-in"
    problems = record.problems + reconstruction_problems(entry.result.payload.reconstructions.sha256,
                                                         record.reconstructions_sha256, run_seen)
    return record.model_copy(update={"run_seen": run_seen, "problems": problems,
                                     "verdict": "not-reproduced" if problems else record.verdict})


def sign_record(record: ReproductionRecord, key) -> SignedRecord:
    return SignedRecord(record=record, signature=Signature(**sign_payload(record.model_dump(mode="json"), key)))


def require_sandbox_available(entry) -> None:
    """Before anything runs: a re-run whose record will be signed needs the OS sandbox here, so the
    entry's code never runs beside the reproducer's key (RECONBENCH_SANDBOX=none, or auto where bwrap
    is missing, e.g. macOS: refused; a bwrap that cannot start fails before the attack starts)."""
    if not for_result(entry.result).RERUN_NEEDS_SANDBOX:
        return
    from reconbench.pipeline.isolation import sandbox

    with sandbox.quiet():
        box = sandbox.choose()
    if box is None:
        raise RecordError(f"{entry.folder}: `reproduce --key` re-runs the entry's attack in the bubblewrap sandbox, and "
                          "there is none here (reproduction needs Linux with bubblewrap: docs/sandbox.md); nothing was run")


def _listed_public_key(key_path: Path, reproducers: Path | None) -> None:
    """The key's public half (its .pub file, where there is one) is a listed reproducer's: checked
    before the run without reading the private key."""
    from reconbench.core.signing import public_key_path

    pub = public_key_path(Path(key_path))
    if pub.is_file():
        words = pub.read_text(encoding="ascii", errors="replace").split()
        if len(words) >= 2 and words[1] not in reproducer_keys(reproducers):
            raise RecordError(f"{key_path}: not a reproducer key listed in the reproducers file; "
                              "a record it signs would not be accepted, so nothing was written (only the keys "
                              "in maintainers/reproducers.toml sign records; run without --key to see the comparison)")


def reproduce_entry(entry_dir: Path, *, key_path: Path | None = None, record_path: Path | None = None,
                    run_only: Path | None = None, from_run: Path | None = None, max_seconds: float | None = None,
                    reproducers: Path | None = None, device: str = "cpu", weights_dir: Path | None = None,
                    progress=None) -> Outcome:
    """The private key is read only to sign, after the entry's attack (and every process it started)
    has ended; before the run, only its file's first line and its .pub are checked."""
    entry = load_entry(entry_dir)  # signature and attack source checked before anything runs
    signing = key_path is not None and run_only is None
    if signing:
        check_key_file(key_path)  # fail before a long run
        _listed_public_key(key_path, reproducers)
        if from_run is not None:
            raise RecordError(f"{from_run}: reproduce signs only a re-run it made itself, in its own sandbox: a run "
                              "folder handed in is its maker's word (its sandbox, its machine, its bytes: the entry's "
                              "own file copied reads as a perfect re-run). Re-run it here: recon-submit reproduce "
                              "ENTRY --key K (--from-run without --key compares a run folder, unsigned)")
        require_sandbox_available(entry)
    if run_only is not None:
        return Outcome(None, None, rerun(entry, run_only, device=device, max_seconds=max_seconds,
                                         weights_dir=weights_dir, progress=progress))
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = from_run or rerun(entry, Path(tmp) / "run", device=device, max_seconds=max_seconds,
                                    weights_dir=weights_dir, progress=progress)
        record = seen(score_run(entry, run_dir, device=device, weights_dir=weights_dir), entry, from_run is None)
    if not signing:
        return Outcome(record, None, None)
    require_sandboxed(record, entry)
    key = load_private_key(key_path)  # the attack's process tree is gone (AttackProcess waited for it)
    if public_key_b64(key.public_key()) not in reproducer_keys(reproducers):
        raise RecordError(f"{key_path}: not a reproducer key listed in the reproducers file; "
                          "a record it signs would not be accepted, so nothing was written (only the keys "
                              "in maintainers/reproducers.toml sign records; run without --key to see the comparison)")
    path = Path(record_path) if record_path else Path(entry_dir) / RECORD_FILE
    write_record(path, sign_record(record, key))
    return Outcome(record, path, None)
