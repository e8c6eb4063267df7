"""Forged claims a signature cannot catch (the contributor signs them): each is re-signed by the team's
own key and must still be refused, with one line naming what contradicts what.

- hidden characters in any string of a result (core/envelope.hidden_text);
- a registered attack's version and configuration, against the registry, the budget and the command's
  `--set` options; the command's options against the payload (submissions/claims.py);
- the membership test's conditions against the protocol's (checks/rescore.membership_checks);
- a registered attack's paper on the board is the registry's (leaderboard/frame.py).

All start from the session's real mi-face entry (tests/submission_helpers.py)."""

from __future__ import annotations

import pytest

from reconbench.core.catalogue import BY_NAME
from submission_helpers import failure, fresh_board


@pytest.fixture
def board(tmp_path_factory, tmp_path):
    return fresh_board(tmp_path_factory, tmp_path)


def _set(*path_and_value):
    *path, value = path_and_value

    def mutate(payload):
        node = payload
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return mutate


@pytest.mark.parametrize("mutate, where, char", [
    (_set("attack", "version", "1\u202e"), "payload.attack.version", "\\u202e"),
    (_set("provenance", "command", "recon-submit evaluate\u200b --attack mi-face"), "payload.provenance.command", "\\u200b"),
    (_set("provenance", "hardware", "x86 \x1b[31mH100"), "payload.provenance.hardware", "\\x1b"),
    (_set("metrics", "mse", "note", "fine\u2066"), "payload.metrics.mse.note", "\\u2066"),
    (_set("attack", "config", "init\u200d", "zeros"), "payload.attack.config.init\\u200d (its key)", "\\u200d"),
    (_set("provenance", "device", "cpu\u2028cuda"), "payload.provenance.device", "\\u2028"),
])
def test_hidden_characters_anywhere_in_a_result_are_refused(board, mutate, where, char):
    board.resign(mutate)
    fail = failure(board.only())
    assert fail.name == "schema"
    assert f"{where} holds the control or format character '{char}'" in fail.message, fail.message


def test_text_not_in_nfc_is_refused(board):
    board.resign(_set("provenance", "toolkit_version", "0.1.0-be\u0301ta"))  # e + combining acute: é spelled twice
    fail = failure(board.only())
    assert fail.name == "schema" and "payload.provenance.toolkit_version is not in Unicode NFC" in fail.message


def _config(key, value):
    return lambda p: p["attack"]["config"].__setitem__(key, value)


@pytest.mark.parametrize("mutate, expected", [
    (_set("attack", "version", "99"), "attack 'mi-face' is at version 1 in the registry; the entry says version '99'"),
    (_config("secret_sauce", 1), "attack 'mi-face' declares no option secret_sauce"),
    (_config("iterations", -5), "option 'iterations' expects int ≥ 1, got -5"),
    # a cheaper run labelled with another budget: the findings read the budget as the label of the work done
    (_set("attack", "budget", "quick"), "attack.config.iterations is 5000, but the 'quick' budget runs 500"),
    (_config("iterations", 7), "attack.config.iterations is 7, but the 'default' budget runs"),
    (_set("provenance", "seed", 7), "provenance.command gives --seed 0, but the payload records 7"),
    (_set("provenance", "command", "recon-submit evaluate --track fashion-n100 --attack mi-face"),
     "provenance.command gives --track fashion-n100, but the payload records digits"),
    (_set("provenance", "command", "recon-submit evaluate --attack deepdream"),
     "provenance.command gives --attack deepdream, but the payload records mi-face"),
    (_set("provenance", "command", "recon-submit evaluate --attack mi-face --seed 0 --seed 3"),
     "provenance.command gives --seed twice ('0', '3')"),
    (_set("provenance", "command", "recon-submit evaluate --attack 'mi-face"), "does not split as a shell command line"),
])
def test_claims_the_rest_of_the_entry_contradicts_are_refused(board, mutate, expected):
    board.resign(mutate)
    fail = failure(board.only())
    assert fail.name == "registry" and expected in fail.message, fail.message


def test_a_budget_claimed_against_the_command_is_refused(board):
    """The command says quick, the payload default (the preset the findings read): which ran is a guess."""
    board.resign(_set("provenance", "command", "recon-submit evaluate --attack mi-face --budget quick"))
    fail = failure(board.only())
    assert fail.name == "registry" and "gives --budget quick, but the payload records default" in fail.message


def test_an_override_recorded_in_the_command_passes(board):
    """The rule is the command's story, not a ban on options: --set iterations=7 (also as --set=...) explains 7."""
    for command in ("recon-submit evaluate --attack mi-face --set iterations=7",
                    "recon-submit evaluate --attack=mi-face --seed=0 --set=iterations=7"):
        board.resign(lambda p, c=command: (p["attack"]["config"].__setitem__("iterations", 7),
                                           p["provenance"].__setitem__("command", c)))
        report = board.only()
        assert report.trust == "signed", [c.to_dict() for c in report.checks]


@pytest.mark.parametrize("field, value", [("permutations", 10), ("seed", 5)])
def test_a_membership_test_claimed_at_other_conditions_is_refused(board, field, value):
    board.resign(_set("membership", field, value))
    fail = failure(board.only(rescore=True))
    assert fail.name == "rescore.membership" and "the board's test (re-scored here) draws 2000 from seed 0" in fail.message


def test_the_board_shows_a_registered_attacks_paper_from_the_registry(board):
    from reconbench.leaderboard.frame import entries_frame

    board.resign(_set("attack", "paper", "Mallory et al., Our Breakthrough, NeurIPS 2026"))
    report = board.only()
    assert report.trust == "signed"  # the paper is the contributor's text: not refused, but never shown
    row = entries_frame([report]).iloc[0]
    assert row["paper"] == BY_NAME["mi-face"].paper and "Mallory" not in row["paper"]


@pytest.mark.parametrize("hide", [
    lambda p: p["metrics"]["ssim"].update(status="not_computed", value=None, coverage=None, note="SSIM: not computed"),
    lambda p: p["metrics"].pop("knn_dist"),
], ids=["claimed-not-computed", "left-out"])
def test_a_metric_that_needs_no_weights_cannot_be_hidden(board, hide):
    """Selective reporting: a weak SSIM said to be "not computed", or a KNN distance left out, would show
    as a blank beside the rest; only the backbone metrics (weights.NEEDS_WEIGHTS) may honestly be missing."""
    board.resign(hide)
    fail = failure(board.only(rescore=True))
    assert fail.name.startswith("rescore.") and "needs no downloaded weights: evaluate computes it" in fail.message


def test_queries_are_recorded_in_black_box_cells_only(board):
    """A black-box entry that leaves its query count out would pass the track's budget rule unseen."""
    board.resign(lambda p: p["provenance"].update(queries=12))  # the white-box entry: it makes none
    fail = failure(board.only())
    assert fail.name == "registry" and "provenance.queries is 12 in the white-box cell" in fail.message

    def black_box_without_count(p):
        _as_surrogate(p)
        p["provenance"]["queries"] = None
    board.resign(black_box_without_count)
    fail = failure(board.only())
    assert fail.name == "registry" and "provenance.queries is missing, but static/black-box/none is a black-box" in fail.message


def _as_surrogate(p):
    """The MI-Face entry restated as run through a stolen surrogate in the static black-box cell
    (as tests/test_submissions_hostile.py does), with its command."""
    from reconbench.core.tracks import get_track
    from submission_helpers import recorded

    p["scenario"] = "static/black-box/none"
    p["surrogate"] = dict(method="dfme", architecture=get_track("digits").architecture, budget="quick",
                          config={"query_budget": 50000}, queries=49280, agreement=0.94, agreement_images=697,
                          attack_view="static/white-box/none")
    p["provenance"]["queries"] = 49280
    recorded(p)


@pytest.mark.parametrize("given, ok", [
    ("attacks/class_ascent.py:ClassAscent", True), ("/home/me/lab/class_ascent.py:ClassAscent", True),
    ("class_ascent.py:ClassAscent", True), ("attacks/other.py:ClassAscent", False), ("class_ascent.py:Other", False),
])
def test_an_own_attack_given_by_a_path_names_the_file_the_code_records(given, ok):
    """An own attack's code records the file's name (attack_source.entry_file); the command may give it by any path."""
    from types import SimpleNamespace

    from reconbench.submissions.claims import command_problems

    payload = SimpleNamespace(
        track="digits", scenario="static/white-box/none",
        attack=SimpleNamespace(name="class-ascent", code="class_ascent.py:ClassAscent", budget="quick"),
        provenance=SimpleNamespace(command=f"recon-submit evaluate --track digits --attack {given} --budget quick",
                                   seed=0))
    assert (command_problems(payload) == []) is ok
