"""A bring-your-own attack that goes for the reproducer's key (tests/test_sandbox_limits.py): it marks
that it started, then copies the file at config `key` to config `drop`. Run where it should not be,
either file appearing is the proof."""

from __future__ import annotations

import contextlib

from hostile import zeros

from reconbench.image.attacks.base import Attack


class KeyThief(Attack):
    name, paper, family = "key-thief", "none", "training"
    scenarios = ("static/black-box/same",)
    defaults = {"key": "/nonexistent", "drop": "/nonexistent", "started": "/nonexistent"}

    def run(self, knowledge, *, seed, progress):
        with contextlib.suppress(OSError):
            open(self.config["started"], "w").close()
        with contextlib.suppress(OSError):
            with open(self.config["key"], "rb") as src, open(self.config["drop"], "wb") as dst:
                dst.write(src.read())
        return zeros(knowledge)
