"""The board's leakage columns: membership gaps, the verdict badge and the lift over knowledge.

Per entry row (frame.py) and per metric m with a gap: `gap_<m>`, `gap_<m>_low`, `gap_<m>_high`,
`gap_<m>_p`, `gap_<m>_vs_target`, `gap_<m>_vs_holdout` (from the gaps validate recomputed, never
from a claim), `leaks` (the mean gap's decision: membership signal or not), `tier` / `verdict` (the
entry's verdict tier and its words, core/verdict.py: the extraction count and the mean gap together),
`verdict_p` (the mean gap's deciding p with the threshold it was held to), the recovery count's
columns (`recovered`, `recovered_of`, `recovered_holdout`, `recovery_p`, `recovery`: core/recovery.py,
computed at validation, never claimed), `holdout_sha256`,
`membership` (JSON of every gap, with the per-class ones, for the entry page and the exports). `lift_<m>`: the entry's verified value
minus the best reference baseline of its taxonomy cell on the same targets (leaderboard/baselines.py),
signed so that positive = better than what the attacker's own public data already gives.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from reconbench.image.metrics import METRICS
from reconbench.core.membership import ALPHA
from reconbench.core.verdict import (  # noqa: F401 - the board's names
    BY_KEY, EXTRACTS, NO_EVIDENCE, ORDER, ORDER_WHY, RECOVERS, SIGNAL, TIERS, VERDICT_TEXT, count_of, count_text,
    held_to, label, recovery_text, signal_held_to, tier, verdict)

GAP_METRICS = ("fid", "ssim", "psnr", "mse", "lpips", "knn_dist", "bleu", "rouge_l", "similarity", "exact_match")
GAP_FIELDS = ("", "_low", "_high", "_p", "_vs_target", "_vs_holdout")
EXTRACTION_COLUMNS = ["extracts", "extracted", "extracted_of", "extracted_holdout", "extraction_p", "extraction"]
RECOVERY_COLUMNS = ["recovers", "recovered", "recovered_of", "recovered_holdout", "recovery_p", "recovery"]
COLUMNS = [f"gap_{m}{f}" for m in GAP_METRICS for f in GAP_FIELDS] + [f"lift_{m}" for m in GAP_METRICS] + [
    "leaks", "tier", "verdict", "verdict_p", "holdout_sha256", "membership"] + EXTRACTION_COLUMNS + RECOVERY_COLUMNS
LEAK_LABELS = {"knn_dist": "KNN distance", "acc_top1": "Acc@1", "acc_top5": "Acc@5"}
# a gap's metric as the verdict's p names it ("SSIM p 0.0068 > 0.0025 = 0.01 / 4 metrics")
GAP_LABELS = {"fid": "FID", "ssim": "SSIM", "psnr": "PSNR", "mse": "MSE", "lpips": "LPIPS", "knn_dist": "KNN distance",
              "bleu": "BLEU", "rouge_l": "ROUGE-L", "similarity": "Similarity", "exact_match": "Exact match"}
# The one significance rule of the boards, the findings page and the defenses view (each page states it)
SIGNIFICANCE_RULE = (f"an entry shows a membership signal when the smallest p of its metrics' membership gaps, "
                     f"times their number (Bonferroni over the metrics of one entry), is below {ALPHA:g} and that gap "
                     f"is positive (reconbench.core.membership.entry_leaks); it extracts k when its extraction count "
                     f"fires (more members than holdout items, p below {ALPHA:g}); it recovers k when its recovery "
                     "count fires (k members closer to their nearest reconstruction than any other public image comes "
                     f"to them, more than holdout items, membership relabelling p below {ALPHA:g}); tested and none of "
                     "these: no evidence (reconbench.core.verdict)")


def fill_row(row: dict, report, payload, pinned_holdout) -> None:
    """The gap columns of one entry row, from the report's recomputed gaps (validate's re-score).
    `pinned_holdout(payload)`: the holdout sha256 the entry's track pins, for a payload that claims none
    (each modality's board passes its registry's)."""
    for col in COLUMNS:
        row.setdefault(col, None)
    membership = dict(getattr(report, "membership", {}) or {})
    if row.get("trust") == "failed" or not membership:
        return
    for m in GAP_METRICS:
        g = membership.get(m)
        if g is None or g.status != "computed":
            continue
        for f, value in zip(GAP_FIELDS, (g.gap, g.low, g.high, g.p, g.vs_target, g.vs_holdout)):
            row[f"gap_{m}{f}"] = value
    row["leaks"], _ = verdict(membership)
    row["verdict_p"] = signal_held_to(membership, GAP_LABELS)
    claimed = getattr(payload, "membership", None)
    row["holdout_sha256"] = claimed.holdout_sha256 if claimed is not None else pinned_holdout(payload)
    row["membership"] = json.dumps({m: g.model_dump(mode="json") for m, g in membership.items()}, sort_keys=True)
    extraction = getattr(report, "extraction", None)
    fill_extraction(row, extraction)
    recovery = getattr(report, "recovery", None)  # validation's (core/recovery.py); None: not computed
    fill_recovery(row, recovery)
    t = tier(row["leaks"], extraction, recovery)
    row["tier"] = t.key if t is not None else None
    row["verdict"] = label(t, count_of(t, extraction, recovery))


EXTRACTS_TEXT = ("members that some reconstruction comes closer to than natural images of their class come to each "
                 "other (the track's extraction threshold, calibrated on the public dataset), against the holdout "
                 f"items that close; the verdict \"extracts k\" when more members than holdout items are and p < {ALPHA:g} "
                 "(methodology: the extraction count)")


def fill_extraction(row: dict, extraction) -> None:
    """The count's columns (core/extraction.py), from the count validate recomputed."""
    if extraction is None:
        return
    row.update(extracts=bool(extraction.extracts), extracted=extraction.members, extracted_of=extraction.n_members,
               extracted_holdout=extraction.holdout, extraction_p=extraction.p,
               extraction=json.dumps(extraction.model_dump(mode="json"), sort_keys=True))


RECOVERS_TEXT = ("members closer to their nearest reconstruction (of their class) than any other public image comes "
                 "to them (relative l2 below 1, at the best shift by at most a pixel: Carlini et al. 2023 made per "
                 "member), against the holdout items that "
                 "close; the verdict \"recovers k\" when more members than holdout items are and the membership "
                 f"relabelling p < {ALPHA:g} (methodology: the recovery count)")


def fill_recovery(row: dict, recovery) -> None:
    """The recovery count's columns (core/recovery.py), from the count validation computed."""
    if recovery is None:
        return
    row.update(recovers=bool(recovery.recovers), recovered=recovery.members, recovered_of=recovery.n_members,
               recovered_holdout=recovery.holdout, recovery_p=recovery.p,
               recovery=recovery.model_dump_json())


def recovery_p(row) -> str | None:
    """The recovery count's p beside the threshold it was held to, for a row with a count."""
    p = row.get("recovery_p")
    return held_to(float(p)) if p is not None and not pd.isna(p) else None


def tier_held(row) -> str | None:
    """The p a row's tier rests on, with its threshold: the count's for "extracts", the recovery count's for
    "recovers", the mean gap's otherwise (every board's verdict cell)."""
    key = row.get("tier")
    if key == EXTRACTS.key:
        return count_p(row)
    if key == RECOVERS.key:
        return recovery_p(row)
    return row.get("verdict_p")


def row_tier(row):
    """The row's verdict tier (core/verdict.py Tier), or None when nothing was tested."""
    key = row.get("tier")
    return BY_KEY.get(key) if isinstance(key, str) else None


def tier_rank(row) -> int:
    """The board's evidence order: the tier's rank, -1 for an entry nothing was tested on."""
    t = row_tier(row)
    return t.rank if t is not None else -1


def count_p(row) -> str | None:
    """The count's p beside the threshold it was held to ("p 1 > 0.01"), for a row with a count."""
    p = row.get("extraction_p")
    return held_to(float(p)) if p is not None and not pd.isna(p) else None


def lead_gap(rows: pd.DataFrame) -> str | None:
    """The gap whose interval orders a table after the tier: the first of PLOT_ORDER some row has an interval of."""
    return next((m for m in PLOT_ORDER if f"gap_{m}_low" in rows and rows[f"gap_{m}_low"].notna().any()), None)


def by_evidence(rows: pd.DataFrame, then: list[str], ascending: list[bool]) -> pd.DataFrame:
    """`rows` in the boards' default order: verdict tier (extracts > recovers > membership signal > no
    evidence, then untested), then the lead gap's 95 % interval's lower end, highest first (none last),
    then `then` (the likeness metric, trust, date: ties only)."""
    if rows.empty:
        return rows
    lead = lead_gap(rows)
    keys = pd.DataFrame({"_tier": [tier_rank(r) for r in rows.to_dict("records")],
                         "_low": rows[f"gap_{lead}_low"].astype(float) if lead else float("nan")}, index=rows.index)
    keyed = pd.concat([rows, keys], axis=1)
    out = keyed.sort_values(["_tier", "_low", *then], ascending=[False, False, *ascending], na_position="last",
                            kind="stable")
    return out.drop(columns=["_tier", "_low"])


def typed(frame: pd.DataFrame) -> pd.DataFrame:
    for col in ("extracted", "extracted_of", "extracted_holdout", "extraction_p", "recovered", "recovered_of",
                "recovered_holdout", "recovery_p"):
        if col in frame:
            frame[col] = frame[col].astype(float)
    for m in GAP_METRICS:
        for f in GAP_FIELDS:
            frame[f"gap_{m}{f}"] = frame[f"gap_{m}{f}"].astype(float)
        frame[f"lift_{m}"] = frame[f"lift_{m}"].astype(float)
    return frame


def _better(metric: str) -> int:
    info = METRICS.get(metric)
    if info is None:  # text metrics: every one is "higher is better"
        return 1
    return -1 if info.direction == "↓" else 1


def best_reference(references: list[dict], metric: str) -> float | None:
    values = [r["metrics"][metric]["value"] for r in references if metric in r.get("metrics", {})
              and r["metrics"][metric].get("value") is not None]
    if not values:
        return None
    return max(values) if _better(metric) > 0 else min(values)


def applies(reference: dict, scenario: str) -> bool:
    """A reference baseline's cell pattern ("static/*/same") covers this scenario."""
    pattern = reference.get("cell", "*/*/*").split("/")
    return all(p in ("*", s) for p, s in zip(pattern, scenario.split("/")))


def add_lift(frame: pd.DataFrame, references: dict[str, list[dict]]) -> pd.DataFrame:
    """lift_<m> for every row with a verified value and a reference baseline of its cell."""
    for idx, row in frame.iterrows():
        refs = [r for r in references.get(row["track"], []) if isinstance(row["scenario"], str) and applies(r, row["scenario"])]
        for m in GAP_METRICS:
            if m not in frame or pd.isna(row.get(m)):
                continue
            best = best_reference(refs, m)
            if best is not None and math.isfinite(best):
                frame.at[idx, f"lift_{m}"] = _better(m) * (float(row[m]) - best)
    return frame


def per_class(row) -> dict[str, list]:
    """{metric: [(class, gap), ...]} from the row's membership JSON (image entries)."""
    if not isinstance(row.get("membership"), str):
        return {}
    out = {}
    for m, g in json.loads(row["membership"]).items():
        if g.get("per_class"):
            out[m] = sorted(((k, v) for k, v in g["per_class"].items()), key=lambda kv: int(kv[0]) if kv[0].isdigit() else kv[0])
    return out


def gap_values(row) -> dict[str, dict]:
    """{metric: GapResult dict} of the computed gaps (entry page)."""
    if not isinstance(row.get("membership"), str):
        return {}
    return {m: g for m, g in json.loads(row["membership"]).items() if g.get("status") == "computed"}


def distribution_figure(gap, metric: str, label: str) -> dict | None:
    """Plotly figure (dict): the per-reconstruction best match against the targets and against the
    holdout, as two overlaid histograms, for the entry page."""
    if gap is None or gap.best_target is None:
        return None
    t, h = np.asarray(gap.best_target, dtype=float), np.asarray(gap.best_holdout, dtype=float)
    lo, hi = float(min(t.min(), h.min())), float(max(t.max(), h.max()))
    size = (hi - lo) / 30 if hi > lo else 1.0
    bins = dict(start=lo, end=hi + size, size=size)
    return {
        "data": [
            {"type": "histogram", "x": t.tolist(), "name": f"best match among the targets (mean {t.mean():.4g})",
             "opacity": 0.6, "xbins": bins, "marker": {"color": "#3f51b5"}},
            {"type": "histogram", "x": h.tolist(), "name": f"best match among the holdout (mean {h.mean():.4g})",
             "opacity": 0.6, "xbins": bins, "marker": {"color": "#ff9800"}},
        ],
        "layout": {"barmode": "overlay", "xaxis": {"title": {"text": f"{label} of each reconstruction's best match"}},
                   "yaxis": {"title": {"text": "reconstructions"}}, "legend": {"orientation": "h", "y": -0.3},
                   "margin": {"t": 10, "l": 50, "r": 10, "b": 40}, "height": 320},
    }


PLOT_ORDER = ("ssim", "bleu", "similarity", "rouge_l", "psnr", "mse", "knn_dist")


def without_leakage(ranked_rows: pd.DataFrame) -> list[dict]:
    """Per dataset with ranked entries none of which shows evidence (a membership signal or more): how many
    (the home page says so)."""
    out = []
    for dataset, group in ranked_rows.groupby("dataset", sort=True):
        if max((tier_rank(r) for r in group.to_dict("records")), default=-1) < SIGNAL.rank:
            out.append(dict(dataset=dataset, count=len(group), tracks=sorted(group["track"].dropna().unique())))
    return out


def example_table(rows: pd.DataFrame, track: str = "digits", metrics: tuple[str, ...] = ("ssim", "psnr")) -> list[dict]:
    """The methodology page's example (issue 21's table, computed): each entry of `track` with its
    metrics against the targets and against the holdout, as validate re-scored them."""
    part = rows[(rows["track"] == track) & rows[f"gap_{metrics[0]}"].notna()]
    out = []
    for _, r in part.sort_values(f"gap_{metrics[0]}_vs_target", ascending=False).iterrows():
        # an unregistered attack's name stays on its entry's page (its label here: "<team>'s own attack")
        attack = r["attack_label"] if isinstance(r.get("attack_label"), str) else r["attack"]
        out.append(dict(entry=r["entry_id"], attack=attack, page=r["page"], scenario=r["scenario"],
                        verdict=r["verdict"], tier=r["tier"],
                        held=tier_held(r), values={m: dict(target=r[f"gap_{m}_vs_target"], holdout=r[f"gap_{m}_vs_holdout"],
                                                              gap=r[f"gap_{m}"], low=r[f"gap_{m}_low"], high=r[f"gap_{m}_high"],
                                                              p=r[f"gap_{m}_p"]) for m in metrics}))
    return out


def gap_metrics(rows: pd.DataFrame, metrics) -> list[str]:
    """The board's metric columns that have a gap in some row (their leakage columns are shown)."""
    return [m for m in metrics if f"gap_{m}" in rows and rows[f"gap_{m}"].notna().any()]


def lift_metric(rows: pd.DataFrame, metrics) -> str | None:
    """The metric the lift column shows: the first of the board's columns with a lift in some row."""
    return next((m for m in metrics if f"lift_{m}" in rows and rows[f"lift_{m}"].notna().any()), None)
