"""The SoK's claims the findings page puts to the entries (leaderboard/findings.py renders them): each
names the sides it compares (attack, track, cell) and is judged by leaderboard/findings_rule.py under
the conditions docs/grids/findings.toml declares for it. A claim whose tracks or entries do not exist
says what is missing and the command that would supply it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from reconbench.leaderboard.findings_rule import (FAILS, FALSE_POSITIVE, HOLDS, UNTESTABLE, Comparison, Conditions,
                                                  Side, combine, compare, side_of)

GAN_ATTACKS = ("revealer", "kedmi", "plg-mi")
OTHER_STATIC = {"mi-face": "static/white-box/none", "deepdream": "static/white-box/none",
                "deepinversion": "static/white-box/none", "inv-alignment": "static/black-box/same"}
SIZES = ("fashion-n100", "fashion-n500", "fashion-n1000")
UPDATES = ("fashion-n1000-u1", "fashion-n1000-u8", "fashion-n1000-u64")
SPLIT5 = "fashion-split5-n500"
WB_NONE, WB_SAME = "static/white-box/none", "static/white-box/same"
# The per-target extraction count (issue 33): the frame's JSON of each entry's count, whose `extracted`
# lists the members extracted per group (leaderboard/leakage.fill_extraction), so which targets an entry
# extracts. The memorization claim reads it; an entry validated without a count has none.
EXTRACTION = "extraction"


@dataclass
class Verdict:
    status: str
    reason: str  # what the entries show
    table: list[dict] = field(default_factory=list)  # the sides compared, with their intervals
    missing: list[str] = field(default_factory=list)  # what a verdict still needs
    conditions: str | None = None
    command: str | None = None
    power: float | None = None
    false_positive: float | None = None


@dataclass(frozen=True)
class Claim:
    key: str
    statement: str
    evidence: str  # where the SoK shows it
    rule: str  # the comparison, in words
    judge: Callable[[pd.DataFrame, Conditions], Verdict]


# ---------------------------------------------------------------- sides and comparisons -> a verdict


def _row(side: Side | None, label: str, cond: Conditions, extra=("acc_top1",)) -> dict:
    """A table row: the side's entries (one link per seed) and each metric's mean with its interval."""
    if side is None:
        return dict(label=label, entries=[], values={}, budget=None, seeds=0, labels_wrong=None)
    metrics = list(dict.fromkeys([cond.metric, *extra]))
    values = {m: dict(mean=side.mean(m), interval=side.interval(m)) for m in metrics if m in side.rows}
    return dict(label=label, entries=[dict(seed=int(r["seed"]), page=r["page"]) for r in side.rows.to_dict("records")],
                values=values, budget=side.budget, seeds=len(side.rows), labels_wrong=side.labels(cond.metric))


def _verdict(cond: Conditions, comparisons: list[tuple[str, Comparison]], table: list[dict],
             absent: str | None = None) -> Verdict:
    if not comparisons:
        return Verdict(UNTESTABLE, "", table, [absent or "no entries to compare"], cond.describe(), cond.command)
    status, missing = combine(comparisons)
    # a pair's name prefixes its text only where the text does not say it already (labels name the track)
    reason = "; ".join(f"{name}: {c.text}" if name and name not in c.text else c.text for name, c in comparisons if c.text)
    powers = [c.power for _, c in comparisons if c.power is not None]
    return Verdict(status, reason, table, missing, cond.describe(), cond.command if status == UNTESTABLE else None,
                   min(powers) if powers else None, FALSE_POSITIVE if status != UNTESTABLE else None)


def _pairs(frame: pd.DataFrame, cond: Conditions, pairs) -> Verdict:
    """pairs: [(name, (label, track, attack, cell), (label, track, attack, cell))]: A beats B in each."""
    comparisons, table = [], []
    for name, spec_a, spec_b in pairs:
        a, b = _sides(frame, cond, spec_a, spec_b)
        if a is None and b is None and len(pairs) > 1:
            continue  # a pair with no entry at all is not part of this claim's evidence
        comparisons.append((name, compare(a, b, cond, _what(*spec_a), _what(*spec_b))))
        table += [_row(a, spec_a[0], cond), _row(b, spec_b[0], cond)]
    absent = "no validated entry for " + " nor ".join(f"{_what(*a)} / {_what(*b)}" for _, a, b in pairs)
    return _verdict(cond, comparisons, table, absent)


def _sides(frame: pd.DataFrame, cond: Conditions, spec_a, spec_b) -> tuple[Side | None, Side | None]:
    """Both sides of a pair; under `budgets = "equal"` at a configuration they share where one exists
    (each side alone is read at its largest seed group, which may be another preset's)."""
    a, b = side_of(frame, *spec_a, prefer=_preferred(cond)), side_of(frame, *spec_b, prefer=_preferred(cond))
    if cond.budgets == "equal" and a is not None and b is not None and a.budget != b.budget:
        if (b2 := side_of(frame, *spec_b, prefer=a.budget)).budget == a.budget:
            return a, b2
        if (a2 := side_of(frame, *spec_a, prefer=b.budget)).budget == b.budget:
            return a2, b
    return a, b


def _preferred(cond: Conditions) -> str | None:
    """The configuration a side should be read at: the default preset where the claim asks for it."""
    return "default" if cond.budgets == "default" else None


def _what(label: str, track: str, attack: str, cell: str | None = None) -> str:
    from reconbench.core.tracks import TrackError, get_track

    try:
        get_track(track)
        known = ""
    except (TrackError, KeyError, ValueError):
        known = ", a track not in the registry yet"
    return f"{attack} on {track}" + (f" ({cell})" if cell else "") + known


# ---------------------------------------------------------------- the claims


def gan_beats_others(frame: pd.DataFrame, cond: Conditions) -> Verdict:
    track = "fashion-n100"
    prefer = _preferred(cond)
    gans = [s for a in GAN_ATTACKS if (s := side_of(frame, a, track, a, WB_SAME, prefer)) is not None]
    others = [s for a, cell in OTHER_STATIC.items() if (s := side_of(frame, a, track, a, cell, prefer)) is not None]
    table = [_row(s, s.label, cond) for s in gans + others]
    if not gans or not others:
        return _verdict(cond, [], table, f"no validated entry for a GAN attack and another static attack on {track}")
    best_gan, best_other = _best(gans, cond), _best(others, cond)
    return _verdict(cond, [("best GAN vs best other", compare(best_gan, best_other, cond))], table)


def _best(sides: list[Side], cond: Conditions) -> Side:
    """The side with the best mean on the claim's metric (the first when none has one)."""
    scored = [s for s in sides if s.mean(cond.metric) is not None]
    if not scored:
        return sides[0]
    return (max if cond.larger_is_better else min)(scored, key=lambda s: s.mean(cond.metric))


def updates_leak_beats_deep_leakage(frame: pd.DataFrame, cond: Conditions) -> Verdict:
    return _pairs(frame, cond, [(t, (f"updates-leak on {t}", t, "updates-leak", "dynamic/black-box/same"),
                                 (f"deep-leakage on {t}", t, "deep-leakage", "dynamic/white-box/none")) for t in UPDATES])


def _attacks_on(frame: pd.DataFrame, tracks) -> list[tuple[str, str]]:
    rows = frame[frame["track"].isin(tracks) & (frame["trust"] != "failed")]
    counts = rows.groupby(["attack", "scenario"])["track"].nunique()
    return [k for k, n in counts.items() if n >= 2]


def coverage_falls_with_size(frame: pd.DataFrame, cond: Conditions) -> Verdict:
    pairs = []
    for attack, cell in _attacks_on(frame, SIZES):
        present = [t for t in SIZES if side_of(frame, t, t, attack, cell) is not None]
        pairs += [(f"{attack} {small} → {large}", (f"{attack} on {small}", small, attack, cell),
                   (f"{attack} on {large}", large, attack, cell)) for small, large in zip(present, present[1:])]
    if not pairs:
        return _verdict(cond, [], [], "no attack with validated entries at two or more of " + ", ".join(SIZES))
    return _pairs(frame, cond, pairs)


def smaller_sets_leak_more(frame: pd.DataFrame, cond: Conditions) -> Verdict:
    pairs = [(attack, (f"{attack} on {SIZES[0]}", SIZES[0], attack, cell), (f"{attack} on {SIZES[-1]}", SIZES[-1], attack, cell))
             for attack, cell in _attacks_on(frame, (SIZES[0], SIZES[-1]))]
    if not pairs:
        return _verdict(cond, [], [], f"no attack with validated entries on both {SIZES[0]} and {SIZES[-1]}")
    return _pairs(frame, cond, pairs)


def similar_aux_costs_moderately(frame: pd.DataFrame, cond: Conditions) -> Verdict:
    return _pairs(frame, cond, [(a, (f"{a}, same-distribution aux", SPLIT5, a, WB_SAME),
                                 (f"{a}, similar aux (other classes)", SPLIT5, a, "static/white-box/similar"))
                                for a in GAN_ATTACKS])


def white_box_beats_stealing(frame: pd.DataFrame, cond: Conditions) -> Verdict:
    return _pairs(frame, cond, [("", ("deepinversion, white-box", "fashion-n100", "deepinversion", WB_NONE),
                                 ("deepinversion through a DFME-stolen surrogate", "fashion-n100", "deepinversion",
                                  "static/black-box/none"))])


def batchnorm_statistics_matter(frame: pd.DataFrame, cond: Conditions) -> Verdict:
    return _pairs(frame, cond, [("", ("BatchNorm updated (fashion-n100)", "fashion-n100", "deepinversion", WB_NONE),
                                 ("BatchNorm fixed (fashion-n100-bn-frozen)", "fashion-n100-bn-frozen", "deepinversion",
                                  WB_NONE))])


def deepinversion_beats_deepdream(frame: pd.DataFrame, cond: Conditions) -> Verdict:
    return _pairs(frame, cond, [("", ("deepinversion", "fashion-n100", "deepinversion", WB_NONE),
                                 ("deepdream", "fashion-n100", "deepdream", WB_NONE))])


def inv_alignment_other_aux(frame: pd.DataFrame, cond: Conditions) -> Verdict:
    return _pairs(frame, cond, [("", ("inv-alignment, similar aux (other classes)", SPLIT5, "inv-alignment",
                                      "static/black-box/similar"),
                                 ("inv-alignment, same-distribution aux", SPLIT5, "inv-alignment", "static/black-box/same"))])


def pretraining_helps(frame: pd.DataFrame, cond: Conditions) -> Verdict:
    return _pairs(frame, cond, [("", ("plg-mi, target fine-tuned from pre-trained weights", "fashion-n1000-pre", "plg-mi",
                                      WB_SAME),
                                 ("plg-mi, target trained from scratch", "fashion-n1000", "plg-mi", WB_SAME))])


def wider_embedding_helps(frame: pd.DataFrame, cond: Conditions) -> Verdict:
    return _pairs(frame, cond, [("", ("plg-mi, the recipe's feature width", "fashion-n1000", "plg-mi", WB_SAME),
                                 ("plg-mi, feature width / 16", "fashion-n1000-emb-div16", "plg-mi", WB_SAME))])


def vec2text_falls_with_size(frame: pd.DataFrame, cond: Conditions) -> Verdict:
    return _pairs(frame, cond, [("", ("vec2text on sst2-n1000", "sst2-n1000", "vec2text", None),
                                 ("vec2text on sst2-n20000", "sst2-n20000", "vec2text", None))])


def _defense(track: str) -> Callable[[pd.DataFrame, Conditions], Verdict]:
    def judge(frame: pd.DataFrame, cond: Conditions) -> Verdict:
        attacks = sorted({a for a, c in _attacks_on(frame, ("fashion-n100", track))}) or ["deepinversion"]
        return _pairs(frame, cond, [(a, (f"{a} on fashion-n100 (undefended)", "fashion-n100", a, WB_NONE),
                                     (f"{a} on {track}", track, a, WB_NONE)) for a in attacks])
    return judge


def memorization_tracks_extraction(frame: pd.DataFrame, cond: Conditions) -> Verdict:
    """§6 at the level of one target: its Feldman memorization score against how often it is extracted.
    The per-target count is each entry's EXTRACTION column (which members it extracts), where validation computed it."""
    has = EXTRACTION in frame and frame[EXTRACTION].notna().any()
    missing = [] if has else [f"a reproduced entry with its per-target extraction count (`{EXTRACTION}`, issue 33)"]
    missing.append("a Feldman memorization score per target of fashion-n100 (`recon-submit memorization` gives the "
                   "model's mean; per target, with ≥ 3 seeds of the K-model estimate)")
    return Verdict(UNTESTABLE, "", [], missing, cond.describe(), cond.command)


def fid_ssim_correlation(frame: pd.DataFrame, cond: Conditions) -> Verdict:
    """Fig. 2: |correlation| of a sample-level metric with the dataset-level one across entries,
    each entry a seed group of ≥ cond.seeds. Observed with fewer seeds, never judged."""
    sides = []
    fashion = frame[frame["track"].astype(str).str.startswith("fashion-") & (frame["trust"] != "failed")]
    for (track, attack, cell), _ in fashion.groupby(["track", "attack", "scenario"]):
        s = side_of(frame, f"{attack} on {track}", track, attack, cell)
        if s is not None and s.mean("ssim") is not None and s.mean(cond.metric) is not None:
            sides.append(s)
    if len(sides) < 4:
        return Verdict(UNTESTABLE, "", [], [f"four or more entries with SSIM and {cond.metric} (has {len(sides)})"],
                       cond.describe(), cond.command)
    from scipy import stats

    x = np.array([s.mean("ssim") for s in sides])
    y = np.array([s.mean(cond.metric) for s in sides])
    rho = abs(float(stats.spearmanr(x, y).statistic))
    rng = np.random.default_rng(0)
    boot = [abs(stats.spearmanr(x[i], y[i]).statistic) for i in (rng.integers(0, len(x), len(x)) for _ in range(999))]
    low, high = np.nanpercentile(boot, [2.5, 97.5])
    reason = (f"|Spearman ρ| of SSIM with {cond.metric} over {len(sides)} entries: {rho:.3f}, bootstrap 95 % interval "
              f"[{low:.3f}, {high:.3f}] (the SoK: |r| 0.465 between FID and SSIM, all attacks)")
    few = [s.label for s in sides if len(s.rows) < cond.seeds]
    missing = [f"{cond.seeds} seeds per entry ({len(few)} of {len(sides)} have fewer)"] if few else []
    if cond.proxy:
        missing.append(f"FID ({cond.proxy})")
    weak = 0.7  # "relatively weak": the rule reads |ρ| below 0.7 - tolerance as weak, above 0.7 + tolerance as strong
    if not missing and high < weak - cond.tolerance:
        return Verdict(HOLDS, reason, [], [], cond.describe(), None, None, FALSE_POSITIVE)
    if not missing and low > weak + cond.tolerance:
        return Verdict(FAILS, reason, [], [], cond.describe(), None, None, FALSE_POSITIVE)
    if not missing:
        missing.append(f"an interval outside 0.7 ± {cond.tolerance:g}")
    return Verdict(UNTESTABLE, reason, [], missing, cond.describe(), cond.command)


CLAIMS = (
    Claim("gan", "GAN-based attacks (Revealer, KEDMI, PLG-MI) reconstruct better than the other static attacks.",
          "§5.1 'Dataset-level Metric' and Table 2 (lower FID on CelebA, 'this pattern holds for the other two datasets')",
          "on fashion-n100, the best GAN attack against the best of MI-Face, DeepDream, DeepInversion and Inv-Alignment",
          gan_beats_others),
    Claim("updates", "Updates-Leak reconstructs the update set better than Deep-Leakage.",
          "§5.1 'Dataset-level Metric' (Updates-Leak's lower FID) and Table 2",
          "Updates-Leak against Deep-Leakage on each fashion-n1000-u* track that has entries of either",
          updates_leak_beats_deep_leakage),
    Claim("coverage", "Coverage falls as the target set grows.",
          "§5.1 'Sample-level Metric' ('a decline in coverage as the size of the training dataset increases') and Table 2",
          "for every attack with entries at two or more sizes (100, 500, 1,000), SSIM coverage at each size against the next",
          coverage_falls_with_size),
    Claim("memorization", "Models trained on smaller sets give reconstructions closer to their own training samples.",
          "§6 and Table 3 (GPT-4o counts fall from 1,000 to 20,000 training images)",
          "for every attack with entries on fashion-n100 and fashion-n1000, the SSIM membership gap at 100 against 1,000",
          smaller_sets_leak_more),
    Claim("similar", "A similar-distribution aux set costs GAN attacks moderately.",
          "§7 'Influence of Data Access' and Figure 4a (PLG-MI's FID with same vs similar aux)",
          "on fashion-split5-n500, each GAN attack with the same-distribution aux against itself with the similar aux",
          similar_aux_costs_moderately),
    Claim("access", "White-box access beats black-box access through a stolen surrogate.",
          "§7 'Influence of Model Access' and Figure 4b (surrogates stolen with DFME)",
          "DeepInversion on fashion-n100 white-box against DeepInversion on a DFME-stolen surrogate (black-box cell)",
          white_box_beats_stealing),
    Claim("batchnorm", "DeepInversion needs the BatchNorm statistics: it degrades on a target whose BatchNorm is fixed.",
          "§7 and Table 7 (FID with BatchNorm updated vs fixed)",
          "DeepInversion on fashion-n100 against DeepInversion on fashion-n100-bn-frozen (BatchNorm frozen at its "
          "initial statistics)", batchnorm_statistics_matter),
    Claim("deepinversion", "DeepInversion consistently outperforms DeepDream.",
          "§7 'Influence of Model Access' ('As shown in Table 2, DeepInversion consistently outperforms DeepDream') and Table 2",
          "DeepInversion against DeepDream on fashion-n100, white-box", deepinversion_beats_deepdream),
    Claim("mem-score", "Targets the model memorizes more are reconstructed more often.",
          "§6 (Feldman's memorization, Eq. 1-2; Table 3: model memorization 1.000 → 0.301 as attacks weaken)",
          "per target of fashion-n100: its memorization score against the number of entries that extract it",
          memorization_tracks_extraction),
    Claim("fid-ssim", "Sample-level and dataset-level metrics correlate only weakly.",
          "§5.1 'Summary' and Figure 2d (|r| between FID and SSIM 0.465, PSNR 0.117, MSE 0.289)",
          "over the Fashion-MNIST entries, |Spearman ρ| between SSIM and the dataset-level metric below 0.7",
          fid_ssim_correlation),
    Claim("pretraining", "A target fine-tuned from pre-trained weights is reconstructed better than one trained from scratch.",
          "§6 and Table 5 (PLGMI vs PLGMI (Pre), GPT-4o counts)",
          "PLG-MI on a fine-tuned target against PLG-MI on the same data trained from scratch", pretraining_helps),
    Claim("embedding", "A narrower feature embedding degrades reconstruction.",
          "§6 and Table 6 (feature size 2,048 → 512 → 128, GPT-4o counts)",
          "PLG-MI on the recipe's feature width against PLG-MI on a target whose last layer is 16x narrower",
          wider_embedding_helps),
    Claim("inv-alignment", "Inv-Alignment can do better with aux data from another distribution than from the same.",
          "§7 'Influence of Data Access' (CIFAR100 as aux: FID 330.31; same distribution: 357.91)",
          "Inv-Alignment on fashion-split5-n500 with the similar aux against itself with the same-distribution aux",
          inv_alignment_other_aux),
    Claim("vec2text", "Vec2Text reconstructs worse as the training set grows.",
          "§8 and Table 9 (SST2 BLEU 0.169 at 1,000 → 0.058 at 20,000)",
          "Vec2Text on sst2-n1000 against sst2-n20000", vec2text_falls_with_size),
    Claim("dp", "DP-SGD training reduces reconstruction.",
          "§8 and Table 10 (PLGMI (DP): FID 173.7 vs 127.7 undefended at 1,000)",
          "each attack on fashion-n100 (undefended) against the same attack on fashion-n100-dp", _defense("fashion-n100-dp")),
    Claim("prune", "Pruning reduces reconstruction.",
          "§8 and Table 10 (PLGMI (Prune): FID 154.4 vs 127.7 undefended at 1,000)",
          "each attack on fashion-n100 (undefended) against the same attack on fashion-n100-prune",
          _defense("fashion-n100-prune")),
)
