"""Plotly figures of the board, shipped as JSON and drawn by site/assets/javascripts/reconbench.js.

Two views per track, both from the SoK:
- memorization view (SoK §5, Table 2/3): a metric against the training-set size of the target
  model, one line per attack, across the tracks that share the dataset and architecture;
- quality vs. diversity (SoK §4.3, finding 4 "high quality does not imply diversity"): FID (or,
  when no entry has FID, the best available sample-level metric, said so on the chart) against
  the SoK coverage alpha of the SSIM map.

A figure is embedded as `<div class="rb-chart" data-figure="JSON">` rather than an inline
`Plotly.newPlot` call, so that it is drawn again after material's instant navigation swaps the
page content (site/assets/javascripts/reconbench.js re-initialises on `document$`).
"""

from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from reconbench.leaderboard.frame import BOARD_METRICS, LABELS, RANK_PREFERENCE, ranked
from reconbench.core.labels import labels_wrong
from reconbench.image.metrics import METRICS

UNITS = {"fid": "", "ssim": "", "psnr": " [dB]", "mse": " [pixels in 0..1, squared]", "lpips": ""}
COVERAGE_METRIC = "ssim"  # the SoK reports SSIM coverage as its diversity measure (Table 2)


def axis_title(metric: str) -> str:
    better = "lower is better" if METRICS[metric].direction == "↓" else "higher is better"
    return f"{LABELS[metric]}{UNITS[metric]} ({METRICS[metric].direction} {better})"


def _text(value) -> str:
    # Plotly renders a few HTML tags inside labels and hover text; user strings are escaped so
    # that they show as typed (Plotly decodes the entities back for display).
    return html.escape(str(value), quote=True)


def _layout(title: str, x_title: str, y_title: str, **extra) -> dict:
    # The title travels in the figure (tests and downloads read it) but chart_html shows it above
    # the plot as HTML: inside the figure Plotly's toolbar covered it and a phone cut it.
    return dict(
        title=dict(text=title, font=dict(size=15), x=0.01, xanchor="left", y=0.97, yanchor="top"),
        xaxis=dict(title=dict(text=x_title), zeroline=False, gridcolor="#e5e5e5"),
        yaxis=dict(title=dict(text=y_title), zeroline=False, gridcolor="#e5e5e5"),
        legend=dict(title=dict(text="attack")),
        margin=dict(l=70, r=20, t=100, b=60),
        height=420,
        plot_bgcolor="white",
        paper_bgcolor="white",
        hovermode="closest",
        showlegend=True,  # name the attack even when a chart has one line
        **extra,
    )


def _fmt(metric: str, row: pd.Series) -> str:
    value = row[metric]
    cov = row.get(f"{metric}_coverage")
    text = f"{value:.3f}"
    if cov is not None and pd.notna(cov):
        text += f" ({100 * cov:.2f}%)"
    wrong = labels_wrong(row.get(f"{metric}_note"))
    if wrong is not None:
        text += f" on {wrong.total - wrong.count} of {wrong.total} · {wrong.count} label wrong"
    return text


def label_quality(rows: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The rows with `metric` as the boards show it (pages.metric_cell): the quality of the reconstructions
    that have a target of their class, wrong labels being a count apart (core/labels.py), never the
    metric's worst value averaged in; NaN when every label is wrong (no quality to plot)."""
    def value(row):
        wrong = labels_wrong(row.get(f"{metric}_note"))
        if wrong is None:
            return row[metric]
        quality = wrong.quality(float(row[metric]))
        return float("nan") if quality is None else quality

    rows = rows.copy()
    if len(rows):
        rows[metric] = rows.apply(value, axis=1)
    return rows


def error_bars(rows: pd.DataFrame, metric: str) -> dict:
    """Plotly error_y of a trace: the seed groups' std (leaderboard/seeds.py), 0 for single runs."""
    std = rows[f"{metric}_std"] if f"{metric}_std" in rows else pd.Series(dtype=float)
    if not std.notna().any():
        return {}
    return dict(error_y=dict(type="data", array=[float(v) if pd.notna(v) else 0.0 for v in std], visible=True))


def _seeds_text(row: pd.Series, metric: str) -> str:
    n = row.get("n_seeds")
    std = row.get(f"{metric}_std")
    return f" ± {std:.3f} (mean of {int(n)} seeds)" if n is not None and pd.notna(n) and n > 1 and pd.notna(std) else ""


def family_key(track) -> tuple[str, str, str]:
    """Tracks that differ only in training-set size: same dataset, architecture and variant
    (a pre-trained, DP or pruned model is another line of the SoK's Table 10, not another x)."""
    return (track.dataset, track.architecture, track.variant or "")


def family_title(track) -> str:
    return f"{track.dataset} · {track.architecture}" + (f" ({track.variant})" if track.variant else "")


REFERENCE_DASH = {"noise": "dot", "aux": "dash", "aux-mean": "dashdot"}


def reference_traces(references: list[dict], metric: str, x_range: tuple[float, float], with_track: bool = False,
                     visible: bool = True) -> list[go.Scatter]:
    """A grey horizontal line per reference baseline at its value of `metric`, named in the legend
    (labels drawn on the plot overlapped where baselines score alike), its value on hover."""
    traces = []
    for ref in references:
        value = (ref.get("metrics") or {}).get(metric)
        if not value:
            continue
        y = value["value"]
        # short: a legend item must fit a phone's width (ref["label"] is the long form)
        where = [f"{ref['data']} aux"] if ref.get("data") not in (None, "any") else []
        where += [ref["training"]] if ref.get("training") else []
        where += [ref["track"]] if with_track and ref.get("track") else []
        label = f"reference: {ref.get('short', ref['label'])}" + (f" ({', '.join(where)})" if where else "")
        traces.append(go.Scatter(
            x=list(x_range), y=[y, y], mode="lines", name=_text(label), legendgroup="references",
            line=dict(color="#888", width=1, dash=REFERENCE_DASH.get(ref.get("kind"), "dot")), visible=visible,
            hovertemplate=f"{_text(ref['label'])} ({_text(ref['cell'])})<br>{LABELS[metric]} {y:.3f}<extra></extra>",
        ))
    return traces


def grouped_references(references: list[dict], metric: str) -> list[dict]:
    """One reference per kind (noise, aux, aux mean): the best of that kind over the family's tracks and
    cells, so that a chart across sizes carries a few lines rather than one per track, cell and kind."""
    lower = METRICS[metric].direction == "↓"
    best: dict[str, tuple[dict, int]] = {}
    for ref in references:
        value = (ref.get("metrics") or {}).get(metric)
        if not value or value.get("value") is None:
            continue
        kind = ref.get("kind") or ref.get("short") or ref["label"]
        held, count = best.get(kind, (None, 0))
        better = held is None or (value["value"] < held["metrics"][metric]["value"]) == lower
        best[kind] = (ref if better else held, count + 1)
    out = []
    for ref, count in best.values():
        where = "best over this family's tracks and cells" if count > 1 else ref.get("track", "")
        out.append({**ref, "short": f"{ref.get('short', ref['label'])} ({where})" if where else ref.get("short", ref["label"]),
                    "data": None, "training": None, "track": None})
    return out


def memorization_figure(frame: pd.DataFrame, track, tracks: list, references: list[dict] | None = None
                        ) -> go.Figure | None:
    """Metric vs. training-set size, one line per attack (best entry per attack and track).

    x is the `train_size` of each track of `track`'s family (family_key), as in the SoK's
    Table 2 columns (1k ... 20k). Buttons switch the metric; FID (or the first metric with
    data) is shown first.
    """
    family = {t.id: t for t in tracks if family_key(t) == family_key(track)}
    data = ranked(frame)
    data = data[data["track"].isin(family)]
    metrics = [m for m in BOARD_METRICS if data[m].notna().any()]
    if data.empty or not metrics or data["train_size"].nunique() < 2:
        return None  # one training-set size is one x value: no view of memorization (memorization_note)
    first = next(m for m in RANK_PREFERENCE if m in metrics)
    fig = go.Figure()
    visible_by_metric: dict[str, list[bool]] = {m: [] for m in metrics}
    for metric in metrics:
        for attack, group in data.groupby("attack_label", sort=True):
            best_rows = []
            for track_id, per_track in group.groupby("track"):
                per_track = label_quality(per_track[per_track[metric].notna()], metric)
                per_track = per_track[per_track[metric].notna()]
                if per_track.empty:
                    continue
                best_rows.append(_best(per_track, metric))
            if not best_rows:
                continue
            pts = pd.DataFrame(best_rows).sort_values("train_size")
            fig.add_trace(go.Scatter(
                x=[int(v) for v in pts["train_size"]],
                y=list(pts[metric]),
                mode="lines+markers",
                name=_text(attack),
                legendgroup=_text(attack),
                visible=metric == first,
                customdata=[[_text(r["track"]), _fmt(metric, r) + _seeds_text(r, metric), _text(r["team_name"]),
                             _text(r["entry_id"])] for _, r in pts.iterrows()],
                **error_bars(pts, metric),
                hovertemplate=(f"<b>{_text(attack)}</b><br>track %{{customdata[0]}}<br>|D_train| = %{{x}}<br>"
                               f"{LABELS[metric]} %{{customdata[1]}}<br>%{{customdata[2]}}: %{{customdata[3]}}<extra></extra>"),
            ))
            for m in metrics:
                visible_by_metric[m].append(m == metric)
    refs = references or []
    sizes = sorted({int(t.train_size) for t in family.values()})
    for metric in metrics:
        for trace in reference_traces(grouped_references(refs, metric), metric, (sizes[0], sizes[-1]),
                                      visible=metric == first):
            fig.add_trace(trace)
            for m in metrics:
                visible_by_metric[m].append(m == metric)
    buttons = [
        dict(label=LABELS[m], method="update", args=[{"visible": visible_by_metric[m]}, {"yaxis.title.text": axis_title(m)}])
        for m in metrics
    ]
    fig.update_layout(**_layout(
        f"Memorization view: best entry per attack vs. training-set size ({_text(family_title(track))})",
        "|D_train| [images] (smaller = more memorization)",  # short: it fits one line at 390 px
        axis_title(first),
        # metric buttons on their own line between the title and the plot, so they never cover the title
        updatemenus=[dict(type="buttons", direction="right", x=0.0, xanchor="left", y=1.02, yanchor="bottom",
                          pad=dict(t=0, b=0), buttons=buttons, showactive=True, active=metrics.index(first))]
        if len(metrics) > 1 else [],
    ))
    fig.update_xaxes(type="log" if len(sizes) > 2 and sizes[-1] / max(sizes[0], 1) > 8 else "linear",
                     tickvals=sizes)
    return fig


def _best(rows: pd.DataFrame, metric: str) -> pd.Series:
    lower_better = METRICS[metric].direction == "↓"
    return rows.sort_values([metric, "trust_rank"], ascending=[lower_better, False], kind="stable").iloc[0]


def quality_metric(frame: pd.DataFrame) -> tuple[str | None, str | None]:
    """(y metric, note): FID if any entry has it, else the best available sample-level metric."""
    data = ranked(frame)
    if data["fid"].notna().any():
        return "fid", None
    for m in RANK_PREFERENCE[1:]:
        if data[m].notna().any():
            return m, f"FID was not computed for any entry here: {LABELS[m]} is shown instead"
    return None, None


def quality_diversity_figure(frame: pd.DataFrame, title_suffix: str = "", references: list[dict] | None = None
                             ) -> go.Figure | None:
    """Quality (FID, or the best available metric) vs. diversity (SSIM coverage alpha, %)."""
    data = ranked(frame)
    metric, note = quality_metric(data)
    if metric is None:
        return None
    data = data[data[metric].notna() & data[f"{COVERAGE_METRIC}_coverage"].notna()]
    if data.empty:
        return None
    fig = go.Figure()
    for attack, group in data.groupby("attack_label", sort=True):
        fig.add_trace(go.Scatter(
            x=list(100 * group[f"{COVERAGE_METRIC}_coverage"]),
            y=list(group[metric]),
            mode="markers",
            marker=dict(size=10, line=dict(width=1, color="white")),
            name=_text(attack),
            customdata=[[_text(r["team_name"]), _text(r["entry_id"]), _text(r["trust"]), _text(r["scenario"]),
                         _seeds_text(r, metric)] for _, r in group.iterrows()],
            **error_bars(group, metric),
            hovertemplate=(f"<b>{_text(attack)}</b> (%{{customdata[3]}})<br>{LABELS[metric]} %{{y:.3f}}%{{customdata[4]}}<br>"
                           "SSIM coverage %{x:.2f}%<br>%{customdata[0]}: %{customdata[1]}<br>trust: %{customdata[2]}"
                           "<extra></extra>"),
        ))
    title = f"Quality vs. diversity: {LABELS[metric]} vs. coverage{title_suffix}"
    if note:
        title += f"<br><sup>{_text(note)}</sup>"
    fig.update_layout(**_layout(
        title,
        "SSIM coverage α: distinct targets matched [% of D_tar] (↑ higher is better)",
        axis_title(metric),
    ))
    for trace in reference_traces(references or [], metric, (0, 100)):
        fig.add_trace(trace)
    fig.update_xaxes(range=[-2, 102])
    return fig


def memorization_note(family: str, sizes: list[int]) -> str:
    """What the track page says where the memorization view has nothing to plot."""
    if len(sizes) < 2:
        size = f" ({sizes[0]:,} images)" if sizes else ""
        return (f"The memorization view plots a metric against the training-set size of the target model. "
                f"{family} has entries at one size only{size}: there is nothing to plot until a track of "
                "another size of this dataset and architecture has entries.")
    return "No entries to chart yet."


def figure_json(fig: go.Figure) -> str:
    return pio.to_json(fig, validate=False, pretty=False, engine="json")


def chart_html(fig: go.Figure | None, chart_id: str, empty: str = "No entries to chart yet.") -> str:
    # The figure travels in an attribute, not in a <script type="application/json">: material's
    # instant navigation re-creates every <script> of a new page without its type, which would
    # run the JSON as JavaScript. html.escape makes any JSON text a safe attribute value.
    if fig is None:
        return f'<p class="rb-empty">{html.escape(empty)}</p>'
    # The title above the plot, in the page: there the toolbar cannot cover it and a phone wraps it.
    # Its text is the figure's: our words and _text-escaped data, with <br><sup> for a note.
    title = fig.layout.title.text or ""
    main, _, note = title.partition("<br><sup>")
    caption = main + (f'<br><small>{note.removesuffix("</sup>")}</small>' if note else "")
    shown = go.Figure(fig)
    shown.update_layout(title=dict(text=""), margin=dict(t=40 if shown.layout.updatemenus else 20))
    return (f'<p class="rb-chart-title">{caption}</p>' if caption else "") + \
        f'<div class="rb-chart" id="{html.escape(chart_id)}" data-figure="{html.escape(figure_json(shown), quote=True)}" ' \
        f'data-title="{html.escape(title, quote=True)}"></div>'
