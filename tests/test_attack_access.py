"""An attack gets what its scenario gives and nothing more: no target set, no update set, no
parameters in black-box cells; dynamic views expose the update's effect, never its images."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from reconbench.image.attacks import ATTACKS, Progress
from reconbench.image.data.arrays import ArraySet
from reconbench.image.dynamic import GRADIENT_BATCH_SIZE, LinkedQueryFunction, ObservedGradients
from reconbench.image.evaluation import evaluate, run_attack
from reconbench.image.knowledge import KnowledgeError, QueryBudgetExceeded, QueryFunction, build_knowledge, check_attack_fits
from reconbench.core.scenario import Scenario
from reconbench.core.signing import generate_key
from reconbench.core.tracks import get_track
from reconbench.image.track_files import load_splits

DYNAMIC_WHITE = Scenario.parse("dynamic/white-box/none")
DYNAMIC_BLACK = Scenario.parse("dynamic/black-box/same")


pytestmark = pytest.mark.slow  # a minute or more of CPU: the slow set (make test-slow; benchmarks/bench_test_split.py)


@pytest.fixture(scope="module")
def track():
    return get_track("digits")


PEEK = f"{Path(__file__).parent / 'attacks' / 'peek.py'}:PeekingBlackBox"  # asks a black-box view for the parameters


def test_black_box_attack_asking_for_parameters_fails_at_run(track):
    with pytest.raises(KnowledgeError, match="black-box"):
        run_attack(track, PEEK, Scenario.parse("static/black-box/same"), config={}, seed=0,
                   device=torch.device("cpu"), progress=Progress())


@pytest.mark.parametrize("name, scenario", [
    ("deep-leakage", "dynamic/black-box/same"),  # needs gradients: white-box
    ("deep-leakage", "static/white-box/none"),  # needs an update
    ("updates-leak", "static/black-box/same"),  # needs an update
    ("updates-leak", "dynamic/white-box/none"),  # needs same-distribution data
    ("inv-alignment", "static/white-box/none"),  # needs aux data
    ("bias-rec", "static/black-box/same"),  # needs the parameters
    ("deepdream", "static/black-box/same"),
])
def test_harness_refuses_scenarios_that_give_less_before_running(name, scenario):
    with pytest.raises(KnowledgeError, match="needs one of"):
        check_attack_fits(name, ATTACKS[name].scenarios, Scenario.parse(scenario))


def _tensors(obj, seen=None):
    """Every tensor/array reachable from obj (attributes, containers, module state)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, ArraySet):
        raise AssertionError("an ArraySet (a data split) is reachable from the knowledge view")
    if isinstance(obj, (torch.Tensor, np.ndarray)):
        yield torch.as_tensor(obj)
    elif isinstance(obj, nn.Module):
        yield from obj.state_dict().values()
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v, seen)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _tensors(v, seen)
    elif dataclasses.is_dataclass(obj) or hasattr(obj, "__dict__"):
        for v in vars(obj).values():
            yield from _tensors(v, seen)


def _holds_update_images(knowledge, update: ArraySet) -> bool:
    images = torch.from_numpy(update.images.reshape(len(update), -1)).float()
    pixels = images.shape[1]
    for t in _tensors(knowledge.extras):
        t = t.detach().float().flatten()
        if t.numel() < pixels or t.numel() % pixels:
            continue
        rows = t.view(-1, pixels)
        for scale in (1.0, 255.0):  # uint8 pixels or [0, 1] floats
            if (torch.cdist(rows * scale, images) < 1e-3).any():
                return True
    return False


def test_dynamic_white_box_view_gives_gradients_and_the_model_before_but_never_the_batch(track):
    k = build_knowledge(track, DYNAMIC_WHITE)
    update = load_splits(track).update
    assert k.target_size == track.update_size == len(update) == 100
    assert set(k.extras) == {"model_before", "update_gradients"}
    observed = k.extra("update_gradients")
    assert isinstance(observed, ObservedGradients)
    assert sum(observed.batch_sizes) == 100 and set(observed.batch_sizes) == {GRADIENT_BATCH_SIZE}
    assert len(observed.gradients[0]) == len(observed.parameter_names) == len(list(k.model.parameters()))
    assert any(g.abs().sum() > 0 for g in observed.gradients[0])
    assert not _holds_update_images(k, update)
    with pytest.raises(KnowledgeError, match="no auxiliary data"):
        _ = k.aux_data
    with pytest.raises(KnowledgeError, match="query_after"):
        k.extra("query_after")


def test_the_leak_detector_would_see_an_exposed_batch(track):
    """The check above must be able to fail: put one update image into a view and it is found."""
    k = build_knowledge(track, DYNAMIC_WHITE)
    update = load_splits(track).update
    k.extras["oops"] = {"batch": torch.from_numpy(update.images[7:8]).float() / 255}
    assert _holds_update_images(k, update)


def test_dynamic_black_box_view_gives_two_counted_query_functions_only(track):
    k = build_knowledge(track, DYNAMIC_BLACK, query_budget=250)
    update = load_splits(track).update
    assert set(k.extras) == {"query_before", "query_after"}
    before, after = k.extra("query_before"), k.extra("query_after")
    assert isinstance(after, LinkedQueryFunction) and isinstance(before, QueryFunction)
    with pytest.raises(KnowledgeError, match="black-box"):
        _ = k.model
    with pytest.raises(KnowledgeError, match="parameters"):
        after.parameters()
    x = k.aux_data.as_float()[:100]
    p_before, p_after = before(x), after(x)
    assert not p_after.requires_grad and (p_before - p_after).abs().max() > 1e-4  # the update changed the model
    assert k.query.queries == 200 and before.queries == 100 and after.queries == 100
    with pytest.raises(QueryBudgetExceeded, match="budget of 250"):
        after(x)  # the shared budget covers both versions
    assert k.query.queries == 200
    assert not _holds_update_images(k, update)


def test_the_update_is_the_same_for_every_run(track):
    """The update is part of the track: another seed attacks the same model after the update."""
    x = load_splits(track).test.as_float()[:50]
    a = build_knowledge(track, DYNAMIC_BLACK, seed=0).extra("query_after")(x)
    b = build_knowledge(track, DYNAMIC_BLACK, seed=7).extra("query_after")(x)
    assert torch.equal(a, b)


def test_evaluate_records_both_model_versions_queries_in_provenance(tmp_path):
    """The result file of a dynamic black-box run counts the queries to both versions."""
    key = tmp_path / "key.pem"
    generate_key(key)
    out = evaluate(track_id="digits", attack_spec="updates-leak", key_path=key, out=tmp_path / "result",
                   config={"shadow_updates": 20, "epochs": 1, "generated": 300})
    payload = out.result.payload
    assert payload.scenario == "dynamic/black-box/same"
    assert payload.provenance.queries == 300  # 100 probes before + 100 after + 100 labels
    assert payload.attack.config["hidden"] == 256 and "auto" not in payload.attack.config.values()
    assert payload.target.target_set_sha256 == load_splits(get_track("digits")).update.sha256
