"""A black-box attack that asks for the parameters anyway (tests/test_attack_access.py)."""

import torch

from reconbench.image.attacks.base import Attack, Reconstruction


class PeekingBlackBox(Attack):
    name, paper, family, scenarios = "peek", "none", "training", ("static/black-box/same",)

    def run(self, knowledge, *, seed, progress):
        _ = knowledge.model.state_dict()
        return Reconstruction(torch.zeros(1, *knowledge.input_shape), torch.zeros(1, dtype=torch.long))


class Crashing(Attack):
    """Fails deep inside its own code: the evaluator must report it in one line."""

    name, paper, family, scenarios = "crash", "none", "training", ("static/black-box/same",)

    def run(self, knowledge, *, seed, progress):
        with progress.task("crash: warming up", 3) as advance:
            advance(1)
            return {}["no such key"]


class Dies(Attack):
    """Exits its process without a word."""

    name, paper, family, scenarios = "dies", "none", "training", ("static/black-box/same",)

    def run(self, knowledge, *, seed, progress):
        import os

        os._exit(3)


class Counting(Attack):
    """Queries in chunks and reports progress, so the test can watch both cross the boundary."""

    name, paper, family, scenarios = "counting", "none", "training", ("static/black-box/same",)
    defaults = {"chunks": 3}

    def run(self, knowledge, *, seed, progress):
        x = knowledge.aux_data.as_float()[:10]
        with progress.task("counting: querying", self.config["chunks"]) as advance:
            for _ in range(self.config["chunks"]):
                knowledge.query(x)
                advance(1)
        labels = knowledge.query(x).argmax(1)
        self.config["seen"] = knowledge.query.queries
        return Reconstruction(x, labels)
