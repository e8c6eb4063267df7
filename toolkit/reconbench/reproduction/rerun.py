"""Load an entry for reproduction, re-run it from its signed provenance, score a run, compare.

The re-run is `evaluate` with everything taken from the signed payload: track, scenario, seed,
the full attack configuration and budget preset, and the attack itself: a registered attack by
name (the toolkit's code at the reproducer's commit), or a bring-your-own attack from the entry's
`attack/` folder, whose hash must equal the signed `attack.source_sha256` before anything runs.
Scoring is separate (`score_run`) so that the workflow can score in a job that runs no
contributor code: it reads only the run's reconstructions and its result.json (JSON).
What differs by modality (which attacks an entry may name, how it re-runs, how a run is scored) is
the modality plug-in's (reconbench.modalities: image/reproduce.py, text/reproduce.py); the
tolerances and the record are the same for both.
"""

from __future__ import annotations

import contextlib
import re
import tempfile
from pathlib import Path

from reconbench.modalities import for_result
from reconbench.pipeline.isolation.limits import LimitError, recorded_overrides
from reconbench.reproduction.entry import Entry, ReproduceError, payload_sha256, team_keys
from reconbench.reproduction.record import ReproductionRecord
from reconbench.image.results import RESULT_FILE, ResultError, payload_dict
from reconbench.core.signing import SigningError, verify_payload

__all__ = ["Entry", "MAX_RERUN_THREADS", "ReproduceError", "load_entry", "payload_sha256", "recorded_threads", "rerun",
           "score_run"]


def load_entry(entry_dir: Path) -> Entry:
    """The entry's signed payload (signature checked against its team's keys) and the attack to run."""
    from reconbench.text.results import parse_any_result

    folder = Path(entry_dir)
    if not (folder / RESULT_FILE).is_file():
        raise ReproduceError(f"{folder}: not an entry folder (no {RESULT_FILE} in it); pass submissions/<team>/<entry-id>")
    try:
        result = parse_any_result(folder / RESULT_FILE)
        verify_payload(payload_dict(result), result.signature.model_dump(), trusted_keys=team_keys(folder.parent))
    except ResultError as exc:  # its message names the file
        raise ReproduceError(str(exc)) from None
    except SigningError as exc:
        raise ReproduceError(f"{folder / RESULT_FILE}: {exc}") from None
    spec = for_result(result).reproduction_spec(folder, result)
    return Entry(folder=folder, team=folder.parent.name, result=result, spec=spec, payload_sha256=payload_sha256(result))


def rerun(entry: Entry, out: Path, *, device: str = "cpu", max_seconds: float | None = None,
          weights_dir: Path | None = None, progress=None) -> Path:
    """Run the entry's attack again into `out` (a result folder signed by a throwaway key), with the
    CPU thread count the entry recorded."""
    p = entry.result.payload
    if max_seconds is not None and p.provenance.wall_seconds > max_seconds:
        raise ReproduceError(f"{entry.folder}: recorded wall time {p.provenance.wall_seconds:.0f} s is over the "
                             f"budget of {max_seconds:.0f} s; not re-run here")
    threads = recorded_threads(p.provenance.hardware)
    if threads is not None and threads > MAX_RERUN_THREADS:  # a forged count would spawn that many threads here
        raise ReproduceError(f"{entry.folder}: the entry records {threads} CPU threads, more than the {MAX_RERUN_THREADS} "
                             "a re-run takes; not re-run here")
    try:  # before anything runs: the limits it records are its claim (RERUN_CEILING)
        recorded_overrides(p.attack.budget or "default", getattr(p.provenance, "limits", None))
    except LimitError as exc:
        raise ReproduceError(f"{entry.folder}: provenance.limits: {exc}; not re-run here") from None
    with _threads_of(p.provenance.hardware):
        return _rerun(entry, out, device=device, weights_dir=weights_dir, progress=progress)


MAX_RERUN_THREADS = 256  # the largest CPU thread count a re-run takes from an entry (more: refused)


def recorded_threads(hardware: str) -> int | None:
    """The "N CPU threads" the run recorded in provenance.hardware, or None."""
    found = re.search(r"(\d+) CPU threads", hardware or "")
    return int(found.group(1)) if found else None


@contextlib.contextmanager
def _threads_of(hardware: str):
    """The run's recorded CPU thread count ("..., N CPU threads"), for the re-run: a CPU run's floating-point
    sums depend on it (Deep-Leakage's example, made with 1 thread, differs in 53% of its pixels when re-run
    with 2, with or without the sandbox). The attack's process takes the evaluator's count."""
    import torch

    threads = recorded_threads(hardware)
    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _rerun(entry: Entry, out: Path, *, device: str, weights_dir: Path | None, progress) -> Path:
    from reconbench.core.signing import generate_key

    p = entry.result.payload
    common = dict(track_id=p.track, scenario=p.scenario, seed=p.provenance.seed, device=device, out=out,
                  budget=p.attack.budget or "default", progress=progress, command=f"recon-submit reproduce submissions/{entry.team}/{entry.folder.name}")  # no machine path
    raised = recorded_overrides(p.attack.budget or "default", getattr(p.provenance, "limits", None))
    if raised:  # the run raised its limits (evaluate --limit): the re-run gets the same
        common["limits"] = raised
    with tempfile.TemporaryDirectory() as tmp:
        key = Path(tmp) / "throwaway.pem"  # the run's own signature means nothing; the record is what counts
        generate_key(key)
        for_result(entry.result).rerun(entry, key=key, config=dict(p.attack.config), weights_dir=weights_dir, **common)
    return Path(out)


def score_run(entry: Entry, run_dir: Path, *, device: str = "cpu", weights_dir: Path | None = None) -> ReproductionRecord:
    """Score a run's reconstructions against the entry's target set and compare with the claim."""
    return for_result(entry.result).score_run(entry, Path(run_dir), device=device, weights_dir=weights_dir)
