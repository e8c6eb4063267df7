"""Whole judge studies against a scripted OpenAI-compatible server on 127.0.0.1 (tests/judgeserver.py)."""

from __future__ import annotations

import numpy as np
import pytest

from judge_helpers import TEAM, endpoint, make_board, options, public_key_of
from judgeserver import JudgeServer, best_policy, constant
from reconbench.judge.api import finish
from reconbench.judge.cache import AnswerCache
from reconbench.judge.check import check_study
from reconbench.judge.client import CallFailed
from reconbench.judge.runner import plan_study


@pytest.fixture
def board(tmp_path, signing_key):
    return make_board(tmp_path, public_key_of(signing_key), ["deepinversion", "deepdream", "mi-face"])


def run(plan, server, tmp_path, signing_key, cache=None, **kw):
    return finish(plan, endpoint(server, **kw), AnswerCache(cache or tmp_path / "cache"), team=TEAM, key_path=signing_key,
                  out_root=tmp_path / "judgements")


def test_truthful_judge_recovers_the_best_candidate_and_a_rerun_makes_no_call(board, tmp_path, signing_key):
    root, dirs = board
    plan = plan_study(dirs, options(targets=16, repeats=2))
    assert plan.prompt.startswith("From the second to the fourth image,")  # K = 3: images 2..4
    with JudgeServer(best_policy) as server:
        out = run(plan, server, tmp_path, signing_key)
        assert server.calls == len(plan.calls) == 32
    payload = out.payload
    assert payload["judge"]["models_reported"] == ["scripted-test-judge"]
    best = []
    for t in payload["targets"]:
        mse = [c["mse"] for c in t["candidates"]]
        best.append(int(np.argmin(mse)) if sorted(mse)[0] < sorted(mse)[1] else None)
        for v in t["votes"]["random"]:
            if best[-1] is not None:
                assert v["condition"] == best[-1], (t["index"], v, mse)
    clear = [b for b in best if b is not None]
    assert len(set(clear)) >= 2 and len(clear) == 16  # the truth varies between targets
    positions = {v["position"] for t in payload["targets"] for v in t["votes"]["random"]}
    assert positions == {2, 3, 4}  # the judge follows the images through the shuffled orders
    agg = payload["aggregates"]["random"]
    assert agg["major"] == [clear.count(c) for c in range(3)]
    assert agg["all"] == agg["major"] and agg["invalid_answers"] == 0
    assert check_study(out.path.parent, root).ok

    with JudgeServer(constant("garbage")) as server:  # every answer from the cache: no call at all
        again = run(plan_study(dirs, options(targets=16, repeats=2)), server, tmp_path / "second", signing_key,
                    cache=tmp_path / "cache")
        assert server.calls == 0
    assert again.tally.cached == 32 and again.tally.done == 0
    assert again.payload["targets"] == payload["targets"]


def test_always_two_is_pure_position_bias_and_no_preference_after_randomisation(board, tmp_path, signing_key):
    root, dirs = board
    plan = plan_study(dirs[:2], options(targets=30, repeats=4, modes=("random", "fixed")))
    assert plan.prompt.startswith("From the second to the third image,")
    with JudgeServer(constant("2")) as server:
        out = run(plan, server, tmp_path, signing_key)
    fixed, rand = out.payload["aggregates"]["fixed"], out.payload["aggregates"]["random"]
    # The SoK's fixed order: the first condition "wins" everything, a pure artefact of position.
    assert fixed["pred_rate"] == [1.0, 0.0] and fixed["major"] == [30, 0] and fixed["all"] == [30, 0]
    # Randomised: the position statistic shows the bias, the conditions get no preference.
    assert rand["position_bias"]["counts"] == [120, 0] and rand["position_bias"]["p_value"] < 1e-20
    first = sum(v["order"][0] == 0 for t in out.payload["targets"] for v in t["votes"]["random"])
    assert rand["votes"] == [first, 120 - first]
    assert 0.4 <= rand["pred_rate"][0] <= 0.6
    assert rand["ties"] > 0  # 2-2 splits among 4 repeats are reported as ties, not broken
    assert sum(rand["major"]) + rand["ties"] == 30
    assert check_study(out.path.parent, root).ok


def test_malformed_answers_rate_limits_server_errors_and_hangs(board, tmp_path, signing_key):
    root, dirs = board
    plan = plan_study(dirs[:2], options(targets=3, repeats=2, concurrency=1, invalid_retries=2))
    script = [
        {"text": "I think the third one"},          # call 1: malformed, re-asked ...
        {"status": 429, "headers": {"Retry-After": "1"}},  # ... rate limited: wait the 1 s asked for
        {"text": "3."},                                # ... then valid ("3." reads as 3)
        {"status": 500},                               # call 2: server error, backoff, retried
        {"hang": 3.0},                                 # ... then a hang: timed out, retried
        {"text": "2"},                                 # ... then answered
        {"text": "nope"}, {"text": "1"}, {"text": "9"},  # call 3: three invalid answers: counted invalid
    ]
    with JudgeServer(best_policy, script=script) as server:
        ep = endpoint(server, timeout=0.5)
        out = finish(plan, ep, AnswerCache(tmp_path / "cache"), team=TEAM, key_path=signing_key,
                     out_root=tmp_path / "judgements")
        times = [r["time"] for r in server.requests]
        assert server.calls == len(plan.calls) + 3 + 3  # 3 re-asks, 429 + 500 + hang retried
    assert ep.waits[0] == 1.0  # Retry-After honoured
    assert times[2] - times[1] >= 1.0
    agg = out.payload["aggregates"]["random"]
    assert agg["invalid_answers"] == 1 and agg["reasks"] == 3
    votes = [v for t in out.payload["targets"] for v in t["votes"]["random"]]
    assert votes[0]["answers"] == ["I think the third one", "3."] and votes[0]["position"] == 3
    assert votes[2]["answers"] == ["nope", "1", "9"] and votes[2]["condition"] is None
    assert check_study(out.path.parent, root).ok


def test_failed_calls_write_no_study_and_a_rerun_asks_only_those(board, tmp_path, signing_key):
    root, dirs = board
    plan = plan_study(dirs[:2], options(targets=4, repeats=1, concurrency=1))
    with JudgeServer(best_policy, script=[{"status": 503}] * 2) as server:
        with pytest.raises(CallFailed, match="1 of 4 calls failed"):
            run(plan, server, tmp_path, signing_key, max_retries=1)
        assert server.calls == 5
    assert not (tmp_path / "judgements").exists()
    with JudgeServer(best_policy) as server:
        out = run(plan, server, tmp_path, signing_key)
        assert server.calls == 1 and out.tally.cached == 3
