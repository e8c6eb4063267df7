"""The attacks' error type, in its own module so that base.py and options.py can both raise it."""


class AttackError(Exception):
    """An attack that is misconfigured, cannot be loaded, or returned malformed output."""
