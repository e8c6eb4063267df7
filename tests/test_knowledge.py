"""The threat-model harness: what each scenario hands out, and what it refuses."""

import pytest
import torch

from reconbench.image.attacks import ATTACKS
from reconbench.image.knowledge import KnowledgeError, QueryBudgetExceeded, build_knowledge, check_attack_fits
from reconbench.core.scenario import Scenario
from reconbench.core.tracks import get_track


@pytest.fixture(scope="module")
def track():
    return get_track("digits")


def test_white_box_view_gives_module_in_eval_mode_but_no_data(track):
    k = build_knowledge(track, Scenario.parse("static/white-box/none"))
    assert not k.model.training
    assert k.target_size == 500 and k.num_classes == 10 and k.input_shape == (1, 8, 8)
    with pytest.raises(KnowledgeError, match="no auxiliary data"):
        _ = k.aux_data


def test_black_box_view_refuses_parameters(track):
    k = build_knowledge(track, Scenario.parse("static/black-box/same"))
    with pytest.raises(KnowledgeError, match="black-box"):
        _ = k.model
    with pytest.raises(KnowledgeError, match="parameters"):
        k.query.parameters()
    probs = k.query(torch.rand(3, 1, 8, 8))
    assert probs.shape == (3, 10) and torch.allclose(probs.sum(1), torch.ones(3))
    assert not probs.requires_grad


def test_aux_data_is_disjoint_from_the_target_set(track):
    from reconbench.image.track_files import load_splits

    k = build_knowledge(track, Scenario.parse("static/black-box/same"))
    target = load_splits(track).target
    aux = {a.tobytes() for a in k.aux_data.images}
    # Identical pixels may occur by chance in digits; the split is by index, so compare hashes of sets.
    assert k.aux_data.sha256 != target.sha256
    assert len(aux & {t.tobytes() for t in target.images}) < 5


def test_query_budget_counts_images_and_stops(track):
    k = build_knowledge(track, Scenario.parse("static/black-box/same"), query_budget=10)
    k.query(torch.rand(6, 1, 8, 8))
    assert k.query.queries == 6
    with pytest.raises(QueryBudgetExceeded, match="budget of 10"):
        k.query(torch.rand(5, 1, 8, 8))
    assert k.query.queries == 6


def test_query_rejects_wrong_shape(track):
    k = build_knowledge(track, Scenario.parse("static/black-box/same"))
    with pytest.raises(ValueError, match=r"\(N, 1, 8, 8\)"):
        k.query(torch.rand(2, 3, 8, 8))


def test_harness_refuses_attack_needing_more_than_scenario(track):
    with pytest.raises(KnowledgeError, match="needs one of"):
        check_attack_fits("deepinversion", ATTACKS["deepinversion"].scenarios, Scenario.parse("static/black-box/same"))
    # More knowledge than needed is fine.
    check_attack_fits("deepinversion", ATTACKS["deepinversion"].scenarios, Scenario.parse("static/white-box/same"))


def test_track_refuses_scenario_it_does_not_offer(track):
    with pytest.raises(KnowledgeError, match="does not offer"):
        build_knowledge(track, Scenario.parse("static/white-box/similar"))


@pytest.mark.parametrize("text", ["static/white-box", "static/grey-box/none", "sometimes/white-box/none"])
def test_scenario_parse_errors_are_clear(text):
    with pytest.raises(ValueError, match="scenario"):
        Scenario.parse(text)
