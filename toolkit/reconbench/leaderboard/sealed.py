"""A sealed twin's board: what is sealed, when it is revealed, and each attack's membership gap and
extraction count across the K draws (core/draws.py), from the sealed.json records CI wrote with the key
(submissions/checks/sealed.py). Reads only the validated reports: no key, no data."""

from __future__ import annotations

from reconbench.core.draws import across_draws, count_across_draws, verdict
from reconbench.core.extraction import format_p

METRICS = ("ssim", "psnr", "mse")
POOLED = ("members", "n_members", "holdout", "n_holdout", "expected_members", "expected_holdout")


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
        counts = [by_draw[d].get("extraction") or {} for d in sorted(by_draw)]
        pooled = count_across_draws(counts) if all(all(k in c for k in POOLED) for c in counts) else None
        complete = len(by_draw) == seal.draws
        rows.append(dict(team=team, attack=attack, scenario=scenario, draws=len(by_draw), metrics=per_metric,
                         extraction=pooled, extraction_p=format_p(pooled.p) if pooled is not None else None,
                         verdict=_verdict(per_metric, pooled) if complete else f"partial: {len(by_draw)} of {seal.draws} draws"))
    return dict(seal=seal, rows=rows, metrics=METRICS)


def _verdict(per_metric: dict, pooled) -> str:
    """The gap's verdict across the draws, and the count's badge on the pooled totals."""
    said = ("leaks" if verdict(per_metric) else "no leak shown") if per_metric else "no gap computed"
    return said + (f"; extracts {pooled.members} members" if pooled is not None and pooled.extracts else "")


def nav_links(tracks: list) -> list[tuple[str, str]]:
    """A family's leaderboard nav links: one per open track, and one per sealed twin in place of its K
    draws (the twin's page, leaderboards/<group>.md, links each draw's board)."""
    return [(title, f"leaderboards/{title}.md") for title, _ in grouped_nav(tracks, "leaderboards/{}.md")]


def grouped_nav(tracks: list, page: str) -> list[tuple]:
    """Nav items (title, page.format(track id)) with a sealed twin's K draws nested under one item named
    after the twin (the model cards: one card per draw, one nav entry per twin)."""
    out, groups = [], {}
    for track in tracks:
        seal = getattr(track, "seal", None)
        if seal is None:
            out.append((track.id, page.format(track.id)))
            continue
        if seal.group not in groups:
            groups[seal.group] = []
            out.append((seal.group, groups[seal.group]))
        groups[seal.group].append((track.id, page.format(track.id)))
    return out


def twin_pages(tracks: list, reports: list, counts: dict[str, int]) -> list[dict]:
    """One page per sealed twin: its facts, its draws' boards (with their entry counts) and the across-draw rows."""
    groups: dict[str, list] = {}
    for track in tracks:
        if getattr(track, "seal", None) is not None:
            groups.setdefault(track.seal.group, []).append(track)
    pages = []
    for group, draws in sorted(groups.items()):
        draws.sort(key=lambda t: t.seal.draw)
        pages.append(dict(path=f"leaderboards/{group}.md", sealed=sealed_view(draws[0], reports),
                          draws=[dict(track=t, count=counts.get(t.id, 0)) for t in draws]))
    return pages
