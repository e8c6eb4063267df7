"""The judge's "# of Major" beside a tie-broken count comparable with the SoK's (issue 24, point 10).

Every "# of Major" row of the SoK sums to exactly 1,000 targets (Tables 3-5, 8, 11), so the paper
credited each tie to some condition; ours credits a tie to nobody. major_ties_split shares a tied
target out evenly (the rule is stated in TIE_RULE and on the page), so its counts sum to the targets
with a valid answer."""

from __future__ import annotations

from reconbench.judge.aggregate import TIE_RULE, aggregates, major_ties_split


def votes(*conditions):
    return {"votes": [{"condition": c, "position": 2 + (c or 0), "answers": ["x"]} for c in conditions]}


TARGETS = [
    votes(0, 0, 1, 2, 0),        # condition 0 wins 3 of 5
    votes(1, 1, 2, 2, None),     # 1 and 2 tie (2 votes each; one invalid answer)
    votes(0, 1, 2, 0, 1),        # 0 and 1 tie
    votes(2, 2, 2, 2, 2),        # unanimous for 2
    votes(None, None, None, None, None),  # no valid answer: counted nowhere
]


def test_ties_are_counted_apart_and_split_evenly():
    agg = aggregates(TARGETS, 3, 5)
    assert agg["major"] == [1, 0, 1] and agg["ties"] == 2 and agg["no_valid"] == 1
    split = major_ties_split(TARGETS, 3)
    assert split == [1.5, 1.0, 1.5]
    # comparable with the SoK's: the counts sum to the targets with a valid answer (its rows: 1,000)
    assert sum(split) == len(TARGETS) - agg["no_valid"]
    assert sum(agg["major"]) + agg["ties"] == sum(split)
    assert "1/m" in TIE_RULE and "sum" in TIE_RULE


def test_a_three_way_tie_shares_thirds():
    split = major_ties_split([votes(0, 1, 2)], 3)
    assert split == [round(1 / 3, 9)] * 3
