"""Reproduction (issue 12, item 3): re-run an entry from its signed provenance and compare.

    record.py      the reproduction record, its signature, the maintainers' reproducer keys
    tolerances.py  how far a re-run's metrics may be from the claim, and why
    rerun.py       load an entry (signature, attack source), re-run it, score a run, compare

`recon-submit reproduce ENTRY_DIR` (commands/reproduce.py) chains them. A record is signed only for a
re-run that invocation made in its own sandbox (sign.py): a run folder handed in (`--from-run`) is
compared, never signed (issue 43). The reproduce workflow re-runs and signs in one job.
"""
