"""The site's view of a reproduction record: published beside the entry's page and linked from it.

The page separates what the reproducer's signing job computed itself (the re-scored metrics, its own
toolkit commit) from what the job that ran the attack reported (device, hardware, wall time, that
job's toolkit commit, the sandbox): the latter is shown as "reported by the run job, not verified"."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from reconbench.reproduction.record import RECORD_FILE, RecordError, read_record


def record_for(row: dict) -> tuple[str, bytes, dict] | None:
    """(docs path, file bytes, facts for the page) when a reproduced entry has its record; else None.

    Only entries whose trust is "reproduced" get a link: validation has verified the record."""
    if row.get("trust") != "reproduced":
        return None
    path = Path(row["entry_dir"]) / RECORD_FILE
    try:
        signed = read_record(path)
    except RecordError:
        return None
    rec = signed.record
    page = PurePosixPath(row["page"])  # entries/<team>/<entry>.md, or .../<entry>/index.md
    docs = str((page.parent if page.name == "index.md" else page.with_suffix("")) / RECORD_FILE)
    run = rec.reported  # what the job that ran the attack reported: shown as such, never as verified
    facts = {"path": docs, "commit": rec.toolkit_commit or rec.toolkit_version, "created": rec.created.date().isoformat(),
             "key_id": signed.signature.key_id,
             "reported": {"device": run.device, "hardware": run.hardware, "wall_seconds": run.wall_seconds,
                          "commit": run.toolkit_commit, "sandbox": run.sandbox}}
    return docs, path.read_bytes(), facts
