"""The "SoK findings" page (findings.md): the SoK's testable claims, each with its evidence in the
paper and our verdict computed from the entries on the Fashion-MNIST tracks. No number is typed
here: every value on the page is read from the validated entries (the board's frame, and the
membership gaps of their result files), and a claim whose entries are missing says so.

Each claim names the entries it compares (track, attack, cell) and a rule; the verdict is
"holds", "does not hold" or "not testable here" (with the reason: entries missing, or a metric
that cannot be computed on these machines, e.g. FID without the Inception weights).
docs/grids/findings.toml re-runs every entry behind the page (`recon-submit sweep`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

log = logging.getLogger(__name__)

PAGE = "findings.md"
HOLDS, FAILS, UNTESTABLE = "holds", "does not hold", "not testable here"
GAN_ATTACKS = ("revealer", "kedmi", "plg-mi")
OTHER_STATIC = ("mi-face", "deepdream", "deepinversion", "inv-alignment")
SIZES = ("fashion-n100", "fashion-n500", "fashion-n1000")
UPDATES = ("fashion-n1000-u1", "fashion-n1000-u8", "fashion-n1000-u64")
# metric -> (label, True when larger is better)
COMPARED = {"ssim": ("SSIM", True), "knn_dist": ("KNN dist", False), "acc_top1": ("Acc@1", True)}
ALPHA = 0.01  # a gap is significant below this p (the leakage check's level)
# A claim about one attack under two conditions (sizes, BatchNorm, aux, access) compares entries of
# one budget preset, the largest at which its entries exist: a default run beside a quick one would
# measure the budget. A claim between attacks takes each attack at the largest budget it has (a
# preset means a different amount of work for each attack anyway).
BUDGETS = ("paper", "default", "quick")


@dataclass
class Verdict:
    status: str
    reason: str
    table: list[dict] = field(default_factory=list)  # rows shown under the claim (values from entries)
    budget: str | None = None  # the budget preset of the entries compared


@dataclass(frozen=True)
class Claim:
    key: str
    statement: str
    evidence: str  # where the SoK shows it
    rule: str  # how we decide, in words
    judge: Callable[[pd.DataFrame], Verdict]
    one_budget: bool = True  # False: a claim between attacks, each at its largest budget


# ---------------------------------------------------------------- reading the entries


def _rows(frame: pd.DataFrame, track: str, attack: str | None = None, cell: str | None = None) -> pd.DataFrame:
    """Validated entries of a track (and attack, and cell). A white-box attack in a black-box cell
    ran on a stolen surrogate (reconbench.image.surrogate): the cell tells the two apart."""
    rows = frame[(frame["track"] == track) & (frame["trust"] != "failed")]
    if attack is not None:
        rows = rows[rows["attack"] == attack]
    if cell is not None:
        rows = rows[rows["scenario"] == cell]
    return rows


def _value(rows: pd.DataFrame, metric: str) -> float | None:
    """The metric of the most recent entry among `rows` (None when none has it)."""
    rows = rows[rows[metric].notna()] if metric in rows else rows.iloc[0:0]
    if rows.empty:
        return None
    return float(rows.sort_values("date").iloc[-1][metric])


def _entry(rows: pd.DataFrame) -> dict | None:
    if rows.empty:
        return None
    r = rows.sort_values("date").iloc[-1]
    return dict(page=r["page"], attack=r["attack"], track=r["track"], scenario=r["scenario"], config=r["config"])


def _better(a: float, b: float, larger: bool) -> bool:
    return a > b if larger else a < b


def _line(label: str, rows: pd.DataFrame, metrics=COMPARED) -> dict:
    entry = _entry(rows)
    budget = rows.sort_values("date").iloc[-1]["budget"] if not rows.empty else None
    if isinstance(budget, str):  # which preset the compared entry ran at (claims may mix them)
        label = f"{label} ({budget})"
    return dict(label=label, entry=entry, values={m: _value(rows, m) for m in metrics})


def _compare(name_a: str, rows_a: pd.DataFrame, name_b: str, rows_b: pd.DataFrame, metrics=COMPARED
             ) -> tuple[int, int, list[str]]:
    """(metrics where A is better, metrics compared, their descriptions) for two sets of entries."""
    wins, compared, said = 0, 0, []
    for m, (label, larger) in metrics.items():
        a, b = _value(rows_a, m), _value(rows_b, m)
        if a is None or b is None:
            continue
        compared += 1
        win = _better(a, b, larger)
        wins += win
        said.append(f"{label} {a:.4g} vs {b:.4g} ({name_a} {'better' if win else 'not better'})")
    return wins, compared, said


def _missing(what: str) -> Verdict:
    return Verdict(UNTESTABLE, f"no validated entry for {what} yet")


# ---------------------------------------------------------------- the claims


def gan_beats_others(frame: pd.DataFrame) -> Verdict:
    track, table, wins, compared, said = "fashion-n100", [], 0, 0, []
    gans = {a: _rows(frame, track, a, "static/white-box/same") for a in GAN_ATTACKS}
    others = {a: _rows(frame, track, a) for a in OTHER_STATIC}
    others = {a: r[r["access"] == "white-box"] if a != "inv-alignment" else r for a, r in others.items()}
    gans = {a: r for a, r in gans.items() if not r.empty}
    others = {a: r for a, r in others.items() if not r.empty}
    if not gans or not others:
        return _missing(f"GAN and non-GAN static attacks on {track}")
    for name, rows in {**gans, **others}.items():
        table.append(_line(name, rows))
    for m, (label, larger) in COMPARED.items():
        g = [v for v in (_value(r, m) for r in gans.values()) if v is not None]
        o = [v for v in (_value(r, m) for r in others.values()) if v is not None]
        if not g or not o:
            continue
        best_g, best_o = (max if larger else min)(g), (max if larger else min)(o)
        compared += 1
        wins += _better(best_g, best_o, larger)
        said.append(f"best GAN {label} {best_g:.4g} vs best other {best_o:.4g}")
    status = HOLDS if compared and wins == compared else FAILS if compared else UNTESTABLE
    return Verdict(status, "; ".join(said) + ". FID (the SoK's measure here) needs the Inception weights, "
                   "which these machines cannot fetch: compared on the sample-level and classifier metrics.", table)


def updates_leak_beats_deep_leakage(frame: pd.DataFrame) -> Verdict:
    table, holds, tested, said = [], 0, 0, []
    metrics = {"ssim": ("SSIM", True), "mse": ("MSE", False)}
    for track in UPDATES:
        ul, dl = _rows(frame, track, "updates-leak"), _rows(frame, track, "deep-leakage")
        if ul.empty or dl.empty:
            continue
        table += [_line(f"updates-leak on {track}", ul, metrics), _line(f"deep-leakage on {track}", dl, metrics)]
        wins, compared, text = _compare("Updates-Leak", ul, "Deep-Leakage", dl, metrics)
        if compared:
            tested += 1
            holds += wins == compared
            said.append(f"{track}: " + ", ".join(text))
    if not tested:
        return _missing("both attacks on one of " + ", ".join(UPDATES))
    return Verdict(HOLDS if holds == tested else FAILS, "; ".join(said), table)


def _series(frame: pd.DataFrame) -> dict[tuple[str, str], list[tuple[str, pd.DataFrame]]]:
    """(attack, cell) -> [(track, its entries)] over the nested sizes, where it has two or more."""
    out = {}
    sized = frame[frame["track"].isin(SIZES) & (frame["trust"] != "failed")]
    for (attack, cell), _ in sized.groupby(["attack", "scenario"]):
        points = [(t, _rows(frame, t, attack, cell)) for t in SIZES]
        points = [(t, r) for t, r in points if not r.empty]
        if len(points) >= 2:
            out[(attack, cell)] = points
    return out


def coverage_falls_with_size(frame: pd.DataFrame) -> Verdict:
    table, holds, tested, said = [], 0, 0, []
    for (attack, cell), points in _series(frame).items():
        covs = [(t, _value(r, "ssim_coverage")) for t, r in points]
        covs = [(t, c) for t, c in covs if c is not None]
        table += [dict(label=f"{attack} ({cell}) on {t}", entry=_entry(r), values={"ssim_coverage": _value(r, "ssim_coverage")})
                  for t, r in points]
        if len(covs) < 2:
            continue
        tested += 1
        falls = all(a[1] > b[1] for a, b in zip(covs, covs[1:]))
        holds += falls
        said.append(f"{attack}: " + " > ".join(f"{c:.1%} ({t})" for t, c in covs) + ("" if falls else " (not falling)"))
    if not tested:
        return _missing("one attack on two or more of " + ", ".join(SIZES))
    # the sizes the entries have, not all of SIZES: a claim at one budget may have two of the three
    return Verdict(HOLDS if holds == tested else FAILS, "SSIM coverage, smallest target set first: " + "; ".join(said),
                   table)


def smaller_sets_leak_more(frame: pd.DataFrame, gaps: dict) -> Verdict:
    table, holds, tested, said, inconclusive = [], 0, 0, [], []
    for (attack, cell), points in _series(frame).items():
        measured = []
        for t, r in points:
            entry = _entry(r)
            gap = gaps.get(entry["page"], {}).get("ssim")
            if gap is not None:
                measured.append((t, gap["value"], gap.get("p")))
                table.append(dict(label=f"{attack} ({cell}) on {t}", entry=entry,
                                  values={"ssim_gap": gap["value"], "ssim_gap_p": gap.get("p")}))
        if len(measured) < 2:
            continue
        if not any(p is not None and p < ALPHA for _, _, p in measured):  # differences of noise: no ordering
            inconclusive.append(f"{attack}: SSIM gap " + " → ".join(f"{g:+.4f} (p {p:.2g})" for _, g, p in measured))
            continue
        tested += 1
        shrinks = measured[0][1] > measured[-1][1]
        holds += shrinks
        said.append(f"{attack}: SSIM gap " + " → ".join(f"{g:+.4f}" for _, g, _ in measured))
    if not tested and inconclusive:
        return Verdict(UNTESTABLE, f"no size shows a significant SSIM gap (p < {ALPHA:g}), so the order of the gaps "
                       "is noise: " + "; ".join(inconclusive), table)
    if not tested:
        return Verdict(UNTESTABLE, "needs the membership gap of one attack at two or more of " + ", ".join(SIZES)
                       + " (the SoK measures closeness with a GPT-4o judge, which is not run here; the gap "
                       "between D_tar and the holdout is our measure of 'closer to its own targets')")
    return Verdict(HOLDS if holds == tested else FAILS, "; ".join(said) + ". The SoK counts GPT-4o 'similar' verdicts; "
                   "we measure how much closer reconstructions are to D_tar than to the holdout.", table)


def similar_aux_costs_moderately(frame: pd.DataFrame) -> Verdict:
    track, table, said, worse, tested, still = "fashion-split5-n500", [], [], 0, 0, 0
    metrics = {"knn_dist": ("KNN dist", False), "acc_top1": ("Acc@1", True)}
    for attack in GAN_ATTACKS:
        same = _rows(frame, track, attack, "static/white-box/same")
        similar = _rows(frame, track, attack, "static/white-box/similar")
        if same.empty or similar.empty:
            continue
        table += [_line(f"{attack}, same-distribution aux", same, metrics),
                  _line(f"{attack}, similar (other classes)", similar, metrics)]
        wins, compared, text = _compare("same", same, "similar", similar, metrics)
        acc = _value(similar, "acc_top1")
        if compared:
            tested += 1
            worse += wins == compared
            still += acc is not None and acc > 1 / 5  # the similar cell still beats chance (5 classes)
            said.append(f"{attack}: " + ", ".join(text))
    if not tested:
        return _missing(f"a GAN attack in both the same and the similar cell of {track}")
    moderate = worse == tested and still == tested
    return Verdict(HOLDS if moderate else FAILS, "; ".join(said) + f". Rule: every GAN attack scores worse with the "
                   "similar aux (a cost) and its Acc@1 stays above chance, 1/5 (moderate, not a collapse).", table)


def white_box_beats_stealing(frame: pd.DataFrame) -> Verdict:
    track = "fashion-n100"
    wb = _rows(frame, track, "deepinversion", "static/white-box/none")
    bb = _rows(frame, track, "deepinversion", "static/black-box/none")
    if wb.empty or bb.empty:
        return _missing(f"DeepInversion white-box and through a DFME surrogate on {track}")
    wins, compared, said = _compare("white-box", wb, "black-box via DFME", bb)
    table = [_line("deepinversion, white-box", wb), _line("deepinversion through a DFME-stolen surrogate", bb)]
    return _judged(wins, compared, said, table)


def batchnorm_statistics_matter(frame: pd.DataFrame) -> Verdict:
    updated = _rows(frame, "fashion-n100", "deepinversion", "static/white-box/none")
    fixed = _rows(frame, "fashion-n100-bn-frozen", "deepinversion", "static/white-box/none")
    if updated.empty or fixed.empty:
        return _missing("DeepInversion on fashion-n100 and fashion-n100-bn-frozen")
    wins, compared, said = _compare("BN updated", updated, "BN fixed", fixed)
    table = [_line("BatchNorm updated (fashion-n100)", updated), _line("BatchNorm fixed (fashion-n100-bn-frozen)", fixed)]
    return _judged(wins, compared, said, table)


def _judged(wins: int, compared: int, said: list[str], table: list[dict]) -> Verdict:
    """Holds when the first side wins every metric both sides have; with no such metric (values not
    verified yet: a held or unchecked entry publishes none) nothing is compared and nothing is judged."""
    if not compared:
        return Verdict(UNTESTABLE, "the entries are there, but no metric of both is verified yet", table)
    return Verdict(HOLDS if wins == compared else FAILS, ", ".join(said), table)


CLAIMS = (
    Claim("gan", "GAN-based attacks (Revealer, KEDMI, PLG-MI) reconstruct better than the other static attacks.",
          "§5.1 'Dataset-level Metric' and Table 2 (lower FID on CelebA, 'this pattern holds for the other two datasets')",
          "on fashion-n100, the best GAN attack beats the best of MI-Face, DeepDream, DeepInversion and Inv-Alignment "
          "on every metric compared (SSIM, KNN distance, Acc@1)", gan_beats_others, one_budget=False),
    Claim("updates", "Updates-Leak reconstructs the update set better than Deep-Leakage.",
          "§5.1 'Dataset-level Metric' (Updates-Leak's lower FID) and Table 2",
          "on every fashion-n1000-u* track with both attacks, Updates-Leak is better on SSIM and MSE",
          updates_leak_beats_deep_leakage, one_budget=False),
    Claim("coverage", "Coverage falls as the target set grows.",
          "§5.1 'Sample-level Metric' ('a decline in coverage as the size of the training dataset increases') and Table 2",
          "for every attack with entries at two or more sizes (100, 500, 1,000), SSIM coverage falls with each step",
          coverage_falls_with_size),
    Claim("memorization", "Models trained on smaller sets give reconstructions closer to their own training samples.",
          "§6 and Table 3 (GPT-4o counts fall from 1,000 to 20,000 training images)",
          "for every attack with entries at two or more sizes, the SSIM membership gap (D_tar minus holdout) is larger "
          "at the smallest size than at the largest", None),
    Claim("similar", "A similar-distribution aux set costs GAN attacks moderately.",
          "§7 'Influence of Data Access' and Figure 4a (PLG-MI's FID with same vs similar aux)",
          "on fashion-split5-n500 (GMI's MNIST convention: the aux of the similar cell holds none of the private "
          "classes), every GAN attack is worse in the similar cell on KNN distance and Acc@1, yet above chance",
          similar_aux_costs_moderately),
    Claim("access", "White-box access beats black-box access through a stolen surrogate.",
          "§7 'Influence of Model Access' and Figure 4b (surrogates stolen with DFME)",
          "DeepInversion on fashion-n100 white-box beats DeepInversion run on a DFME-stolen surrogate of it in the "
          "black-box cell, on every metric compared", white_box_beats_stealing),
    Claim("batchnorm", "DeepInversion needs the BatchNorm statistics: it degrades on a target whose BatchNorm is fixed.",
          "§7 and Table 7 (FID with BatchNorm updated vs fixed)",
          "DeepInversion on fashion-n100 beats DeepInversion on fashion-n100-bn-frozen (same recipe, BatchNorm frozen "
          "at its initial statistics) on every metric compared", batchnorm_statistics_matter),
)


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
    metrics = (payload.get("membership") or {}).get("metrics") or {}
    return {m: {"value": g.get("value", g.get("gap")), "p": g.get("p"), "low": g.get("low"), "high": g.get("high")}
            for m, g in metrics.items() if isinstance(g, dict) and g.get("value", g.get("gap")) is not None}


def gap_table(frame: pd.DataFrame, gaps: dict[str, dict]) -> list[dict]:
    """One row per Fashion-MNIST entry: its gaps on SSIM and KNN distance, and whether one is significant."""
    rows = []
    for row in frame[frame["track"].astype(str).str.startswith("fashion-")].sort_values(["track", "attack"]).to_dict("records"):
        if row["trust"] == "failed":
            continue
        g = gaps.get(row["page"], {})
        significant = sorted(m for m, v in g.items() if v.get("p") is not None and v["p"] < ALPHA and v["value"] > 0)
        rows.append(dict(entry=dict(page=row["page"], attack=row["attack"], track=row["track"], scenario=row["scenario"],
                                    budget=row["budget"]),
                         ssim=g.get("ssim"), knn=g.get("knn_dist"), significant=significant, measured=bool(g)))
    return rows


SPLIT5 = "fashion-split5-n500"
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


def gan_vs_aux_mean(frame: pd.DataFrame, reference: dict | None) -> Verdict:
    """Issue 22's check: in the similar cell, do the GAN attacks beat the per-class aux mean?"""
    table, beat, tested, said = [], 0, 0, []
    if reference is None:
        return Verdict(UNTESTABLE, f"the data of {SPLIT5} is not on the machine that built this page")
    table.append(dict(label="per-class mean of the similar aux (labelled by the target's top-1)", entry=None,
                      values={m: reference.get(m) for m in VS_MEAN}))
    for attack in GAN_ATTACKS:
        rows = _rows(frame, SPLIT5, attack, "static/white-box/similar")
        if rows.empty:
            continue
        table.append(_line(attack, rows, VS_MEAN))
        wins = [(label, _better(v, reference[m], larger)) for m, (label, larger) in VS_MEAN.items()
                if (v := _value(rows, m)) is not None and reference.get(m) is not None]
        tested += 1
        beat += bool(wins) and all(w for _, w in wins)
        said.append(f"{attack} beats it on " + (", ".join(lbl for lbl, w in wins if w) or "nothing")
                    + (f", not on {', '.join(lbl for lbl, w in wins if not w)}" if not all(w for _, w in wins) else ""))
    if not tested:
        return _missing(f"a GAN attack in the similar cell of {SPLIT5}")
    return Verdict(HOLDS if beat == tested else FAILS, "; ".join(said) + ". FID is not computed here (no Inception "
                   "weights on these machines).", table)


def _largest_budget_of_each_run(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (track, attack, cell): only its entries at the largest budget it has."""
    rank = frame["budget"].map({b: i for i, b in enumerate(BUDGETS)}).fillna(len(BUDGETS))
    best = rank.groupby([frame["track"], frame["attack"], frame["scenario"]]).transform("min")
    return frame[rank == best]


def judged_at_largest_budget(claim: Claim, frame: pd.DataFrame, gaps: dict) -> Verdict:
    """The claim's verdict on the entries of the largest budget preset that makes it testable; when
    none does, the reason given at the smallest one that has entries (where most entries are)."""
    def judge(part: pd.DataFrame) -> Verdict:
        return smaller_sets_leak_more(part, gaps) if claim.key == "memorization" else claim.judge(part)

    if not claim.one_budget:
        verdict = judge(_largest_budget_of_each_run(frame))
        verdict.budget = "each attack's largest" if len(frame) else None
        return verdict
    verdict = None
    for budget in BUDGETS:
        part = frame[frame["budget"] == budget]
        if part.empty:
            continue
        verdict = judge(part)
        verdict.budget = budget
        if verdict.status != UNTESTABLE:
            return verdict
    return verdict if verdict is not None else judge(frame)  # no entry records a budget


def reproduced(frame: pd.DataFrame) -> pd.DataFrame:
    """The entries a finding may read: those CI re-ran from their recorded configuration. A re-scored
    entry's numbers are true of its images, but nothing shows the attack made them: a contributor
    could pick images that turn a verdict."""
    return frame[frame["trust"] == "reproduced"]


def verdicts(frame: pd.DataFrame, reference: dict | None = None) -> tuple[list[tuple[Claim, Verdict]], list[dict]]:
    frame = reproduced(frame)
    gaps = entry_gaps(frame)
    return [(claim, judged_at_largest_budget(claim, frame, gaps)) for claim in CLAIMS], gap_table(frame, gaps)


def add_to_bundle(bundle) -> None:
    """The hook's call: render findings.md from the bundle's entries."""
    from reconbench.leaderboard.pages import Pages

    pages = Pages()
    results, gaps = verdicts(bundle.frame)
    frame = reproduced(bundle.frame)
    has_gan = frame["track"].eq(SPLIT5).any() if len(frame) else False
    vs_mean = gan_vs_aux_mean(frame, aux_mean_scores() if has_gan else None) if has_gan else \
        _missing(f"a GAN attack in the similar cell of {SPLIT5}")
    pages.page(PAGE, "findings.md.j2", results=results, gaps=gaps, vs_mean=vs_mean, alpha=ALPHA,
               isnan=lambda v: v is None or np.isnan(v))
    bundle.files.update(pages.markdown)
    bundle.fragments.update(pages.fragments)
