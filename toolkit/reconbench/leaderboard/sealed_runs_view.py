"""A sealed twin's page, from the board's sealed run records (core/sealed_runs; `recon-submit seal run`).

On a v2 season's twin the board runs each sealed submission on every draw and signs one record of numbers per
run. The page lists every run whose record passes submissions/sealed_run_check (the board's signature, the
twin's draws, the run limit): one row per decided run (team, attack, the tier word with its count, the pooled
membership relabelling p, the mean gap across the draws with its 95% interval, the pooled extraction count),
and apart from them the runs with a held or failed draw, with no verdict. Runs are never ranked: a run's
outcome is evidence about its attack, and the order of the rows is the team's and the run's name.

Reads the records only (no key, no data). The site build tells this module where the submissions are
(`use_root`); a build without it shows no run.
"""

from __future__ import annotations

from pathlib import Path

from reconbench.core.verdict import held_to

_ROOT: list[Path | None] = [None]


def use_root(root: Path | None) -> None:
    """The submissions folder of this site build (leaderboard/build.py)."""
    _ROOT[0] = Path(root) if root is not None else None


def _attack_label(record) -> str:
    from reconbench.core.attack_source import own_attack_label

    if record.attack.source_sha256:
        return own_attack_label(f"attack.py:{record.attack.name}", record.attack.name, record.team)
    return record.attack.name


def runs_view(group: str, root: Path | None = None) -> dict | None:
    """{decided: [...], undecided: [...]} for the twin `group`; None when no valid record names it."""
    from reconbench.core.sealed_run_verdict import run_verdict
    from reconbench.core.sealed_runs import SealedRun
    from reconbench.submissions.sealed_run_check import check_runs

    root = root if root is not None else _ROOT[0]
    if root is None:
        return None
    import json

    decided, undecided = [], []
    for check in check_runs(root):
        if not check.ok:
            continue  # validation lists it as failed; the page shows only the board's own records
        record = SealedRun.model_validate(json.loads(Path(check.path).read_text(encoding="utf-8")))
        if record.twin != group:
            continue
        row = dict(team=record.team, run=record.run, attack=_attack_label(record), scenario=record.attack.scenario,
                   budget=record.attack.budget, draws=len(record.draws), ran_at=record.ran_at)
        verdict = run_verdict([d.model_dump(mode="json") for d in record.draws])
        if verdict.tier is None:
            not_scored = [d for d in record.draws if d.status != "scored"]
            row["why"] = "; ".join(f"{d.track}: {d.status}" + (f" ({d.reason})" if d.reason else "") for d in not_scored)
            undecided.append(row)
            continue
        gap = verdict.per_metric.get("ssim")
        pooled = verdict.pooled
        row.update(tier=verdict.tier.key, verdict=verdict.word,
                   held=held_to(pooled.p) if pooled is not None and verdict.members is not None else None,
                   relabel=held_to(verdict.relabel_p) if verdict.relabel_p is not None else None,
                   gap=gap, extraction=pooled, extraction_p=held_to(pooled.p) if pooled is not None else None)
        decided.append(row)
    if not decided and not undecided:
        return None
    order = lambda r: (r["team"], r["run"])  # noqa: E731 - never ranked: by name
    return dict(decided=sorted(decided, key=order), undecided=sorted(undecided, key=order))


def with_runs(view: dict | None, group: str) -> dict | None:
    """A twin page's `sealed` view with its run records (`runs`) added."""
    if view is None:
        return None
    return dict(view, runs=runs_view(group))
