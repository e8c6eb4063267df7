"""A sealed track's board section: what is sealed, when it is revealed, and each attack's membership
gap across the K draws (core/draws.py), from the sealed.json records CI wrote with the key
(submissions/checks/sealed.py). Reads only the validated reports: no key, no data."""

from __future__ import annotations

from reconbench.core.draws import across_draws, verdict

METRICS = ("ssim", "psnr", "mse")


def sealed_view(track, reports: list) -> dict | None:
    """None for an open track; else the facts and one row per (team, attack, scenario) with its draws."""
    seal = getattr(track, "seal", None)
    if seal is None:
        return None
    runs: dict[tuple, dict[int, dict]] = {}
    for report in reports:
        record = getattr(report, "sealed", None)
        if not record or report.trust == "failed" or record.get("group") != seal.group:
            continue
        payload = report.result.payload
        runs.setdefault((report.team, payload.attack.name, payload.scenario), {})[int(record["draw"])] = record
    rows = []
    for (team, attack, scenario), by_draw in sorted(runs.items()):
        per_metric = {}
        for metric in METRICS:
            found = [by_draw[d]["membership"].get(metric, {}) for d in sorted(by_draw)]
            if found and all(f.get("status") == "computed" for f in found):
                per_metric[metric] = across_draws([f["gap"] for f in found], [f["p"] for f in found])
        complete = len(by_draw) == seal.draws
        rows.append(dict(team=team, attack=attack, scenario=scenario, draws=len(by_draw), metrics=per_metric,
                         verdict=("leaks" if verdict(per_metric) else "no leak shown") if complete and per_metric
                         else f"partial: {len(by_draw)} of {seal.draws} draws"))
    return dict(seal=seal, rows=rows, metrics=METRICS)
