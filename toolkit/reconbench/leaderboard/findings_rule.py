"""The findings page's decision rule: a verdict only under comparable conditions.

Each claim declares its conditions in docs/grids/findings.toml (`[claims.<key>]`):

    metric      the metric that decides: the paper's, or a proxy (then `proxy` says why)
    paper       the paper's metric, in words
    budgets     "equal" (every side at one preset with the same options) or "default" (each side at
                its attack's `default` preset, no option changed)
    seeds       the seeds each side needs (at least 3)
    tolerance   a band around "no difference", in the metric's units
    command     the command that would test the claim
    differs     (optional) how our setting differs from the paper's where no budget can fix it

A side is the entries of one attack on one track in one cell at one configuration (preset and
options), one per seed: a seed group. Comparing two sides, the rule says "holds" or "does not
hold" only when every condition is met and the 95 % Welch interval of the difference of their
means, over the seeds, lies wholly outside the band [-tolerance, +tolerance]. Otherwise the claim
is "not testable at this budget", with what is missing. Two refusals on top (SoK §5.1):

- a side whose mean Acc@1 is at chance (within two binomial standard errors of 1/classes)
  cannot decide a sample-level comparison: its nearest-target scores measure luck, not recovery;
- a side whose decisive metric carries label bookkeeping (reconstructions of a class absent from
  the targets, scored at the metric's worst: core/labels.py) cannot decide "which is
  better": the count is shown apart, as labels wrong.

A verdict carries its false-positive rate (a 95 % two-sided interval beyond the band says "holds"
at most 2.5 % of the time when the true difference is within the band) and its power: the chance
that the same number of seeds, with the spread observed, would decide a true difference of twice
the tolerance.
"""

from __future__ import annotations

import math
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from reconbench.image.metrics import METRICS
from reconbench.core.labels import labels_wrong

HOLDS, FAILS, UNTESTABLE = "holds", "does not hold", "not testable at this budget"
MIN_SEEDS = 3
LEVEL = 0.95
FALSE_POSITIVE = (1 - LEVEL) / 2  # one side of the two-sided interval
BUDGET_RULES = ("equal", "default")
# sample-level comparisons (the chance refusal applies): pixel metrics, their coverage, the KNN
# distance (each reconstruction's nearest target in the evaluation classifier's features), gaps
SAMPLE_LEVEL = {m for m, info in METRICS.items() if info.level == "sample"} | {"knn_dist"}


class ConditionsError(ValueError):
    """findings.toml's conditions cannot be read; the message names the file and the claim."""


@dataclass(frozen=True)
class Conditions:
    metric: str
    paper: str
    budgets: str
    seeds: int
    tolerance: float
    command: str
    proxy: str | None = None
    differs: str | None = None

    @property
    def larger_is_better(self) -> bool:
        base = self.metric.removesuffix("_coverage").removeprefix("gap_")
        if self.metric.endswith("_coverage") or self.metric.startswith("gap_"):
            return True  # coverage and membership gaps: more is more recovery
        info = METRICS.get(base)
        return info is None or info.direction != "↓"

    @property
    def sample_level(self) -> bool:
        return self.metric.removesuffix("_coverage").removeprefix("gap_") in SAMPLE_LEVEL

    def describe(self) -> str:
        metric = self.metric + (f" (proxy for the paper's {self.paper}: {self.proxy})" if self.proxy
                                else f" (the paper's: {self.paper})")
        budgets = "every side at one preset and the same options" if self.budgets == "equal" else \
            "each side at its attack's default preset"
        return f"metric {metric}; budgets: {budgets}; ≥ {self.seeds} seeds per side; tolerance ±{self.tolerance:g}"


def load_conditions(path: Path) -> dict[str, Conditions]:
    """`[claims.<key>]` of a findings grid, checked: one message naming the file and claim."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8")).get("claims", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConditionsError(f"{path}: cannot read the claims' conditions ({exc})") from None
    out = {}
    for key, c in raw.items():
        where = f"{path}: [claims.{key}]"
        if not isinstance(c, dict):
            raise ConditionsError(f"{where} is not a table")
        unknown = set(c) - {f for f in Conditions.__dataclass_fields__}
        missing = {"metric", "paper", "budgets", "seeds", "tolerance", "command"} - set(c)
        if unknown or missing:
            raise ConditionsError(f"{where}: " + "; ".join(
                ([f"unknown key(s) {', '.join(sorted(unknown))}"] if unknown else [])
                + ([f"missing {', '.join(sorted(missing))}"] if missing else [])))
        if c["budgets"] not in BUDGET_RULES:
            raise ConditionsError(f"{where}: budgets = {c['budgets']!r}, expected one of {', '.join(BUDGET_RULES)}")
        if not isinstance(c["seeds"], int) or c["seeds"] < MIN_SEEDS:
            raise ConditionsError(f"{where}: seeds = {c['seeds']!r}, a verdict needs at least {MIN_SEEDS}")
        if not isinstance(c["tolerance"], (int, float)) or not c["tolerance"] >= 0:
            raise ConditionsError(f"{where}: tolerance = {c['tolerance']!r}, expected a number ≥ 0")
        if c["metric"] != c["paper"] and not c.get("proxy"):
            raise ConditionsError(f"{where}: metric {c['metric']!r} is not the paper's ({c['paper']!r}): say why in `proxy`")
        out[key] = Conditions(**{k: (float(v) if k == "tolerance" else v) for k, v in c.items()})
    return out


# ---------------------------------------------------------------- sides


def budget_label(row) -> str:
    """The preset and every option changed on top of it (`--set`, `--surrogate`), from the command
    the entry recorded: two entries at one preset with other options did not do the same work."""
    preset = row.get("budget") if isinstance(row.get("budget"), str) else "unknown"
    try:
        words = shlex.split(row.get("command") or "")
    except ValueError:
        words = []
    changed = sorted(f"{w}={v}" if w == "--surrogate" else v for w, v in zip(words, words[1:])
                     if w in ("--set", "--surrogate"))
    return preset + (" + " + ", ".join(changed) if changed else "")


@dataclass
class Side:
    label: str
    track: str
    rows: pd.DataFrame  # one entry per seed, of one configuration
    budget: str | None  # budget_label of its rows
    classes: int | None = None

    @property
    def seeds(self) -> list[int]:
        return sorted(int(s) for s in self.rows["seed"]) if len(self.rows) else []

    def values(self, metric: str) -> np.ndarray:
        if metric not in self.rows or self.rows.empty:
            return np.array([])
        return self.rows[metric].to_numpy(dtype=float)

    def mean(self, metric: str) -> float | None:
        v = self.values(metric)
        return float(v.mean()) if len(v) and np.isfinite(v).all() else None

    def interval(self, metric: str) -> tuple[float, float] | None:
        """95 % t interval of the mean over the seeds (None below 2 seeds)."""
        v = self.values(metric)
        if len(v) < 2 or not np.isfinite(v).all():
            return None
        from scipy import stats

        half = stats.t.ppf(0.5 + LEVEL / 2, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
        return float(v.mean() - half), float(v.mean() + half)

    def at_chance(self) -> bool | None:
        """Mean Acc@1 within two binomial standard errors of chance (1/classes) over its reconstructions."""
        acc, count = self.mean("acc_top1"), self.rows["count"].astype(float).mean() if "count" in self.rows else None
        if acc is None or not self.classes or not count or not np.isfinite(count):
            return None
        chance = 1 / self.classes
        return acc <= chance + 2 * math.sqrt(chance * (1 - chance) / (count * len(self.rows)))

    def labels(self, metric: str):
        """The label-bookkeeping counts of its entries on `metric` (core/labels.py), summed."""
        found = [labels_wrong(n) for n in self.rows.get(f"{metric}_note", pd.Series(dtype=object))]
        found = [f for f in found if f is not None]
        if not found:
            return None
        return sum(f.count for f in found), sum(f.total for f in found)

    def summary(self, metric: str) -> str:
        mean, ci = self.mean(metric), self.interval(metric)
        if mean is None:
            return f"{self.label}: {metric} not verified"
        text = f"{self.label}: {metric} {mean:.4g}"
        text += f" [{ci[0]:.4g}, {ci[1]:.4g}]" if ci else ""
        return text + f" ({len(self.rows)} seed{'s' if len(self.rows) != 1 else ''}, {self.budget})"


def side_of(frame: pd.DataFrame, label: str, track: str, attack: str, cell: str | None = None,
            prefer: str | None = None) -> Side | None:
    """The entries of one attack on one track (and cell), at the configuration with the most seeds
    (the latest on a tie); each seed once (its latest entry). None when there is no entry.
    `prefer` (a budget label, "default" for a claim judged at the papers' defaults) wins over seed
    count: a seed group at another preset added later must not push the default one aside."""
    rows = frame[(frame["track"] == track) & (frame["attack"] == attack) & (frame["trust"] != "failed")]
    if cell is not None:
        rows = rows[rows["scenario"] == cell]
    if rows.empty:
        return None
    rows = rows.assign(_budget=[budget_label(r) for r in rows.to_dict("records")])
    best, best_key = None, None
    for budget, group in rows.groupby("_budget", sort=False):
        group = group.sort_values("date").drop_duplicates("seed", keep="last")
        key = (budget == prefer, group["seed"].nunique(), group["date"].max())
        if best_key is None or key > best_key:
            best, best_key = (budget, group), key
    budget, group = best
    return Side(label, track, group.drop(columns="_budget").sort_values("seed"), budget, _classes(track))


def _classes(track: str) -> int | None:
    from reconbench.core.tracks import TrackError, get_track

    try:
        return int(get_track(track).num_classes)
    except (TrackError, KeyError, ValueError, TypeError):
        return None


# ---------------------------------------------------------------- one comparison


@dataclass
class Comparison:
    status: str
    text: str  # what was found, with the sides' values and intervals
    missing: list[str] = field(default_factory=list)  # what a verdict still needs
    difference: tuple[float, float, float] | None = None  # (A better by, low, high) on the metric
    power: float | None = None


def compare(a: Side | None, b: Side | None, cond: Conditions, what_a: str = "A", what_b: str = "B") -> Comparison:
    """Does side A beat side B on the claim's metric, beyond its tolerance? (module docstring)"""
    if a is None or b is None:
        absent = [w for w, s in ((what_a, a), (what_b, b)) if s is None]
        return Comparison(UNTESTABLE, "", [f"no validated entry for {' nor '.join(absent)}"])
    m, missing = cond.metric, []
    if cond.differs:
        missing.append(f"a setting like the paper's ({cond.differs})")
    for s in (a, b):
        if s.mean(m) is None:
            missing.append(f"a verified {m} for {s.label}")
        if len(s.rows) < cond.seeds:
            missing.append(f"{cond.seeds} seeds for {s.label} (has {len(s.rows)})")
        if cond.budgets == "default" and s.budget != "default":
            missing.append(f"{s.label} at its default budget (ran at {s.budget})")
        if cond.sample_level and s.at_chance():
            missing.append(f"{s.label} above chance on Acc@1 (mean {s.mean('acc_top1'):.3g}, chance 1/{s.classes}): "
                           "reconstructions at chance cannot decide a sample-level comparison (SoK §5.1)")
        wrong = s.labels(m)
        if wrong:
            missing.append(f"{s.label} without label bookkeeping ({wrong[0]} of {wrong[1]} reconstructions label wrong, "
                           f"scored at the worst {m}): a label count, not quality")
    if cond.budgets == "equal" and a.budget != b.budget:
        missing.append(f"equal budgets ({a.label}: {a.budget}; {b.label}: {b.budget})")
    text = "; ".join(s.summary(m) for s in (a, b))
    diff = _difference(a, b, cond)
    if diff is not None:
        text += f"; {a.label} better by {diff[0]:+.4g}, 95 % interval [{diff[1]:+.4g}, {diff[2]:+.4g}]"
    if not missing and diff is None:
        missing.append("an interval over the seeds")
    if not missing:
        d, low, high = diff
        tol = cond.tolerance
        if low > tol:
            return Comparison(HOLDS, text, [], diff, _power(a, b, cond))
        if high < -tol:
            return Comparison(FAILS, text, [], diff, _power(a, b, cond))
        missing.append(f"an interval outside ±{tol:g} (more seeds: the interval overlaps the tolerance band)")
    return Comparison(UNTESTABLE, text, missing, diff, _power(a, b, cond) if diff else None)


def _difference(a: Side, b: Side, cond: Conditions) -> tuple[float, float, float] | None:
    """(mean difference, low, high), signed so that positive = A better; Welch's 95 % interval."""
    va, vb = a.values(cond.metric), b.values(cond.metric)
    if len(va) < 2 or len(vb) < 2 or not (np.isfinite(va).all() and np.isfinite(vb).all()):
        return None
    from scipy import stats

    sign = 1 if cond.larger_is_better else -1
    d = sign * (va.mean() - vb.mean())
    se2a, se2b = va.var(ddof=1) / len(va), vb.var(ddof=1) / len(vb)
    se = math.sqrt(se2a + se2b)
    if se == 0:
        return float(d), float(d), float(d)
    df = (se2a + se2b) ** 2 / (se2a ** 2 / (len(va) - 1) + se2b ** 2 / (len(vb) - 1)) if se2a + se2b else 1
    half = stats.t.ppf(0.5 + LEVEL / 2, df) * se
    return float(d), float(d - half), float(d + half)


def _power(a: Side, b: Side, cond: Conditions) -> float | None:
    """P(the interval clears the band) if the true difference were 2 x tolerance, at the spread seen."""
    va, vb = a.values(cond.metric), b.values(cond.metric)
    if len(va) < 2 or len(vb) < 2 or cond.tolerance == 0:
        return None
    from scipy import stats

    se2a, se2b = va.var(ddof=1) / len(va), vb.var(ddof=1) / len(vb)
    se = math.sqrt(se2a + se2b)
    if se == 0:
        return 1.0
    df = (se2a + se2b) ** 2 / (se2a ** 2 / (len(va) - 1) + se2b ** 2 / (len(vb) - 1))
    return float(1 - stats.t.cdf(stats.t.ppf(0.5 + LEVEL / 2, df) - cond.tolerance / se, df))


def combine(comparisons: list[tuple[str, Comparison]]) -> tuple[str, list[str]]:
    """A claim over several comparisons: decided only when every one is; holds when all hold."""
    if not comparisons:
        return UNTESTABLE, []
    missing = [f"{name}: {m}" if name and name not in m else m for name, c in comparisons for m in c.missing]
    if missing:
        return UNTESTABLE, list(dict.fromkeys(missing))
    return (HOLDS if all(c.status == HOLDS for _, c in comparisons) else FAILS), []
