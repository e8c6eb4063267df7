"""Candidate order per repeat: a seeded permutation (randomised mode) or the given order (the SoK's).

order[p] is the condition shown at image position p + 2 (image 1 is the target), so an answer
naming image i maps back to condition order[i - 2].
"""

from __future__ import annotations

import numpy as np

MODES = ("random", "fixed")


def candidate_order(mode: str, k: int, seed: int, target: int, repeat: int) -> list[int]:
    if mode == "fixed":
        return list(range(k))
    if mode != "random":
        raise ValueError(f"unknown order mode {mode!r} (known: {', '.join(MODES)})")
    # One generator per (seed, target, repeat): the order of a call does not depend on which other
    # calls ran, were cached or failed, so a resumed study asks exactly what the first run asked.
    rng = np.random.default_rng([seed, target, repeat])
    return [int(i) for i in rng.permutation(k)]


def condition_of(order: list[int], position: int | None) -> int | None:
    return None if position is None else order[position - 2]
