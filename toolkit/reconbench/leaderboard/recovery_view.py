"""An image entry page's per-sample view of the recovery count (core/recovery.py, issue 44):

- Haim et al.'s curves (NeurIPS 2022, Sec. 5): each member's best-match SSIM (its most similar
  reconstruction of its class), sorted, beside the same curve for the holdout items, which the model
  never saw; members the count recovers (relative l2 below TAU) are marked.
- a strip of the best recovered pairs: each reconstruction above the member it recovers (closest
  first, by relative l2); where none is recovered, the closest pairs, said so.
Both read the count validation computed (EntryReport.recovery), never a claim of the entry.
"""

from __future__ import annotations

import html
import logging
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

STRIP = 8  # pairs in the strip: one row of eight (a phone scales it down)
MEMBER, HOLDOUT, RECOVERED = "#3f51b5", "#ff9800", "#d32f2f"


def curves_figure(recovery) -> dict | None:
    """Plotly figure (dict) of the sorted best-match SSIM, members against holdout; None without SSIM values."""
    curves = recovery.curves()
    if not any(not np.isnan(c[0]) for side in curves.values() for c in side):
        return None
    data = []
    for side, name, color in (("members", "members (training set)", MEMBER), ("holdout", "holdout (never trained on)", HOLDOUT)):
        points = [c for c in curves[side] if not np.isnan(c[0])]
        text = [f"{'member' if side == 'members' else 'holdout item'} #{_item(recovery, c)} of class {html.escape(c[3])}: "
                f"SSIM {c[0]:.3f}, relative l2 {_rel(c[1])}" for c in points]
        data.append({"type": "scatter", "mode": "lines", "name": f"{name}: {len(points)}",
                     "x": list(range(1, len(points) + 1)), "y": [c[0] for c in points], "text": text,
                     "hoverinfo": "text", "line": {"color": color, "width": 2}})
        if side == "members":
            hits = [(i + 1, c) for i, c in enumerate(points) if c[2]]
            data.append({"type": "scatter", "mode": "markers",
                         "name": f"recovered (relative l2 < {recovery.tau:g}): {len(hits)}",
                         "x": [i for i, _ in hits], "y": [c[0] for _, c in hits],
                         "text": [f"recovered member #{_item(recovery, c)} of class {html.escape(c[3])}: SSIM {c[0]:.3f}, "
                                  f"relative l2 {_rel(c[1])}" for _, c in hits],
                         "hoverinfo": "text", "marker": {"color": RECOVERED, "size": 9, "symbol": "star"}})
    return {"data": data, "layout": {
        "xaxis": {"title": {"text": "items, best match first"}, "rangemode": "tozero"},
        "yaxis": {"title": {"text": "best-match SSIM (↑)"}},
        "legend": {"orientation": "h", "y": -0.2}, "margin": {"t": 10, "l": 60, "r": 10, "b": 40}, "height": 420,
        "plot_bgcolor": "white", "paper_bgcolor": "white"}}


def _rel(value: float) -> str:
    return "∞ (a public duplicate, or no reconstruction of its class)" if not np.isfinite(value) else f"{value:.3f}"


def _item(recovery, c) -> int:
    """The item's index in the target set (members) or the holdout, from the count's items."""
    it = recovery.items.get(c[3])
    return it.index[c[4]] if it is not None and 0 <= c[4] < len(it.index) else c[4]


def strip_pairs(recovery, count: int = STRIP) -> tuple[list[tuple[str, int, int, float, float]], bool]:
    """The pairs the strip shows (group, pool index, reconstruction, rel, ssim) and whether they are recovered
    ones (else the closest members, none being recovered)."""
    best = recovery.best_recovered(count)
    if best:
        return best, True
    closest = []
    for key, it in recovery.items.items():
        for i, (m, rel, s, b) in enumerate(zip(it.members, it.relative, it.ssim, it.best)):
            if m and rel is not None and b >= 0:
                closest.append((key, i, b, rel, s if s is not None else float("nan")))
    return sorted(closest, key=lambda t: (t[3], t[0], t[1]))[:count], False


def strip_png(recovery, entry_dir, payload, targets) -> tuple[bytes, list[dict], bool] | None:
    """The strip as PNG bytes (reconstructions above their members) with its rows; None when the
    reconstruction file or the target set is not available to the build."""
    from reconbench.core.io import FileFormatError
    from reconbench.image.results import load_reconstructions
    from reconbench.leaderboard.gallery import grid_png

    pairs, recovered = strip_pairs(recovery)
    info = payload.reconstructions
    path = Path(entry_dir) / info.file
    index = targets.get(payload.track, payload.scenario.split("/")[0])
    if not pairs or info.hub is not None or not path.is_file() or index is None:
        return None
    try:
        images, _ = load_reconstructions(path)
    except FileFormatError as exc:
        log.info("recovery strip: %s", exc)
        return None
    rows = []
    for key, i, b, rel, s in pairs:
        member = recovery.items[key].index[i]
        if not (0 <= b < len(images) and 0 <= member < len(index.images)):
            continue  # a count that does not fit these files (never from validation): nothing drawn for it
        rows.append(dict(group=key, member=int(member), reconstruction=int(b), relative=float(rel), ssim=float(s)))
    if not rows or images.shape[1:] != index.images.shape[1:]:
        return None
    png = grid_png(images[[r["reconstruction"] for r in rows]], [index.images[r["member"]] for r in rows],
                   per_row=min(STRIP, len(rows)))  # one pair: one tile wide, not a row of eight blanks
    return png, rows, recovered


def entry_recovery(report, row: dict, targets, files: dict) -> dict | None:
    """What the entry page shows under "Recovery": the count, the curves and the strip (added to `files`)."""
    recovery = getattr(report, "recovery", None)
    if recovery is None or getattr(report, "result", None) is None:
        return None
    from reconbench.leaderboard.charts import chart_html
    from reconbench.leaderboard.frame import entry_folder

    import plotly.graph_objects as go

    figure = curves_figure(recovery)
    strip = None
    if targets is not None:
        made = strip_png(recovery, report.path, report.result.payload, targets)
        if made is not None:
            path = f"{entry_folder(row['team'], row['entry_id'])}/recovered.png"
            files[path] = made[0]
            strip = dict(image=path, rows=made[1], recovered=made[2])
    return dict(count=recovery, strip=strip,
                chart=chart_html(go.Figure(figure) if figure else None, f"recovery-{row.get('entry_id', '')}",
                                 empty="No SSIM values for this entry's items."))
