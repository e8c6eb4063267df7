"""Check 4, registry: the entry was scored against what the registry pins, in a cell the track offers.

- the track exists and is published; the scenario is one the track offers;
- target.model_sha256 is the registry's target_model_sha256, target.target_set_sha256 its
  target_set_sha256 (static) or update_set_sha256 (dynamic: D_tar is the update set, SoK Def. 3.2);
- reconstructions.count is |D_tar| of that scenario and reconstructions.shape the track's input shape;
- the queries recorded (provenance, and a surrogate's stealing) are within the track's query budget;
- the attack fits the scenario:
  * a registered attack name must carry the registered family and code reference, and one of its
    declared cells must be allowed by the scenario (knowledge.check_attack_fits, as evaluate does);
    a registered name runs the registered code, so such an entry signs no attack/ source of its own
    (one that does is refused rather than relabelled: the payload signs the registered name, and the
    board would otherwise show modified code under it);
  * a surrogate entry (a white-box attack run on a model stolen through a static black-box cell)
    runs a registered attack, records the cell's white-box twin as the attack's view, and a
    surrogate that the toolkit's route can produce (method, the track's architecture, its options);
  * a user's own attack (a name not in the registry) is taken at its declared cell: the harness
    built only that scenario's knowledge view when it ran, so the rule is that its code is a
    `file.py:Class` reference (not a toolkit module: it cannot pose as an official attack) and
    the scenario is offered by the track. Its family is one of the SoK's three (the schema).
"""

from __future__ import annotations

import re

from reconbench.image.attacks import ATTACKS
from reconbench.image.knowledge import KnowledgeError, check_attack_fits
from reconbench.core.moved import canonical_code
from reconbench.core.scenario import Scenario
from reconbench.submissions.checks.base import Check, CheckFailed, Context
from reconbench.submissions.claims import command_problems, config_problems, queries_problems
from reconbench.core.tracks import TrackError, get_track

USER_CODE = re.compile(r"[\w.-]+\.py:[A-Za-z_]\w*")


def registered_with_source(attack, cls) -> str:
    """A registered name runs the registered code (the toolkit's, at its version): an entry that names a
    registered attack and also signs an attack/ source of its own is refused. (evaluate never writes one:
    a file attack may not take a built-in name, reconbench.image.attacks.checks.)"""
    return (f"attack name '{attack.name}' is registered: it runs the toolkit's code ({cls.code_reference()}, "
            f"version {cls.version}), but this entry also signs an attack/ source of its own "
            f"({attack.source_sha256[:12]}…), which would be shown and re-run as '{attack.name}'; "
            "a modified or own attack needs a name of its own")


def _surrogate_problem(track, surrogate) -> str | None:
    """A surrogate block describes what the toolkit's stealing route does: that method, the track's
    public architecture (the only student it trains), and options the method declares."""
    from reconbench.core.attack_options import OptionsError, resolve_options
    from reconbench.image.surrogate.route import SURROGATES

    if surrogate.method not in SURROGATES:  # the schema's Literal already refuses others
        return f"surrogate method '{surrogate.method}' does not exist (known: {', '.join(SURROGATES)})"
    if surrogate.architecture != track.architecture:
        return (f"the surrogate's architecture '{surrogate.architecture}' is not track '{track.id}''s public "
                f"architecture '{track.architecture}', the only student the stealing route trains")
    try:
        resolve_options(SURROGATES[surrogate.method], surrogate.budget, dict(surrogate.config))
    except OptionsError as exc:
        return f"surrogate '{surrogate.method}' configuration: {exc}"
    return None


def registered_look_alike(name: str) -> str | None:
    """The registered attack (any modality's catalogue) whose name `name` is confusable with, if any."""
    from reconbench.core.catalogue import CATALOGUE, TEXT_CATALOGUE
    from reconbench.submissions.identity import confusable

    return next((a.name for a in (*CATALOGUE, *TEXT_CATALOGUE) if a.name != name and confusable(a.name, name)), None)


def _attack_problem(ctx: Context, scenario: Scenario, track) -> str | None:
    attack = ctx.result.payload.attack
    cls = ATTACKS.get(attack.name)
    surrogate = ctx.result.payload.surrogate
    if surrogate is not None and cls is None:
        return f"a surrogate entry runs a registered attack (the route never imports one's own), not '{attack.name}'"
    if cls is None:
        twin = registered_look_alike(attack.name)
        if twin:
            return (f"attack name '{attack.name}' looks like the registered attack '{twin}' (names are compared as "
                    "team names are: TR39 skeletons, case, 0/O and 1/l, spaces and punctuation ignored); "
                    "a user's own attack needs a name of its own")
        if not USER_CODE.fullmatch(attack.code):
            return (f"attack '{attack.name}' is not registered, so its code must be the file.py:Class "
                    f"reference evaluate records for a user's own attack, not '{attack.code}'")
        return None
    if canonical_code(attack.code) != cls.code_reference():  # a result signed before a module moved names its old place
        return (f"attack name '{attack.name}' is registered to {cls.code_reference()}, but this entry ran "
                f"'{attack.code}': a user's own attack needs a name of its own")
    if attack.source_sha256 is not None:
        return registered_with_source(attack, cls)
    if attack.family != cls.family:
        return f"attack '{attack.name}' is of family '{cls.family}', the entry says '{attack.family}'"
    claimed = config_problems(attack, cls, ctx.result.payload.provenance.command)
    if claimed:
        return claimed[0] + (f" (and {len(claimed) - 1} more)" if len(claimed) > 1 else "")
    if surrogate is not None:  # a white-box attack run on a model stolen through the black-box cell
        problem = _surrogate_problem(track, surrogate)
        if problem:
            return problem
        view = Scenario.parse(surrogate.attack_view)
        if scenario.training != "static" or scenario.access != "black-box":
            return f"a surrogate entry records the black-box cell it stole through, not {scenario}"
        if view != Scenario(training=scenario.training, access="white-box", data=scenario.data):
            return f"the surrogate's view {view} is not the white-box twin of the recorded cell {scenario}"
        scenario = view
    try:
        check_attack_fits(attack.name, cls.scenarios, scenario)
    except KnowledgeError as exc:
        return str(exc)
    return None


def check(ctx: Context) -> list[Check]:
    payload = ctx.result.payload
    try:
        track = get_track(payload.track)
        track.require_runnable()
    except TrackError as exc:
        raise CheckFailed(str(exc)) from None
    scenario = Scenario.parse(payload.scenario)  # the schema's pattern makes this parse
    if not track.offers(scenario):
        raise CheckFailed(f"track '{track.id}' does not offer scenario {scenario} (offers: {', '.join(track.scenarios)})")
    problems = []
    if payload.target.model_sha256 != track.target_model_sha256:
        problems.append(f"target.model_sha256 is {payload.target.model_sha256}, the registry pins "
                        f"{track.target_model_sha256} for track '{track.id}'")
    dynamic = scenario.training == "dynamic"
    pinned_set = track.update_set_sha256 if dynamic else track.target_set_sha256
    what = "update set" if dynamic else "target set"
    if payload.target.target_set_sha256 != pinned_set:
        problems.append(f"target.target_set_sha256 is {payload.target.target_set_sha256}, the registry pins "
                        f"{pinned_set} as the {what} of track '{track.id}'")
    try:
        size = track.target_size(scenario)
    except TrackError as exc:
        raise CheckFailed(str(exc)) from None
    info = payload.reconstructions
    if info.count != size:
        problems.append(f"reconstructions.count is {info.count}, but |D_tar| = {size} for {scenario} "
                        "(the SoK's size rule: exactly one reconstruction per target)")
    if tuple(info.shape) != tuple(track.input_shape):
        problems.append(f"reconstructions.shape is {list(info.shape)}, the track's images are {list(track.input_shape)}")
    stolen = payload.surrogate.queries if payload.surrogate else None  # the track's budget held its stealing too
    if stolen is not None and stolen > track.query_budget:
        problems.append(f"surrogate.queries is {stolen:,}, more than track '{track.id}' allows ({track.query_budget:,}, its query budget)")
    attack_problem = _attack_problem(ctx, scenario, track)
    if attack_problem:
        problems.append(attack_problem)
    # the track's budget (registry query_budget) held every run; the command, budget and seed tell one story
    problems += queries_problems(payload, track.query_budget) + command_problems(payload)  # (submissions/claims.py)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise CheckFailed(problems[0] + more, problems)
    ctx.track, ctx.scenario = track, scenario
    kind = "registered" if payload.attack.name in ATTACKS else "user's own"
    return [Check("registry", "pass", f"track '{track.id}', {scenario}: model and {what} hashes as pinned; "
                                      f"{kind} attack '{payload.attack.name}' fits the scenario")]
