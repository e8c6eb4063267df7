"""Comparing a re-run with the claim: metrics (tolerances.py), and the run's scenario and queries.

One module for both sides, so that `reproduce` (which signs a record) and `validate` (which reads
one) apply the same rule: a record lifts an entry only when its own metrics agree with the entry's
claim, whatever its `verdict` says.

- Every metric the entry claims as computed is compared. A metric that needs downloaded backbone
  weights (tolerances.BACKBONE: FID, PRDC, LPIPS) may be missing from the re-run (a reproducer
  without the weights); every other claimed metric must be re-computed and within its tolerance.
- The run's scenario must be the claim's (exact), and its query counts (provenance.queries, and a
  surrogate's stealing queries) must equal the claim's (tolerances.QUERIES says why exactly).
- A run the signer did not make itself (handed in: `reproduce --from-run`, or a record that does not
  say) must have made the entry's very reconstructions file (sha256): its report of how it ran (the
  sandbox, the machine) is its own word, and only identical bytes tie the record to the file the board
  ranks. A record naming other bytes (a swapped hash, re-signed) lifts nothing. A re-run the signer
  made in its own sandbox (run_seen "same-invocation") may differ in its bytes on another machine, within
  the tolerances (docs/architecture.md, "Reproduction").
"""

from __future__ import annotations

from reconbench.reproduction import tolerances
from reconbench.reproduction.record import Comparison, RunCheck, RunInfo


def compare_metric(name: str, claim, obtained) -> Comparison:
    tol = tolerances.for_metric(name)
    if obtained is None or obtained.status != "computed" or obtained.value is None:
        return Comparison(metric=name, claimed=claim.value, obtained=None, claimed_coverage=claim.coverage,
                          tolerance=str(tol), within=None)
    within = tol.allows(claim.value, obtained.value)
    if claim.coverage is not None:  # a claimed coverage must be re-computed too, within its own tolerance
        within = within and obtained.coverage is not None and tolerances.COVERAGE.allows(claim.coverage, obtained.coverage)
    return Comparison(metric=name, claimed=claim.value, obtained=obtained.value, claimed_coverage=claim.coverage,
                      obtained_coverage=obtained.coverage,
                      tolerance=f"{tol}" + (f", coverage {tolerances.COVERAGE}" if claim.coverage is not None else ""),
                      within=within)


def compare_metrics(claimed: dict, obtained: dict) -> list[Comparison]:
    """One comparison per metric the claim computed (sorted by name)."""
    return [compare_metric(name, claim, obtained.get(name)) for name, claim in sorted(claimed.items())
            if claim.status == "computed" and claim.value is not None]


def metric_problems(comparisons: list[Comparison]) -> list[str]:
    """Why these comparisons do not reproduce the claim ([] when they do)."""
    problems = []
    for c in comparisons:
        if c.within is False:
            cov = "" if c.claimed_coverage is None else (
                f", coverage {c.obtained_coverage if c.obtained_coverage is not None else 'missing'} vs {c.claimed_coverage:.4g}")
            problems.append(f"{c.metric} {c.obtained:.4g} vs claimed {c.claimed:.4g} ({c.tolerance}{cov})")
        elif c.within is None and c.metric not in tolerances.BACKBONE:
            problems.append(f"{c.metric} claimed {c.claimed:.4g} but not re-computed (only metrics that need "
                            f"downloaded backbone weights, {', '.join(sorted(tolerances.BACKBONE))}, may be missing)")
    if comparisons and all(c.within is None for c in comparisons):
        problems.append("no claimed metric was re-computed")
    if not comparisons:
        problems.append("the entry claims no computed metric to compare")
    return problems


def run_checks(claim, reported: RunInfo) -> list[RunCheck]:
    """The run's scenario and query counts, as the run job reported them, against the entry's payload."""
    surrogate = getattr(claim, "surrogate", None)
    checks = [RunCheck(what="scenario", claimed=claim.scenario, reported=reported.scenario, rule="equal",
                       ok=claim.scenario == reported.scenario)]
    for what, a, b in (("provenance.queries", claim.provenance.queries, reported.queries),
                       ("surrogate.queries", surrogate.queries if surrogate is not None else None, reported.surrogate_queries)):
        if a is None and b is None:
            continue  # neither counts queries (a white-box attack; no surrogate)
        checks.append(RunCheck(what=what, claimed=a, reported=b, rule=f"equal ({tolerances.QUERIES})",
                               ok=a is not None and b is not None and tolerances.QUERIES.allows(a, b)))
    return checks


def run_problems(checks: list[RunCheck]) -> list[str]:
    return [f"{c.what}: the re-run reported {c.reported!r}, the entry claims {c.claimed!r} ({c.rule})"
            for c in checks if not c.ok]


def handed_in_problems(run_seen: str | None) -> list[str]:
    """A record of a run the signer was handed (run_seen "handed-in": `reproduce --from-run --key` of an
    earlier toolkit) lifts nothing: a run folder's word on its sandbox, its machine and even its bytes (the
    entry's own file, copied) is its maker's, and `reproduce` now signs only a re-run it made (issue 43)."""
    if run_seen == "handed-in":
        return ["the record signs a run folder handed to the signer, not a re-run it made itself: "
                "reproduce signs only what it ran (recon-submit reproduce ENTRY --key K)"]
    return []


def reconstruction_problems(claimed_sha256: str, obtained_sha256: str, run_seen: str | None) -> list[str]:
    """Why a re-run's reconstructions do not speak for the entry's file ([] when they are its bytes, or
    when the signer made the re-run itself)."""
    if obtained_sha256 == claimed_sha256 or run_seen == "same-invocation":
        return []
    return [f"the re-run's reconstructions (sha256 {obtained_sha256[:12]}…) are not the entry's file "
            f"({claimed_sha256[:12]}…), and the signer did not make the re-run itself"]
