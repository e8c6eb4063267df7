"""The surrogate route: choose the black-box cell, steal, hand the attack a white-box view of the
surrogate, and measure the surrogate's agreement with the target (evaluator's side).

Surrogate architecture: the track's own architecture and its keyword arguments (`tracks.json`
`architecture`/`arch_kwargs`). Which architecture family a target has is a public fact of the
track (its page, its model card), as the SoK's threat model assumes; its weights are not.
DFME's authors use a smaller network of the target's family (ResNet-18-8x for a ResNet-34-8x
victim); the embedded tracks' networks are already small, so the same one is used.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from reconbench.image.attacks.base import Attack, AttackError, Progress
from reconbench.core.attack_options import resolve_options
from reconbench.image.knowledge import Knowledge, KnowledgeError, QueryFunction, check_attack_fits
from reconbench.image.models import build_model
from reconbench.core.scenario import Scenario
from reconbench.image.surrogate.aux import AuxSurrogate
from reconbench.image.surrogate.dfme import DFME
from reconbench.core.tracks import Track, all_tracks
from reconbench.image.track_files import load_splits, load_target_model

SURROGATES = {"dfme": DFME, "aux": AuxSurrogate}
PREFIX = "surrogate."  # `--set surrogate.query_budget=200000` configures the surrogate, not the attack


class SurrogateError(AttackError):
    """A surrogate route that cannot run as asked (one line)."""


@dataclass
class Stolen:
    method: str
    architecture: str
    budget: str
    config: dict[str, Any]
    queries: int  # spent on stealing, counted on the scenario's query function
    model: nn.Module


def split_config(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    attack = {k: v for k, v in config.items() if not k.startswith(PREFIX)}
    surrogate = {k[len(PREFIX):]: v for k, v in config.items() if k.startswith(PREFIX)}
    return attack, surrogate


def white_box_cell(scenario: Scenario) -> Scenario:
    return Scenario(training=scenario.training, access="white-box", data=scenario.data)


def choose_cell(track: Track, attack: type[Attack], requested: str | None, method: str) -> Scenario:
    """The black-box cell to record: the requested one, or the track's first black-box static cell
    whose white-box twin the attack runs in. Checked before anything runs."""
    if method not in SURROGATES:
        raise SurrogateError(f"unknown surrogate '{method}' (choose one of: {', '.join(SURROGATES)})")
    if requested:
        chosen = Scenario.parse(requested)
    else:
        cells = [Scenario.parse(s) for s in track.scenarios]
        fits = [c for c in cells if c.access == "black-box" and c.training == "static"
                and any(white_box_cell(c).allows(Scenario.parse(n)) for n in attack.scenarios)
                and (method != "aux" or c.data != "none")]
        if not fits:
            raise SurrogateError(f"track '{track.id}' offers no black-box cell in which '{attack.name}' can run through a surrogate")
        chosen = fits[0]
    if chosen.access != "black-box" or chosen.training != "static":
        raise SurrogateError(f"--surrogate steals a model from black-box access: scenario {chosen} must be static/black-box/...")
    if method == "aux" and chosen.data == "none":
        raise SurrogateError(f"--surrogate aux trains on the attacker's aux data, which scenario {chosen} does not give")
    if not track.offers(chosen):
        raise KnowledgeError(f"track '{track.id}' does not offer scenario {chosen} (offers: {', '.join(track.scenarios)})")
    if any(chosen.allows(Scenario.parse(n)) for n in attack.scenarios):
        raise SurrogateError(f"attack '{attack.name}' already runs black-box in {chosen}; --surrogate is for white-box attacks")
    check_attack_fits(attack.name, attack.scenarios, white_box_cell(chosen))
    return chosen


def check_query_budget(track: Track, method: str, budget: str, overrides: dict[str, Any], allowed: int | None = None) -> dict[str, Any]:
    """The surrogate's configuration, refused before anything runs when it would spend more queries
    than the track allows (`Track.query_budget`; `allowed`: what is left of it). The budget is the
    track's, not the preset's, so that every entry of a track was held to the same number."""
    cfg = resolve_options(SURROGATES[method], budget, overrides)
    allowed = track.query_budget if allowed is None else allowed
    wanted = int(cfg.get("query_budget", 0))
    if wanted <= allowed:
        return cfg
    what = "surrogate.query_budget" if "query_budget" in overrides else f"the '{budget}' preset"
    default = resolve_options(SURROGATES[method], "default")["query_budget"]
    outs = [f"--budget default ({default:,})" if default <= allowed and budget != "default"
            else f"--set surrogate.query_budget={allowed}"]
    larger = sorted((t.status == "unpublished", t.query_budget, t.id) for t in all_tracks() if t.query_budget >= wanted)
    outs.append("a track with a larger budget" + (f" (e.g. {larger[0][2]}: {larger[0][1]:,})" if larger else ""))
    raise SurrogateError(f"{method}: {what} spends {wanted:,} queries but track '{track.id}' allows {allowed:,} "
                         f"(its query budget); use {' or '.join(outs)}")


def steal(track: Track, knowledge: Knowledge, method: str, *, budget: str, overrides: dict[str, Any], seed: int,
          progress: Progress) -> Stolen:
    query = knowledge.query
    cfg = check_query_budget(track, method, budget, overrides, allowed=query.budget - query.queries)
    torch.manual_seed(seed)  # the student's initial weights: a reproduction must start from the same ones
    student = build_model(track.architecture, **track.arch_kwargs)
    before = query.queries
    if method == "dfme":
        model = DFME.steal(query, student, cfg, input_shape=knowledge.input_shape, seed=seed, device=knowledge.device,
                           progress=progress)
    else:
        model = AuxSurrogate.steal(query, student, cfg, aux=knowledge.aux_data, seed=seed, device=knowledge.device,
                                   progress=progress)
    for p in model.parameters():
        p.requires_grad_(False)
    return Stolen(method, track.architecture, budget, cfg, query.queries - before, model.eval())


def surrogate_view(knowledge: Knowledge, model: nn.Module) -> Knowledge:
    """The attack's view: white-box on the surrogate (its module, and queries to it, uncounted
    against the target), with the same aux data and public facts as the black-box view."""
    return dataclasses.replace(
        knowledge, scenario=white_box_cell(knowledge.scenario), _model=model,
        query=QueryFunction(model, tuple(knowledge.input_shape), knowledge.query.budget, knowledge.device),
    )


def agreement(track: Track, model: nn.Module, device: str | torch.device = "cpu") -> tuple[float, int]:
    """Top-1 agreement of surrogate and target on the track's test split (evaluator's side only)."""
    test = load_splits(track, ["test"]).test
    target = load_target_model(track, device=device)
    x = test.as_float(device)
    with torch.no_grad():
        same = torch.cat([model.to(device)(x[i : i + 1024]).argmax(1) == target(x[i : i + 1024]).argmax(1)
                          for i in range(0, len(x), 1024)])
    return float(same.float().mean()), len(test)
