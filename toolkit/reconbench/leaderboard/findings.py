"""The "SoK findings" page (findings.md): the SoK's claims, each with its evidence in the paper and a
verdict computed from the reproduced entries on the Fashion-MNIST tracks, under the conditions the
claim declares in docs/grids/findings.toml (leaderboard/findings_rule.py: metric, budgets, seeds,
tolerance). No number is typed here: every value is read from the validated entries (the board's
frame and the membership gaps of their result files).

A verdict is "holds" or "does not hold" only when every condition is met and the interval over the
seeds clears the tolerance band; otherwise "not testable at this budget", with what is missing and
the command that would test it. docs/grids/findings.toml also lists every run behind the page
(`recon-submit sweep`), docs/grids/findings-gpu.toml the same runs at the papers' budgets.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from reconbench.core.membership import ALPHA
from reconbench.core.verdict import EXTRACTS, RECOVERS, count_of, held_to, label, signal_held_to, tier
from reconbench.leaderboard import leakage
from reconbench.leaderboard.findings_claims import (  # noqa: F401 - the page's names (tests, defenses.py)
    CLAIMS, EXTRACTION, FAILS, GAN_ATTACKS, HOLDS, SPLIT5, UNTESTABLE, Claim, Verdict, _row, _verdict)
from reconbench.leaderboard.findings_rule import Comparison, Conditions, Side, load_conditions, side_of

log = logging.getLogger(__name__)

PAGE = "findings.md"
CONDITIONS = Path("docs/grids/findings.toml")  # beside mkdocs.yml; the hook passes the checkout's
SIGNIFICANCE = leakage.SIGNIFICANCE_RULE  # the boards' rule, stated on both


# ---------------------------------------------------------------- membership gaps of the entries


def entry_gaps(frame: pd.DataFrame) -> dict[str, dict]:
    """entry page -> metric -> {value, p, low, high}: the gaps validation recomputed (the board's
    gap_<m> columns, leaderboard/leakage.py) where the frame has them, else each result file's
    `membership` block (reconbench.core.membership); entries with neither are absent."""
    out: dict[str, dict] = {}
    columns = sorted(c[4:] for c in frame.columns if c.startswith("gap_") and c.count("_") >= 1
                     and f"{c}_p" in frame.columns)
    for row in frame.to_dict("records"):
        if row["trust"] == "failed" or not str(row["track"]).startswith("fashion-"):
            continue
        gaps = {m: {"value": float(row[f"gap_{m}"]), "p": _finite(row[f"gap_{m}_p"]),
                    "low": _finite(row.get(f"gap_{m}_low")), "high": _finite(row.get(f"gap_{m}_high"))}
                for m in columns if _finite(row.get(f"gap_{m}")) is not None}
        if not gaps:
            gaps = _gaps_in_result(Path(row["entry_dir"]))
        if gaps:
            out[row["page"]] = gaps
    return out


def _finite(value) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if np.isfinite(value) else None


def _gaps_in_result(folder: Path) -> dict:
    try:
        payload = json.loads((folder / "result.json").read_text(encoding="utf-8"))["payload"]
    except (OSError, ValueError, KeyError):
        return {}
    if not isinstance(payload, dict) or payload.get("sealed") is not None:
        # a sealed draw's gap is the board's (sealed.json, scored with the key), never the entry's own
        # block: validation refuses one, and this page does not read it either (issue 43)
        return {}
    metrics = (payload.get("membership") or {}).get("metrics") or {}
    out = {}
    for m, g in metrics.items():
        value = g.get("value") if isinstance(g, dict) and g.get("value") is not None else \
            g.get("gap") if isinstance(g, dict) else None  # a result's gap block names it `gap` (value: None)
        if value is not None:
            out[m] = {"value": value, "p": g.get("p"), "low": g.get("low"), "high": g.get("high")}
    return out


def board_verdict(gaps: dict) -> tuple[bool | None, list[str]]:
    """The board's significance rule (leaderboard/leakage.verdict) on one entry's gaps: (leaks?, the
    metrics whose corrected p is below ALPHA with a positive gap)."""
    measured = {m: SimpleNamespace(status="computed", p=g["p"], gap=g["value"]) for m, g in gaps.items()
                if g.get("p") is not None}
    leaks, _ = leakage.verdict(measured)
    n = len(measured)
    return leaks, sorted(m for m, g in measured.items() if g.p * n < ALPHA and g.gap > 0)


def row_extraction(row: dict) -> SimpleNamespace | None:
    """The extraction count validation recomputed for a frame row (leakage.fill_extraction), or None."""
    members = _finite(row.get("extracted"))
    if members is None or _finite(row.get("extraction_p")) is None:
        return None
    return SimpleNamespace(members=int(members), n_members=int(_finite(row.get("extracted_of")) or 0),
                           holdout=int(_finite(row.get("extracted_holdout")) or 0), p=float(row["extraction_p"]),
                           extracts=isinstance(row.get("extracts"), (bool, np.bool_)) and bool(row["extracts"]))


def row_recovery(row: dict) -> SimpleNamespace | None:
    """The recovery count validation computed for a frame row (leakage.fill_recovery), or None."""
    members = _finite(row.get("recovered"))
    if members is None or _finite(row.get("recovery_p")) is None:
        return None
    return SimpleNamespace(members=int(members), holdout=int(_finite(row.get("recovered_holdout")) or 0),
                           p=float(row["recovery_p"]),
                           recovers=isinstance(row.get("recovers"), (bool, np.bool_)) and bool(row["recovers"]))


def row_verdict(row: dict, gaps: dict) -> dict:
    """An entry's verdict in the board's words (core/verdict.py): tier, label ("extracts 3", "membership
    signal", ...) and the p it rests on with its threshold, from its gaps (board_verdict) and the count."""
    leaks, significant = board_verdict(gaps) if gaps else (None, [])
    extraction, recovery = row_extraction(row), row_recovery(row)
    t = tier(leaks, extraction, recovery)
    if t is EXTRACTS:
        held = f"count {held_to(extraction.p)}"
    elif t is RECOVERS:
        held = f"recovery count {held_to(recovery.p)}"
    else:
        measured = {m: SimpleNamespace(status="computed", p=g["p"], gap=g["value"]) for m, g in gaps.items()
                    if g.get("p") is not None}
        held = signal_held_to(measured, leakage.GAP_LABELS)
    return dict(leaks=leaks, significant=significant, tier=t.key if t is not None else None,
                verdict=label(t, count_of(t, extraction, recovery)), held=held,
                extraction=extraction)


def gap_table(frame: pd.DataFrame, gaps: dict[str, dict]) -> list[dict]:
    """One row per Fashion-MNIST entry: its gaps on SSIM and KNN distance, and the board's verdict (row_verdict)."""
    rows = []
    for row in frame[frame["track"].astype(str).str.startswith("fashion-")].sort_values(["track", "attack"]).to_dict("records"):
        if row["trust"] == "failed":
            continue
        g = gaps.get(row["page"], {})
        v = row_verdict(row, g)
        rows.append(dict(entry=dict(page=row["page"], attack=row["attack"], track=row["track"], scenario=row["scenario"],
                                    budget=row["budget"]),
                         ssim=g.get("ssim"), knn=g.get("knn_dist"), measured=bool(g) or v["tier"] is not None,
                         tests=sum(x.get("p") is not None for x in g.values()), **v))
    return rows


VS_MEAN = {"acc_top1": ("Acc@1", True), "knn_dist": ("KNN dist", False), "ssim": ("SSIM", True)}


def aux_mean_scores(track_id: str = SPLIT5) -> dict | None:
    """The per-class aux-mean reference of the similar cell (aux unlabelled: labelled by the target's
    top-1, leaderboard/baselines.py), scored like an entry, evaluation classifier included."""
    from reconbench.leaderboard.baselines import baseline_images, pseudo_labelled
    from reconbench.image.metrics import score
    from reconbench.image.track_files import load_splits
    from reconbench.core.tracks import get_track

    try:
        track = get_track(track_id)
        splits = load_splits(track)
    except Exception as exc:  # noqa: BLE001 - no data on this machine: the section says so
        log.info("findings: %s unavailable (%s)", track_id, exc)
        return None
    aux = pseudo_labelled(track, splits.aux_similar)
    images, labels = baseline_images("aux-mean", len(splits.target), tuple(track.input_shape), track.num_classes, aux)
    report = score(images, labels, splits.target.images, splits.target.labels, lpips=False, fid=False, track=track)
    return {m: r.value for m, r in report.metrics.items() if r.status == "computed"}


def gan_vs_aux_mean(frame: pd.DataFrame, reference: dict | None, cond: Conditions) -> Verdict:
    """Issue 22's check: in the similar cell, do the GAN attacks beat the per-class aux mean? Each GAN's
    interval over its seeds against the reference's one value, under the claim's conditions."""
    if reference is None:
        return Verdict(UNTESTABLE, "", [], [f"the data of {SPLIT5} on the machine that built this page"],
                       cond.describe(), cond.command)
    table = [dict(label="per-class mean of the similar aux (labelled by the target's top-1)", entries=[],
                  values={m: dict(mean=reference.get(m), interval=None) for m in VS_MEAN}, budget=None, seeds=None,
                  labels_wrong=None)]
    comparisons, ref = [], reference.get(cond.metric)
    for attack in GAN_ATTACKS:
        s = side_of(frame, attack, SPLIT5, attack, "static/white-box/similar")
        if s is None:
            continue
        table.append(_row(s, attack, cond, tuple(VS_MEAN)))
        comparisons.append((attack, _against_value(s, ref, cond)))
    return _verdict(cond, comparisons, table, f"no validated entry for a GAN attack in the similar cell of {SPLIT5}")


def _against_value(s: Side, ref: float | None, cond: Conditions) -> Comparison:
    missing = []
    if ref is None or s.mean(cond.metric) is None:
        missing.append(f"{cond.metric} for both {s.label} and the reference")
    if len(s.rows) < cond.seeds:
        missing.append(f"{cond.seeds} seeds for {s.label} (has {len(s.rows)})")
    if cond.budgets == "default" and s.budget != "default":
        missing.append(f"{s.label} at its default budget (ran at {s.budget})")
    text = s.summary(cond.metric) + (f"; reference {ref:.4g}" if ref is not None else "")
    ci = s.interval(cond.metric)
    if missing or ci is None:
        return Comparison(UNTESTABLE, text, missing or ["an interval over the seeds"])
    sign = 1 if cond.larger_is_better else -1
    low, high = sorted((sign * (ci[0] - ref), sign * (ci[1] - ref)))
    if low > cond.tolerance:
        return Comparison(HOLDS, text, [], (sign * (s.mean(cond.metric) - ref), low, high))
    if high < -cond.tolerance:
        return Comparison(FAILS, text, [], (sign * (s.mean(cond.metric) - ref), low, high))
    return Comparison(UNTESTABLE, text, [f"an interval outside ±{cond.tolerance:g}"])


# ---------------------------------------------------------------- the page


def reproduced(frame: pd.DataFrame) -> pd.DataFrame:
    """The entries a finding may read: those CI re-ran from their recorded configuration. A re-scored
    entry's numbers are true of its images, but nothing shows the attack made them: a contributor
    could pick images that turn a verdict. Held entries (an own attack's leakage waits for the board's
    sealed run, issue 43) and failed ones are never "reproduced" here; nor is any entry on a draw of a
    burned season (core/seasons: 2026-s1, whose members are public): its verdicts are retired."""
    from reconbench.leaderboard.frame import practice

    return frame[(frame["trust"] == "reproduced") & ~practice(frame)]


def default_conditions() -> dict[str, Conditions]:
    """The checkout's docs/grids/findings.toml (this module lives in toolkit/reconbench/leaderboard/)."""
    return load_conditions(Path(__file__).resolve().parents[3] / CONDITIONS)


def verdicts(frame: pd.DataFrame, conditions: dict[str, Conditions] | None = None
             ) -> tuple[list[tuple[Claim, Verdict]], list[dict]]:
    conditions = conditions if conditions is not None else default_conditions()
    frame = reproduced(frame)
    out = []
    for claim in CLAIMS:
        cond = conditions.get(claim.key)
        if cond is None:
            out.append((claim, Verdict(UNTESTABLE, "", [], [f"its conditions in {CONDITIONS} ([claims.{claim.key}])"])))
            continue
        out.append((claim, claim.judge(frame, cond)))
    return out, gap_table(frame, entry_gaps(frame))


def add_to_bundle(bundle, conditions_file: Path | None = None) -> None:
    """The hook's call: render findings.md from the bundle's entries."""
    from reconbench.leaderboard.pages import Pages

    conditions = load_conditions(conditions_file) if conditions_file is not None else default_conditions()
    pages = Pages()
    results, gaps = verdicts(bundle.frame, conditions)
    frame = reproduced(bundle.frame)
    has_gan = bool(frame["track"].eq(SPLIT5).any()) if len(frame) else False
    cond = conditions.get("aux-mean")
    vs_mean = gan_vs_aux_mean(frame, aux_mean_scores() if has_gan else None, cond) if cond else None
    pages.page(PAGE, "findings.md.j2", results=results, gaps=gaps, vs_mean=vs_mean, alpha=ALPHA,
               significance=SIGNIFICANCE, untestable=UNTESTABLE, isnan=lambda v: v is None or np.isnan(v))
    bundle.files.update(pages.markdown)
    bundle.fragments.update(pages.fragments)
