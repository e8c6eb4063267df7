"""Run a whole study from Python: plan, answer (cache first), aggregate, sign, write.

    from reconbench.judge.api import run_study
    from reconbench.judge.runner import Options
    out = run_study(["submissions/t/a", "submissions/t/b"], Options(model="gpt-4o"), team="t", key_path=key)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from reconbench.judge import DEFAULT_ROOT
from reconbench.judge.cache import AnswerCache, default_cache_dir
from reconbench.judge.client import CallFailed, Endpoint
from reconbench.judge.runner import Options, Plan, Tally, plan_study, run_plan
from reconbench.judge.study import build_payload, write_study


@dataclass
class StudyOutput:
    path: Path
    payload: dict
    tally: Tally


def finish(plan: Plan, endpoint: Endpoint, cache: AnswerCache, *, team: str, key_path: Path, out_root: Path,
           title: str | None = None, progress: Callable[[Tally], None] | None = None) -> StudyOutput:
    from reconbench.judge.study import check_title
    from reconbench.core.signing import load_private_key

    check_title(title)
    key = load_private_key(key_path)  # before any call: a bad key must not cost a study's worth of calls
    records, tally = run_plan(plan, endpoint, cache, progress)
    if tally.failed:
        raise CallFailed(f"{tally.failed} of {len(plan.calls)} calls failed after every retry (the {tally.done + tally.cached} "
                         "answered ones are cached): run the same command again to ask only the failed ones")
    payload = build_payload(plan, records, team=team, title=title, endpoint=endpoint.public_url())
    path = write_study(Path(out_root) / payload["study_id"], payload, key)
    return StudyOutput(path, payload, tally)


def run_study(entry_dirs: list[Path], options: Options, *, team: str, key_path: Path,
              endpoint: Endpoint | None = None, cache_dir: Path | None = None, out_root: Path = Path(DEFAULT_ROOT),
              title: str | None = None, progress: Callable[[Tally], None] | None = None) -> StudyOutput:
    plan = plan_study([Path(d) for d in entry_dirs], options)
    return finish(plan, endpoint or Endpoint(), AnswerCache(cache_dir or default_cache_dir()), team=team,
                  key_path=key_path, out_root=out_root, title=title, progress=progress)
