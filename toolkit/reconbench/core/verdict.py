"""The board's verdict on an entry's membership gaps, in the board's words: one rule for the boards,
the findings page (leaderboard.leakage re-exports it) and the end of `evaluate` / `check`. Here, not
in leaderboard/, so the command line reads it without importing the site builder (pandas, jinja2)."""

from __future__ import annotations

from reconbench.core.membership import ALPHA, entry_leaks

LEAKS = f"membership signal (p < {ALPHA:g})"
NO_LEAK = "no measurable leakage"
VERDICT_TEXT = {
    LEAKS: "on average closer to the training set than to the holdout: the smallest p of its metrics' mean gaps, "
           f"times their number (Bonferroni), is below {ALPHA:g}. A signal about the members as a whole (an overfit "
           "model's class statistics show it too), not a recovered sample: see the extraction count",
    NO_LEAK: "its reconstructions are no closer to the training set than to images (texts) the model never saw",
}


def verdict(membership: dict) -> tuple[bool | None, str | None]:
    """(leaks?, label) from an entry's gaps (name -> MembershipGap); (None, None) when none was tested."""
    ps = [g.p for g in membership.values() if g.status == "computed" and g.p is not None]
    if not ps:
        return None, None
    leaks = entry_leaks(ps) and any(g.gap > 0 for g in membership.values() if g.status == "computed" and g.p is not None
                                    and g.p * len(ps) < ALPHA)
    return leaks, LEAKS if leaks else NO_LEAK
