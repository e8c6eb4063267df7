"""Site pages of the judge studies (judgements/<study-id>/study.json): an index and a page per study.

Only studies that pass `reconbench.judge.check` are published; the others are listed as failed with
the reason. A published study is shown as self-reported (the signer's claim) unless a maintainer's
re-run of it agrees (reconbench.judge.rerun), and says which on its page and in the index. A study page: who judged (the model as the endpoint reported it), the prompt, the
aggregates table per order mode, a Plotly bar chart of Pred Rate per condition, the position-bias
chart, and a gallery of the first targets with their candidates and the votes each got.
Everything contributor-controlled goes through the autoescaped templates (pages.py).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
from markupsafe import Markup

from reconbench.leaderboard import charts
from reconbench.leaderboard.frame import entry_page
from reconbench.leaderboard.gallery import grid_png

log = logging.getLogger(__name__)

JUDGEMENTS_ENV = "RECONBENCH_JUDGEMENTS"
INDEX = "judgements/index.md"
GALLERY_TARGETS = 6  # targets shown per study: enough to see what the judge saw
MODE_TITLE = {"random": "randomised order (seeded per repeat)", "fixed": "fixed order (the SoK's)"}


def judgements_root(default: Path) -> Path:
    return Path(os.environ.get(JUDGEMENTS_ENV) or default)


def study_page(study_id: str) -> str:
    return f"judgements/{study_id}.md"  # study ids are slugs ([a-z0-9._-]), checked by the schema


def labels(payload) -> list[str]:
    names = [c.attack for c in payload.conditions]
    return [n if names.count(n) == 1 else f"{n} ({c.entry_id})" for n, c in zip(names, payload.conditions)]


def pred_rate_figure(payload, names: list[str]) -> go.Figure:
    fig = go.Figure()
    for mode in payload.options.modes:
        agg = payload.aggregates[mode]
        fig.add_bar(name=charts._text(MODE_TITLE[mode]), x=[charts._text(n) for n in names], y=agg["pred_rate"],
                    text=[f"{v:.2f}" for v in agg["pred_rate"]], textposition="outside")
    fig.update_layout(**charts._layout("Pred Rate per condition (share of valid answers)", "condition", "Pred Rate",
                                       yaxis_range=[0, 1.1], barmode="group"))
    fig.update_layout(legend=dict(title=dict(text="candidate order")))
    return fig


def position_figure(payload) -> go.Figure:
    k = len(payload.conditions)
    positions = [f"image {i}" for i in range(2, k + 2)]
    fig = go.Figure()
    for mode in payload.options.modes:
        pb = payload.aggregates[mode]["position_bias"]
        fig.add_bar(name=charts._text(MODE_TITLE[mode]), x=positions, y=pb["shares"],
                    text=[str(n) for n in pb["counts"]], textposition="outside")
    fig.add_hline(y=1 / k, line_dash="dash", annotation_text=f"no bias: 1/{k}")
    fig.update_layout(**charts._layout("How often each position was chosen (position bias)", "image position",
                                       "share of valid answers", yaxis_range=[0, 1.1], barmode="group"))
    fig.update_layout(legend=dict(title=dict(text="candidate order")))
    return fig


def gallery_targets(payload) -> list:
    """Up to GALLERY_TARGETS targets: first the first target each condition won (so that every
    condition's wins can be seen, not only the majority's), then the others in study order."""
    mode = payload.options.modes[0]
    picked = []
    for c in range(len(payload.conditions)):
        for t in payload.targets:
            if sum(v.condition == c for v in t.votes[mode]) * 2 > len(t.votes[mode]):
                picked.append(t)
                break
    rest = [t for t in payload.targets if all(t is not p for p in picked)]
    return sorted((picked + rest)[:GALLERY_TARGETS], key=lambda t: t.index)


def gallery(payload, recs: list, target_images) -> list[dict]:
    """The first targets: a PNG row (target, then each condition's candidate) and the votes per condition."""
    shown = []
    for t in gallery_targets(payload):
        cands = [recs[c][0][cand.rec_index] for c, cand in enumerate(t.candidates)]
        png = grid_png(np.stack([target_images[t.index], *cands]), None, per_row=len(cands) + 1)
        counts = {mode: [sum(v.condition == c for v in t.votes[mode]) for c in range(len(t.candidates))]
                  for mode in payload.options.modes}
        shown.append(dict(index=t.index, label=t.label, png=png, file=f"judgements/{payload.study_id}/target-{t.index}.png",
                          candidates=t.candidates, counts=counts,
                          invalid={m: sum(v.condition is None for v in vs) for m, vs in t.votes.items()}))
    return shown


def build_judgements(pages, files: dict, folder: Path, submissions: Path) -> list[tuple[str, str]]:
    """Render the index and one page per valid study into `pages`/`files`; returns the nav entries."""
    from reconbench.judge.aggregate import TIE_RULE, major_ties_split
    from reconbench.judge.check import check_studies
    from reconbench.judge.selection import target_split
    from reconbench.image.results import load_reconstructions

    reports = check_studies(folder, submissions) if Path(folder).is_dir() else []
    nav = [("All studies", INDEX)]
    published = []
    for r in reports:
        if not r.ok:
            log.warning("judge study %s failed validation: not published (%s)", r.study_id, r.checks[-1][2])
            continue
        p = r.study.payload
        names = labels(p)
        recs = [load_reconstructions(submissions / c.team / c.entry_id / "reconstructions.safetensors") for c in p.conditions]
        images, _, _ = target_split(p.track, "dynamic" if p.split == "update" else "static")
        shown = gallery(p, recs, images)
        for g in shown:
            files[g["file"]] = g["png"]
        split = {mode: major_ties_split([{"votes": [v.model_dump() for v in t.votes[mode]]} for t in p.targets],
                                        len(p.conditions)) for mode in p.options.modes}
        pages.page(study_page(p.study_id), "judgement.md.j2", study=p, names=names, checks=r.checks, rerun=r.rerun,
                   major_split=split, tie_rule=TIE_RULE,
                   entry_pages=[entry_page(c.team, c.entry_id) for c in p.conditions], gallery=shown,
                   MODE_TITLE=MODE_TITLE,
                   pred_chart=Markup(charts.chart_html(pred_rate_figure(p, names), f"chart-judge-pred-{p.study_id}")),
                   position_chart=Markup(charts.chart_html(position_figure(p), f"chart-judge-pos-{p.study_id}")))
        # The nav title is built from slugs only: MkDocs themes print nav titles as HTML, unescaped,
        # so the contributor's free-text title stays inside the autoescaped page body.
        nav.append((" vs ".join(c.attack for c in p.conditions) + f" ({p.study_id[-8:]})", study_page(p.study_id)))
        published.append(dict(study=p, names=names, page=study_page(p.study_id), rerun=r.rerun))
    failed = [dict(study_id=r.study_id, reason=r.checks[-1][2] if r.checks else "") for r in reports if not r.ok]
    pages.page(INDEX, "judgements_index.md.j2", studies=published, failed=failed)
    return nav


def add_to_bundle(bundle, submissions: Path) -> None:
    """The hook's one call: studies from RECONBENCH_JUDGEMENTS, else judgements/ beside the
    submissions folder (the studies travel with the entries they name)."""
    from reconbench.leaderboard.pages import Pages

    pages = Pages()
    folder = judgements_root(Path(submissions).parent / "judgements")
    bundle.nav["judgements"] = build_judgements(pages, bundle.files, folder, Path(submissions))
    bundle.files.update(pages.markdown)
    bundle.fragments.update(pages.fragments)
