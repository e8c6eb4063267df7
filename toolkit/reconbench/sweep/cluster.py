"""Ray, started for a sweep or joined: a local instance by default, `address` for a cluster.

Local Ray stays on this machine: no dashboard, no usage-stats report (RAY_USAGE_STATS_ENABLED=0),
the node bound to 127.0.0.1, worker logs not streamed into the driver's terminal (they would tear
the progress bar). Workers of a local instance are started by it and inherit the driver's
environment, so PYTHONPATH is set first to the toolkit this process imports (a checkout's
`toolkit/` must win over an installed copy, or jobs would run other code than the driver's).
A Ray instance already running in this process (a test fixture, a notebook) is reused as is.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class ClusterError(RuntimeError):
    """Ray is missing or cannot be started/joined."""


# reconbench is not on PyPI: the extra is installed from the checkout (the venv `make` made).
RAY_MISSING = ("Ray is not installed: install the cluster extra from your checkout "
               "(.venv/bin/pip install -e '.[cluster]'; `make test` installs it too), or pass --local "
               "to run the jobs one after another without Ray")


def import_ray():
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # never phone home, in tests or anywhere
    try:
        import ray
    except ImportError:
        raise ClusterError(RAY_MISSING) from None
    return ray


@contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None) -> Iterator[Any]:
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    options = dict(include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        if address:
            ray.init(address=address, **options)
        else:
            toolkit = str(Path(__file__).resolve().parents[2])
            path = os.environ.get("PYTHONPATH", "")
            if toolkit not in path.split(os.pathsep):
                os.environ["PYTHONPATH"] = toolkit + (os.pathsep + path if path else "")
            ray.init(num_cpus=num_cpus or os.cpu_count() or 1, _node_ip_address="127.0.0.1", **options)
    except Exception as exc:  # ray raises ConnectionError, RuntimeError, ValueError...
        raise ClusterError(f"cannot {'join Ray at ' + address if address else 'start a local Ray instance'}: "
                           f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
    try:
        yield ray
    finally:
        ray.shutdown()


def resources(device: str, gpus_per_job: float = 1.0) -> dict:
    """What one job asks Ray for: a CPU, and a GPU (or a share of one) when it runs on CUDA."""
    return {"num_cpus": 1, "num_gpus": gpus_per_job if str(device).startswith("cuda") else 0}


def ray_map(fn: Callable, calls: Sequence[tuple], *, device: str = "cpu", gpus_per_job: float = 1.0,
            address: str | None = None, num_cpus: int | None = None,
            on_done: Callable[[int, Any], None] | None = None, return_errors: bool = False) -> list:
    """[fn(*args) for args in calls], each call a Ray task; results in call order.

    `fn` must be importable by module path on the workers (a module-level function of reconbench).
    `on_done(index, result)` runs in the driver as each task finishes (progress bars, storing).
    A task that fails at the Ray level (its worker died, it raised) raises here, or with
    `return_errors` its exception is that call's result. Interrupted: the rest is cancelled.
    """
    with ray_session(address, num_cpus) as ray:
        remote = ray.remote(fn).options(**resources(device, gpus_per_job), max_retries=0)
        refs = [remote.remote(*args) for args in calls]
        index = {ref: i for i, ref in enumerate(refs)}
        out: list = [None] * len(refs)
        pending = list(refs)
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                i = index[ready[0]]
                try:
                    out[i] = ray.get(ready[0])
                except Exception as exc:
                    if not return_errors:
                        raise
                    out[i] = exc
                if on_done:
                    on_done(i, out[i])
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
        return out
