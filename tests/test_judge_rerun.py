"""Judge studies are their signer's claim (issue 23, item 5): a study is published as self-reported unless
a maintainer's re-run of its own plan, with the maintainers' endpoint, agrees; a re-signed study with
flipped votes validates (it is consistent) but is never shown as confirmed, and a maintainer's re-run
contradicts it. The endpoints are the scripted OpenAI-compatible server of tests/judgeserver.py."""

from __future__ import annotations

import json
import shutil

import pytest

from judge_helpers import TEAM, endpoint, make_board, options, public_key_of
from judgeserver import JudgeServer, best_policy
from reconbench.judge.aggregate import aggregates
from reconbench.judge.api import finish
from reconbench.judge.cache import AnswerCache
from reconbench.judge.check import check_study
from reconbench.judge.rerun import RERUN_FILE, RerunError, read_rerun, rerun_study
from reconbench.judge.runner import plan_study
from reconbench.core.signing import generate_key, load_private_key, sign_payload
from submission_helpers import listed_reproducer


@pytest.fixture(scope="module")
def reproducer(tmp_path_factory):
    with listed_reproducer(tmp_path_factory.mktemp("judge-reproducers")) as pair:
        yield pair


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("judge-rerun")
    key, _ = generate_key(tmp / "keys" / "team.pem")
    root, dirs = make_board(tmp, public_key_of(key), ["deepinversion", "deepdream"])
    plan = plan_study(dirs, options(targets=12, repeats=3, modes=("random",), image_size=32))
    with JudgeServer(best_policy) as server:
        out = finish(plan, endpoint(server), AnswerCache(tmp / "cache"), team=TEAM, key_path=key,
                     out_root=tmp / "judgements")
    return tmp, root, key, out.path.parent


def copy_study(honest, tmp_path, mutate=None):
    _, root, key, folder = honest
    board = tmp_path / "submissions"
    shutil.copytree(root, board)
    dst = tmp_path / "judgements" / folder.name
    shutil.copytree(folder, dst)
    if mutate is not None:
        doc = json.loads((dst / "study.json").read_text())
        mutate(doc["payload"])
        doc["signature"] = sign_payload(doc["payload"], load_private_key(key))  # the team re-signs its own study
        (dst / "study.json").write_text(json.dumps(doc))
    return dst, board


def flip_votes(payload):
    """Every valid vote moved to the other candidate (K = 2), answers and aggregates made consistent."""
    k, repeats = len(payload["conditions"]), payload["options"]["repeats"]
    for t in payload["targets"]:
        for votes in t["votes"].values():
            for v in votes:
                if v["position"] is not None:
                    v["position"] = 5 - v["position"]  # positions 2 <-> 3
                    v["answers"] = [str(v["position"])]
                    v["condition"] = v["order"][v["position"] - 2]
    for mode in payload["aggregates"]:
        payload["aggregates"][mode] = aggregates([{"votes": t["votes"][mode]} for t in payload["targets"]], k, repeats)


def invent_votes(payload):
    """Every vote invented: the first position shown, whatever the judge answered, made consistent."""
    k, repeats = len(payload["conditions"]), payload["options"]["repeats"]
    for t in payload["targets"]:
        for votes in t["votes"].values():
            for v in votes:
                v["position"], v["answers"], v["condition"] = 2, ["2"], v["order"][0]
    for mode in payload["aggregates"]:
        payload["aggregates"][mode] = aggregates([{"votes": t["votes"][mode]} for t in payload["targets"]], k, repeats)


def page_of(folder, board):
    from reconbench.leaderboard.judgements import build_judgements, study_page
    from reconbench.leaderboard.pages import Pages

    pages = Pages()
    build_judgements(pages, {}, folder.parent, board)

    def whole(path):  # the markdown with its HTML fragments (the <!--rb:html--> blocks are kept apart)
        return pages.markdown[path] + "".join(v for k, v in pages.fragments.items() if path.removesuffix(".md") in k)

    return whole(study_page(folder.name)), whole("judgements/index.md")


def test_a_study_nobody_re_ran_is_shown_as_self_reported(honest, tmp_path):
    folder, board = copy_study(honest, tmp_path)
    report = check_study(folder, board)
    assert report.ok and report.rerun is None and ("rerun", "note", "self-reported: no maintainer has re-run this study") in report.checks
    page, index = page_of(folder, board)
    assert "<b>Self-reported</b>" in page and "No maintainer has re-run this study" in page
    assert "self-reported" in index and "re-run by the maintainers" not in index


def test_a_maintainers_re_run_that_agrees_is_shown_as_such(honest, tmp_path, reproducer):
    folder, board = copy_study(honest, tmp_path)
    with JudgeServer(best_policy, model="maintainers-judge") as server:
        path, record = rerun_study(folder, board, endpoint(server), key_path=reproducer[0])
    assert path == folder / RERUN_FILE and record.agrees and record.judge.models_reported == ["maintainers-judge"]
    report = check_study(folder, board)
    assert report.ok and report.rerun["agrees"] and report.rerun["by"] == "test reproducer"
    page, index = page_of(folder, board)
    assert "<b>Re-run by the maintainers</b>" in page and "maintainers-judge" in page
    assert "re-run by the maintainers" in index


@pytest.mark.parametrize("forge", [flip_votes, invent_votes], ids=["inverted", "invented"])
def test_a_re_signed_study_with_flipped_votes_validates_but_is_not_confirmed(honest, tmp_path, reproducer, forge):
    folder, board = copy_study(honest, tmp_path, forge)
    report = check_study(folder, board)
    assert report.ok, report.checks  # consistent: validation alone cannot tell
    assert "<b>Self-reported</b>" in page_of(folder, board)[0]
    with JudgeServer(best_policy) as server:
        _, record = rerun_study(folder, board, endpoint(server), key_path=reproducer[0])
    assert not record.agrees
    report = check_study(folder, board)
    assert report.ok and not report.rerun["agrees"] and "DISAGREE" in report.checks[-1][2]
    page, index = page_of(folder, board)
    assert "Self-reported, and not confirmed" in page and "self-reported (re-run disagrees)" in index
    # A re-run record edited to say it agrees (and re-signed by the listed key) still disagrees: recomputed here.
    data = json.loads((folder / RERUN_FILE).read_text())
    data["record"]["agrees"] = True
    data["record"]["comparisons"] = [dict(c, within=True) for c in data["record"]["comparisons"]]
    data["signature"] = sign_payload(data["record"], load_private_key(reproducer[0]))
    (folder / RERUN_FILE).write_text(json.dumps(data))
    assert read_rerun(folder / RERUN_FILE).record.agrees
    assert not check_study(folder, board).rerun["agrees"]


def test_re_run_records_must_be_a_listed_reproducers_and_for_this_study(honest, tmp_path, reproducer):
    key, stranger = reproducer
    folder, board = copy_study(honest, tmp_path)
    with JudgeServer(best_policy) as server:
        with pytest.raises(RerunError, match="not a reproducer key"):
            rerun_study(folder, board, endpoint(server), key_path=stranger)
        rerun_study(folder, board, endpoint(server), key_path=key)
    data = json.loads((folder / RERUN_FILE).read_text())
    data["signature"] = sign_payload(data["record"], load_private_key(stranger))  # signed by an unlisted key
    (folder / RERUN_FILE).write_text(json.dumps(data))
    report = check_study(folder, board)
    assert not report.ok and "not a reproducer key listed" in report.checks[-1][2]
    # A genuine re-run of this study beside a study the team changed since (re-signed): not for this payload.
    data["signature"] = sign_payload(data["record"], load_private_key(key))
    (folder / RERUN_FILE).write_text(json.dumps(data))
    assert check_study(folder, board).ok
    doc = json.loads((folder / "study.json").read_text())
    doc["payload"]["title"] = "another title"
    doc["signature"] = sign_payload(doc["payload"], load_private_key(honest[2]))
    (folder / "study.json").write_text(json.dumps(doc))
    report = check_study(folder, board)
    assert not report.ok and "another study, or of another version" in report.checks[-1][2]


def test_the_command_line_re_run(honest, tmp_path, reproducer):
    from typer.testing import CliRunner

    from reconbench.cli import app

    folder, board = copy_study(honest, tmp_path)
    with JudgeServer(best_policy) as server:
        res = CliRunner().invoke(app, ["judge-rerun", str(folder), "--key", str(reproducer[0]), "--submissions", str(board),
                                       "--base-url", server.base_url, "--api-key", server.key])
    assert res.exit_code == 0 and "agrees; signed re-run" in res.output, res.output
