"""CLI command groups, one module per concern; each exposes `register(app)`.

cli.py holds the core commands (evaluate, keygen, verify, tracks, attacks, metrics); the modules
here add the rest, so that each concern's commands live beside nothing else.
"""

MODULES = ("scoring", "submission", "zoo", "sweep", "judge", "weights", "reproduce", "seal")
