"""The SoK's three aggregates per condition, ties and invalid answers, and the position-bias statistic.

SoK §6.1 (SOK-DIGEST §3): "# of Major" = targets a condition wins by majority vote (the paper's sum
to 1,000, so it is the plurality winner); "# of All" = targets where all repeats agree; "Pred Rate" =
share of all answers. Here: the plurality winner among a target's valid answers; a tie for the most
votes is reported as a tie and credited to nobody (the SoK does not say how it broke ties);
"# of All" needs every repeat valid and on the same condition; Pred Rate is over valid answers.

The SoK's "# of Major" rows each sum to exactly 1,000 (Tables 3-5, 8 and 11), so it credited every
tie to someone, without saying how. Beside our count, `major_ties_split` gives a count a reader can
set beside the SoK's: TIE_RULE. It is computed from the signed votes when shown (the signed
aggregates stay as they were), and its rows sum to the targets with at least one valid answer.

Position bias (beyond the paper): how often each image position (2..K+1) is chosen over all valid
answers, with a chi-square test against the uniform 1/K. With randomised order a condition's votes
are spread over the positions, so a position-biased judge shows up here and not in Pred Rate.
"""

from __future__ import annotations

from collections import Counter


def target_outcome(votes: list[dict], k: int) -> dict:
    """{winner, tied, counts} of one target's votes (each vote: {"condition": int | None, ...})."""
    counts = Counter(v["condition"] for v in votes if v["condition"] is not None)
    if not counts:
        return {"winner": None, "tied": [], "counts": [0] * k}
    top = max(counts.values())
    leaders = sorted(c for c, n in counts.items() if n == top)
    return {"winner": leaders[0] if len(leaders) == 1 else None, "tied": leaders if len(leaders) > 1 else [],
            "counts": [counts.get(c, 0) for c in range(k)]}


TIE_RULE = ("a target tied between m conditions (each with the most valid votes) counts 1/m for each of them, "
            "so the counts sum to the targets with a valid answer, as the SoK's sum to 1,000; the SoK does not "
            "state its rule (an argmax that keeps the first maximum would credit every tie to the first condition)")


def major_ties_split(targets: list[dict], k: int) -> list[float]:
    """# of Major with ties shared out by TIE_RULE (targets[i]["votes"], as for aggregates)."""
    counts = [0.0] * k
    for target in targets:
        outcome = target_outcome(target["votes"], k)
        if outcome["winner"] is not None:
            counts[outcome["winner"]] += 1.0
        for c in outcome["tied"]:
            counts[c] += 1.0 / len(outcome["tied"])
    return [round(v, 9) for v in counts]


def aggregates(targets: list[dict], k: int, repeats: int) -> dict:
    """Aggregates of one order mode from its per-target vote lists (targets[i]["votes"])."""
    major, unanimous, votes = [0] * k, [0] * k, [0] * k
    positions = [0] * k
    ties = no_valid = invalid = reasks = 0
    for target in targets:
        outcome = target_outcome(target["votes"], k)
        if outcome["winner"] is not None:
            major[outcome["winner"]] += 1
        elif outcome["tied"]:
            ties += 1
        else:
            no_valid += 1
        chosen = [v["condition"] for v in target["votes"]]
        if len(chosen) == repeats and chosen[0] is not None and all(c == chosen[0] for c in chosen):
            unanimous[chosen[0]] += 1
        for v in target["votes"]:
            reasks += len(v["answers"]) - 1
            if v["condition"] is None:
                invalid += 1
            else:
                votes[v["condition"]] += 1
                positions[v["position"] - 2] += 1
    valid = sum(votes)
    return {
        "major": major, "all": unanimous, "votes": votes,
        "pred_rate": [round(n / valid, 12) if valid else 0.0 for n in votes],
        "ties": ties, "no_valid": no_valid, "valid_answers": valid, "invalid_answers": invalid, "reasks": reasks,
        "position_bias": position_bias(positions),
    }


def position_bias(counts: list[int]) -> dict:
    from scipy.stats import chisquare

    total = sum(counts)
    k = len(counts)
    out = {"counts": counts, "shares": [round(n / total, 12) if total else 0.0 for n in counts],
           "uniform_share": round(1 / k, 12), "chi2": None, "p_value": None}
    if total:
        stat, p = chisquare(counts)
        out["chi2"], out["p_value"] = round(float(stat), 9), float(f"{float(p):.6g}")
    return out
