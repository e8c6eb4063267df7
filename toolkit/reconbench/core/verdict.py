"""The board's verdict on an entry, in the board's words: one place for the tiers, their words, what
each means, their order and the threshold a p was held to. The command line (`evaluate`, `check`),
every board, the twin page (leaderboard/sealed.py), the findings and the defenses view read them from
here (leaderboard.leakage re-exports them). Here, not in leaderboard/, so the command line reads them
without importing the site builder (pandas, jinja2).

The tiers, strongest evidence first (issue 44, item 2):

    extracts k          some reconstruction is closer to k members than natural images come to each
                        other, more members than holdout items, p < ALPHA (core/extraction.py)
    recovers k          k members closer to their nearest reconstruction than any other public image
                        comes to them, more members than holdout items, and the membership relabelling
                        p < ALPHA (core/recovery.py: Haim et al.'s training-vs-test curve made a test)
    membership signal   the reconstructions are on average closer to the members than to the holdout:
                        the smallest p of the metrics' mean gaps, Bonferroni over them, below ALPHA
                        (core/membership.py)
    no evidence         tested, and none of the above

An entry nothing was tested on has no tier (None): the boards show "–", the command line says why.
The words before these ("leaks", "no measurable leakage", "no leak shown", "recovers training data")
are RETIRED: tests/test_verdict_vocabulary.py checks that no page or command shows them.
"""

from __future__ import annotations

from dataclasses import dataclass

from reconbench.core.membership import ALPHA, entry_leaks


@dataclass(frozen=True)
class Tier:
    key: str  # a CSS class / data value: rb-tier-<key>
    word: str  # the verdict word every page and command shows
    rank: int  # the order of evidence: higher first (the boards' default order)
    means: str  # what it says, in one sentence (tooltips, the command line, the methodology)
    counted: bool  # the word takes a count of members: "extracts 3"


EXTRACTS = Tier("extracts", "extracts", 3, (
    "some reconstruction comes closer to that many members than natural images of their class come to each other "
    "(the track's extraction threshold, calibrated on the public dataset), more members than holdout items, and "
    f"the count's p (natural-data null) is below {ALPHA:g}: verbatim recovery of individual training items"), True)
RECOVERS = Tier("recovers", "recovers", 2, (
    "that many members are closer to their nearest reconstruction than any other public image comes to them "
    "(relative l2 below 1), more members than holdout items, and the membership relabelling p is below "
    f"{ALPHA:g}: recognisable recovery of individual training items, short of verbatim"), True)
SIGNAL = Tier("membership-signal", "membership signal", 1, (
    "on average closer to the training set than to the holdout: the smallest p of its metrics' mean gaps, "
    f"times their number (Bonferroni), is below {ALPHA:g} with a positive gap. A signal about the members as a "
    "whole (an overfit model's class statistics show it too), not a recovered sample"), False)
NO_EVIDENCE = Tier("no-evidence", "no evidence", 0, (
    "tested, and nothing shown: no member extracted beyond chance, and its reconstructions are on average no "
    "closer to the training set than to images (texts) the model never saw, at the level held to"), False)

TIERS = (EXTRACTS, RECOVERS, SIGNAL, NO_EVIDENCE)
BY_KEY = {t.key: t for t in TIERS}
BY_WORD = {t.word: t for t in TIERS}
WORDS = tuple(t.word for t in TIERS)
ORDER = " > ".join(WORDS)  # "extracts > recovers > membership signal > no evidence"
# The verdict words this module replaced: no page or command may show them as a verdict.
RETIRED = ("leaks", "leak shown", "no measurable leakage", "recovers training data")
VERDICT_TEXT = {t.word: t.means for t in TIERS}  # word -> what it means (templates' tooltips)
ORDER_WHY = ("likeness to the targets is no evidence that the reconstructions carry the training data: the reference "
             "baselines, which know no member, look most like them")


def label(t: Tier | None, count: int | None = None) -> str | None:
    """The words shown for a tier: "extracts 3", "membership signal", ...; None for no tier."""
    if t is None:
        return None
    return f"{t.word} {int(count)}" if t.counted and count is not None else t.word


def tier(signal: bool | None, extraction=None, recovery=None) -> Tier | None:
    """An entry's tier from its three decisions, each made where it is computed (never here):
    signal (`verdict` below: True, False, or None when no gap was tested), extraction (anything with
    `.extracts`, core/extraction.py) and recovery (anything with `.recovers`, core/recovery.py).
    None when nothing was tested."""
    if extraction is not None and bool(getattr(extraction, "extracts", False)):
        return EXTRACTS
    if recovery is not None and bool(getattr(recovery, "recovers", False)):
        return RECOVERS
    if signal:
        return SIGNAL
    if signal is False or extraction is not None or recovery is not None:
        return NO_EVIDENCE
    return None


def count_of(t: Tier | None, extraction=None, recovery=None) -> int | None:
    """The count a counted tier shows: extracted members for "extracts", recovered ones for "recovers"."""
    if t is EXTRACTS:
        return int(extraction.members)
    if t is RECOVERS:
        return int(recovery.members)
    return None


def _tested(membership: dict) -> dict:
    return {m: g for m, g in membership.items() if g.status == "computed" and g.p is not None}


def verdict(membership: dict) -> tuple[bool | None, str | None]:
    """(membership signal?, its word) from an entry's gaps (name -> MembershipGap); (None, None) when
    none was tested. The mean gap's decision alone: the entry's tier adds the count (`tier`)."""
    tested = _tested(membership)
    if not tested:
        return None, None
    ps = [g.p for g in tested.values()]
    signal = entry_leaks(ps) and any(g.gap > 0 for g in tested.values() if g.p * len(ps) < ALPHA)
    return signal, (SIGNAL if signal else NO_EVIDENCE).word


def deciding(membership: dict) -> tuple[str, float, int] | None:
    """(metric, p, number of tests) the mean gap's verdict turns on: the smallest p among the metrics
    with a positive gap (any metric when none is positive); None when none was tested."""
    tested = _tested(membership)
    if not tested:
        return None
    positive = {m: g for m, g in tested.items() if g.gap is not None and g.gap > 0} or tested
    name = min(positive, key=lambda m: (positive[m].p, m))
    return name, float(positive[name].p), len(tested)


def _p(value: float) -> str:
    if value == 0.0:
        return "< 1e-300"
    return f"{value:.2g}" if value >= 1e-4 else f"{value:.1e}"


def held_to(p: float, tests: int = 1, alpha: float = ALPHA, what: str = "metrics", bound: bool = False) -> str:
    """A p beside the threshold it was held to: "p 0.0068 > 0.0025 = 0.01 / 4 metrics" (Bonferroni
    over the tests), "p 2e-05 < 0.01" for one test. The relation is the decision's (p * tests < alpha).
    bound: p is an upper bound (no permutation reached the gap): "p ≤ 0.0005"."""
    tests = max(1, int(tests))
    threshold = alpha / tests
    shown_p, shown_t = _p(p), _p(threshold)
    for digits in (4, 6):  # two digits cannot tell them apart: show more
        if shown_p != shown_t:
            break
        shown_p, shown_t = f"{p:.{digits}g}", f"{threshold:.{digits}g}"
    below = p * tests < alpha
    relation = "<" if below else (">" if p > threshold else "≥")
    level = f"{shown_t} = {alpha:g} / {tests} {what}" if tests > 1 else shown_t
    return f"p {'≤ ' if bound else ''}{shown_p} {relation} {level}"


def signal_held_to(membership: dict, labels: dict[str, str] | None = None) -> str | None:
    """The mean gap's deciding p with its threshold: "SSIM p 0.0068 > 0.0025 = 0.01 / 4 metrics"."""
    found = deciding(membership)
    if found is None:
        return None
    name, p, tests = found
    note = getattr(membership[name], "note", None) or ""
    return f"{(labels or {}).get(name, name)} {held_to(p, tests, bound=note.startswith('p <='))}"


def count_text(extraction) -> str:
    """The extraction count as a count, not a verdict: "0 of 500 members extracted against 0 holdout items, p 0.98 > 0.01"."""
    return (f"{extraction.members} of {extraction.n_members} members extracted against {extraction.holdout} holdout "
            f"item{'s' if extraction.holdout != 1 else ''}, {held_to(extraction.p)}")


def recovery_text(recovery) -> str:
    """The recovery count as a count: "3 of 100 members recovered against 0 holdout items, p 0.12 > 0.01"."""
    return (f"{recovery.members} of {recovery.n_members} members recovered against {recovery.holdout} holdout "
            f"item{'s' if recovery.holdout != 1 else ''}, {held_to(recovery.p)}")


@dataclass(frozen=True)
class EntryVerdict:
    tier: Tier | None
    label: str | None  # "extracts 3", "membership signal", ...
    signal: bool | None  # the mean gap's decision
    signal_p: str | None  # its deciding p with the threshold (signal_held_to)
    count: str | None  # the extraction count with its p and threshold (count_text)
    recovered: str | None = None  # the recovery count with its p and threshold (recovery_text)


def entry_verdict(membership: dict, extraction=None, recovery=None, labels: dict[str, str] | None = None) -> EntryVerdict:
    """The whole verdict of one entry (the command line's line; the boards compute the same from their columns)."""
    signal, _ = verdict(membership)
    t = tier(signal, extraction, recovery)
    return EntryVerdict(t, label(t, count_of(t, extraction, recovery)), signal, signal_held_to(membership, labels),
                        count_text(extraction) if extraction is not None else None,
                        recovery_text(recovery) if recovery is not None else None)
