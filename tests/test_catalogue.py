"""The attack catalogue (metadata only, read without importing attack code) matches the classes."""

from __future__ import annotations

from reconbench.image.attacks import ATTACKS
from reconbench.core.catalogue import BY_NAME, CATALOGUE


def test_catalogue_rows_match_the_attack_classes():
    assert set(BY_NAME) == set(ATTACKS), "an attack is missing from reconbench/core/catalogue.py (or a row names no attack)"
    assert len(BY_NAME) == len(CATALOGUE)
    for row in CATALOGUE:
        cls = ATTACKS[row.name]
        assert row.load() is cls, row.target
        assert (row.family, tuple(row.scenarios), row.paper, row.version) == (cls.family, tuple(cls.scenarios), cls.paper, cls.version), row.name
        assert row.summary.strip().endswith(".")
