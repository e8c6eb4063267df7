"""LLM-as-judge studies (SoK §6.1): which of K reconstructions looks most like the target?

A study takes 2..6 entries of one track (the "conditions"), samples targets from the track's target
set with a seed, takes each condition's highest-PSNR reconstruction per target (selection.py), asks
an OpenAI-compatible vision model R times per target with the SoK's prompt (prompt.py, client.py),
caches every answer on disk (cache.py), maps answers back to conditions through a seeded order per
repeat (order.py), aggregates # of Major / # of All / Pred Rate plus a position-bias statistic
(aggregate.py) and writes a signed study file under judgements/<study-id>/ (study.py), which
`recon-submit validate` checks (check.py).

Trust decision (documented in docs and check.py): a study names the team that publishes it, and its
signature must verify with one of the keys in that team's submissions/<team>/team.toml. Maintainers
publish studies through their team, reconbench-baselines.
"""

STUDY_FILE = "study.json"
DEFAULT_ROOT = "judgements"
