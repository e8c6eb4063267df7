"""Run a grid's jobs, each one `reconbench.image.evaluation.evaluate` call, on Ray or in this process.

Output folder (OUT):
    OUT/results/<job id>/      the job's signed result folder, exactly what `evaluate --out` writes
    OUT/failed/<job id>.json   the last failure of a job (error line + traceback); gone once it succeeds
    OUT/summary.json           machine-readable summary of the last run (written atomically)

A job counts as done when OUT/results/<job id>/ verifies (signature, reconstruction hash) and its
payload is that job's (track, attack, scenario, seed); a rerun skips those and retries the rest. A
worker evaluates into a temporary folder of its own and hands the files back; the driver writes
them with io.atomic_dir, so Ctrl-C or a killed worker never leaves a half-written result (and no
shared file system is needed on a cluster). One job's exception is that job's failure, never the
sweep's: the worker catches it and reports its first line.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from reconbench.core.io import atomic_dir, write_json
from reconbench.image.results import RESULT_FILE, ResultError, verify_result_dir
from reconbench.sweep.grid import Job

RESULTS, FAILED, SUMMARY = "results", "failed", "summary.json"
STATUSES = ("done", "skipped", "failed", "interrupted")


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def job_command(job: Job, device: str) -> str:
    """The `recon-submit evaluate` line that reruns this job by hand (recorded in provenance)."""
    from reconbench.api import evaluate_command

    sets = [f"{key}={json.dumps(value)}" for key, value in sorted(job.options.items())]
    return evaluate_command(job.track, job.attack, job.scenario, job.seed, device, sets, budget=job.budget or "default",
                            surrogate=job.surrogate)


def run_job(params: dict, key_path: str, device: str, weights_dir: str | None = None) -> dict:
    """One job (in a Ray worker, or in this process): evaluate() into a temporary folder, return its files."""
    import tempfile

    from reconbench.image.evaluation import evaluate

    job = Job.from_params(params)
    t0 = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="reconbench-job-") as tmp:
            output = evaluate(
                track_id=job.track, attack_spec=job.attack, scenario=job.scenario, seed=job.seed, device=device,
                out=Path(tmp) / "result", key_path=Path(key_path), config=dict(job.options), budget=job.budget or "default",
                command=job_command(job, device), weights_dir=Path(weights_dir) if weights_dir else None,
                surrogate=job.surrogate,
            )
            files = {p.name: p.read_bytes() for p in sorted(output.folder.iterdir()) if p.is_file()}
        return {"status": "done", "files": files, "entry_id": output.result.payload.entry_id,
                "seconds": time.perf_counter() - t0}
    except Exception as exc:  # the job's failure, reported; the sweep goes on
        return {"status": "failed", "error": first_line(exc), "traceback": traceback.format_exc(),
                "seconds": time.perf_counter() - t0}


@dataclass
class Outcome:
    job: Job
    status: str  # one of STATUSES
    seconds: float | None = None
    entry_id: str | None = None
    error: str | None = None

    def record(self, out: Path) -> dict:
        done = self.status in ("done", "skipped")
        return {"id": self.job.id, **self.job.params(), "status": self.status, "seconds": self.seconds,
                "entry_id": self.entry_id, "error": self.error,
                "result": str(Path(out) / RESULTS / self.job.id) if done else None}


@dataclass
class Summary:
    grid: str
    out: Path
    device: str
    backend: str
    outcomes: list[Outcome] = field(default_factory=list)
    not_applicable: int = 0
    started: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat())
    wall_seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        counts = {s: sum(o.status == s for o in self.outcomes) for s in STATUSES}
        return {**counts, "not_applicable": self.not_applicable}

    def to_dict(self) -> dict:
        return {"schema_version": 1, "grid": self.grid, "out": str(self.out), "device": self.device,
                "backend": self.backend, "started": self.started, "wall_seconds": round(self.wall_seconds, 3),
                "counts": self.counts(), "jobs": [o.record(self.out) for o in self.outcomes]}

    def write(self) -> Path:
        path = Path(self.out) / SUMMARY
        write_json(path, self.to_dict())
        return path


def done_result(out: Path, job: Job):
    """The job's verified result (ResultFile), or None when it has none or one that does not check out."""
    folder = Path(out) / RESULTS / job.id
    if not (folder / RESULT_FILE).is_file():
        return None
    try:
        result = verify_result_dir(folder)
    except ResultError:
        return None
    p = result.payload
    stolen = p.surrogate.method if p.surrogate else None
    mine = (p.track, p.attack.name, p.scenario, p.provenance.seed, stolen) == (
        job.track, _attack_name(job.attack), job.scenario, job.seed, job.surrogate)
    return result if mine else None


def _attack_name(spec: str) -> str:
    from reconbench.sweep.grid import attack_meta

    return attack_meta(spec).name


def _store(out: Path, job: Job, reply: dict) -> Outcome:
    """Write a worker's reply: result files atomically into OUT/results/<id>, or the failure record."""
    folder, failed = Path(out) / RESULTS / job.id, Path(out) / FAILED / f"{job.id}.json"
    if reply.get("status") == "done":
        try:
            if folder.exists():  # a result that did not verify: kept aside, never overwritten
                folder.rename(folder.with_name(f"{job.id}.invalid-{time.strftime('%Y%m%d%H%M%S')}"))
            with atomic_dir(folder) as tmp:
                for name, data in reply["files"].items():
                    (tmp / Path(name).name).write_bytes(data)
            verify_result_dir(folder)
            failed.unlink(missing_ok=True)
            return Outcome(job, "done", reply.get("seconds"), reply.get("entry_id"))
        except (OSError, ResultError) as exc:
            reply = {"status": "failed", "error": first_line(exc), "traceback": traceback.format_exc(),
                     "seconds": reply.get("seconds")}
    write_json(failed, {"job": job.params(), "id": job.id, "error": reply.get("error"),
                        "traceback": reply.get("traceback"), "when": datetime.now(timezone.utc).isoformat()})
    return Outcome(job, "failed", reply.get("seconds"), error=reply.get("error") or "unknown error")


def run_sweep(jobs: list[Job], *, out: Path, key_path: Path, device: str = "cpu", backend: str = "ray",
              address: str | None = None, num_cpus: int | None = None, gpus_per_job: float = 1.0,
              weights_dir: Path | None = None, grid: str = "grid", not_applicable: int = 0,
              on_start: Callable[[int], None] | None = None, on_done: Callable[[Outcome], None] | None = None) -> Summary:
    """Run the jobs not done yet; always writes OUT/summary.json (also when interrupted), then returns it."""
    if backend not in ("ray", "local"):
        raise ValueError(f"backend '{backend}': expected ray or local")
    from reconbench.core.signing import load_private_key

    load_private_key(key_path)  # a missing or bad key fails the sweep now, not every job later
    out = Path(out)
    summary = Summary(grid=grid, out=out, device=device, backend=backend, not_applicable=not_applicable)
    t0 = time.perf_counter()
    todo = []
    for job in jobs:
        result = done_result(out, job)
        if result is not None:
            summary.outcomes.append(Outcome(job, "skipped", entry_id=result.payload.entry_id))
        else:
            todo.append(job)
    if todo and backend == "ray":  # no Ray: one clear error now, not every job "interrupted" in a summary
        from reconbench.sweep.cluster import import_ray

        import_ray()
    if on_start:
        on_start(len(todo))
    finished: set[str] = set()

    def settle(job: Job, reply: dict) -> None:
        outcome = _store(out, job, reply)
        summary.outcomes.append(outcome)
        finished.add(job.id)
        if on_done:
            on_done(outcome)

    args = (str(Path(key_path).resolve()), device, str(weights_dir) if weights_dir else None)
    try:
        if todo and backend == "local":
            for job in todo:
                settle(job, run_job(job.params(), *args))
        elif todo:
            _run_on_ray(todo, args, settle, address=address, num_cpus=num_cpus, gpus_per_job=gpus_per_job)
    finally:  # Ctrl-C included: what did not finish is 'interrupted', and the summary is written
        summary.outcomes += [Outcome(job, "interrupted") for job in todo if job.id not in finished]
        order = {job.id: i for i, job in enumerate(jobs)}
        summary.outcomes.sort(key=lambda o: order[o.job.id])
        summary.wall_seconds = time.perf_counter() - t0
        summary.write()
    return summary


def _run_on_ray(todo: list[Job], args: tuple, settle: Callable, *, address, num_cpus, gpus_per_job) -> None:
    from reconbench.sweep.cluster import ray_map

    def done(i: int, reply) -> None:
        if isinstance(reply, BaseException):  # the worker died (OOM, signal) or Ray failed the task
            reply = {"status": "failed", "error": first_line(reply), "traceback": "".join(traceback.format_exception(reply))}
        settle(todo[i], reply)

    ray_map(run_job, [(job.params(), *args) for job in todo], device=args[1], gpus_per_job=gpus_per_job,
            address=address, num_cpus=num_cpus, on_done=done, return_errors=True)
