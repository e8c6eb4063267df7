"""A sealed twin's board: what is sealed, when it is revealed, and each attack's membership gap and
extraction count across the K draws (core/draws.py), from the sealed.json records CI wrote with the key
(submissions/checks/sealed.py). Reads only the validated reports: no key, no data.

Held is held here too (issue 43, item 5): a run with a held draw (the validator's holds, the
extraordinary-leakage one included, which sees the draw's gap from its sealed.json record) is listed
with its numbers and why it is held, and gets no verdict and no badge; a failed draw's numbers are not
shown at all, so its run has fewer than K draws and no verdict. A burned season's twin (core/seasons:
2026-s1, whose members are public) gives no verdict to any run: its draws are practice, numbers only."""

from __future__ import annotations

from reconbench.core.draws import across_draws, count_across_draws, verdict
from reconbench.core.seasons import burned, burned_why
from reconbench.core.verdict import EXTRACTS, held_to, label, tier

METRICS = ("ssim", "psnr", "mse")
POOLED = ("members", "n_members", "holdout", "n_holdout", "expected_members", "expected_holdout")


def sealed_view(track, reports: list) -> dict | None:
    """None for an open track; else the facts and one row per (team, attack, scenario) with its draws."""
    seal = getattr(track, "seal", None)
    if seal is None:
        return None
    runs: dict[tuple, dict[int, dict]] = {}
    holds: dict[tuple, list[str]] = {}
    for report in reports:
        record = getattr(report, "sealed", None)
        if not record or report.trust == "failed" or record.get("group") != seal.group:
            continue
        payload = report.result.payload
        run = (report.team, payload.attack.name, payload.scenario)
        runs.setdefault(run, {})[int(record["draw"])] = record
        if report.trust == "held":
            holds.setdefault(run, []).append(f"draw {int(record['draw']) + 1}: "
                                             f"{getattr(report, 'held_reason', None) or 'held by validation'}")
    practice = burned_why(seal.season) if burned(seal.season) else None
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
        held = holds.get((team, attack, scenario))
        # a verdict needs all K draws, none held, in a season that still seals its members
        t = _tier(per_metric, pooled) if complete and not held and practice is None else None
        pending = (f"held, no verdict: {'; '.join(held)}" if held else
                   "practice draws, no verdict" if practice is not None else
                   None if complete else f"no verdict yet: {len(by_draw)} of {seal.draws} draws")
        rows.append(dict(team=team, attack=attack, scenario=scenario, draws=len(by_draw), metrics=per_metric,
                         extraction=pooled, extraction_p=_count_p(pooled),
                         tier=t.key if t is not None else None,
                         verdict=label(t, pooled.members if t is EXTRACTS else None) if t is not None else None,
                         held=_held(t, per_metric, pooled), on_hold=bool(held), pending=pending))
    return dict(seal=seal, rows=rows, metrics=METRICS, practice=practice)


def _count_p(pooled) -> str | None:
    """The pooled count's p: the membership relabelling's, which decides "extracts", with the natural null's
    beside it as context; the natural one alone where the draws' records have no relabelling (2026-s1)."""
    if pooled is None:
        return None
    natural = f"natural-data {held_to(pooled.p)}"
    if pooled.relabel_p is None:
        return f"{natural} (context; no membership relabelling in these records)"
    return f"relabelling {held_to(pooled.relabel_p)}; {natural} (context)"


def _tier(per_metric: dict, pooled):
    """The entry's verdict tier across the draws (core/verdict.py): the count's on the pooled totals, the
    mean gap's on the metrics' Fisher-combined p (core/draws.verdict); None when neither was computed."""
    return tier(verdict(per_metric) if per_metric else None, pooled)


def _held(t, per_metric: dict, pooled) -> str | None:
    """The p the tier rests on, with the threshold it was held to (the count's, or the mean gap's deciding one)."""
    if t is EXTRACTS:
        return f"count, membership relabelling {held_to(pooled.relabel_p)}"
    if not per_metric:
        return None
    name = min(per_metric, key=lambda m: (per_metric[m].p, m))  # the metric core/draws.verdict decides on
    return f"{name.upper()} {held_to(per_metric[name].p, len(per_metric))} (Fisher over the draws)"


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
        from reconbench.leaderboard.sealed_runs_view import with_runs  # the board's run records (v2 twins)

        pages.append(dict(path=f"leaderboards/{group}.md", sealed=with_runs(sealed_view(draws[0], reports), group),
                          draws=[dict(track=t, count=counts.get(t.id, 0)) for t in draws]))
    return pages
