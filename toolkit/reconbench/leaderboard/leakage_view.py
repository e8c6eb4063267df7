"""An entry page's "Leakage" section: the gaps of leaderboard/leakage.py with their Plotly figure
(apart from leakage.py, which the frame imports, so that the charts, which import the frame, are
not imported back by it)."""

from __future__ import annotations

from reconbench.leaderboard.charts import chart_html
from reconbench.leaderboard.leakage import PLOT_ORDER, distribution_figure, gap_values, per_class


def entry_view(report, row: dict, labels: dict[str, str]) -> dict | None:
    """What an entry page shows under "Leakage": every gap, the per-class gaps, the verdict and a
    Plotly figure of the best-match distributions (target vs holdout) of its first metric in PLOT_ORDER."""
    gaps = gap_values(row)
    if not gaps:
        return None
    import plotly.graph_objects as go

    raw = getattr(report, "gaps", {}) or {}
    metric = next((m for m in PLOT_ORDER if m in raw and m in gaps), None)
    figure = distribution_figure(raw.get(metric), metric, labels.get(metric, metric)) if metric else None
    classes = per_class(row)
    class_metrics = [m for m in ("ssim", "psnr", "mse", "lpips", "knn_dist") if m in classes]
    keys = [k for k, _ in classes[class_metrics[0]]] if class_metrics else []
    table = [dict(key=k, values={m: dict(classes[m]).get(k) for m in class_metrics}) for k in keys]
    return dict(
        gaps=gaps, verdict=row.get("verdict"), tier=row.get("tier"), verdict_p=row.get("verdict_p"),
        tests=sum(g.get("p") is not None for g in gaps.values()), holdout=row.get("holdout_sha256"),
        extraction=getattr(report, "extraction", None),
        recovery=getattr(report, "recovery", None),
        per_class=table, class_metrics=class_metrics, metric=metric,
        chart=chart_html(go.Figure(figure) if figure else None, f"leak-{row.get('entry_id', '')}",
                         empty="The per-reconstruction best matches are not available in this build (built without "
                               "re-scoring)."),
    )
