"""`validate` on judge studies: an honest study passes; every forged one fails with its reason.
Also the `recon-submit judge` command line (dry run, confirmation, run, validate)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from judge_helpers import ENTRIES, REPO, TEAM, endpoint, make_board, options, public_key_of
from judgeserver import JudgeServer, best_policy
from reconbench.cli import app
from reconbench.judge.api import finish
from reconbench.judge.cache import AnswerCache
from reconbench.judge.check import check_study
from reconbench.judge.runner import plan_study
from reconbench.core.signing import generate_key, load_private_key, sign_payload


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("judge-checks")
    key, _ = generate_key(tmp / "keys" / "team.pem")
    root, dirs = make_board(tmp, public_key_of(key), ["deepinversion", "deepdream"])
    plan = plan_study(dirs, options(targets=6, repeats=2, modes=("random", "fixed"), image_size=32))
    with JudgeServer(best_policy) as server:
        out = finish(plan, endpoint(server), AnswerCache(tmp / "cache"), team=TEAM, key_path=key,
                     out_root=tmp / "judgements")
    return tmp, root, key, out.path.parent


def forged(study, tmp_path, mutate, *, key=None, resign=True):
    """A copy of the honest study (and of its board) with `mutate(payload)` applied, re-signed."""
    src_tmp, root, team_key, folder = study
    board = tmp_path / "submissions"
    shutil.copytree(root, board)
    dst = tmp_path / "judgements" / folder.name
    shutil.copytree(folder, dst)
    doc = json.loads((dst / "study.json").read_text())
    mutate(doc["payload"])
    if resign:
        doc["signature"] = sign_payload(doc["payload"], load_private_key(key or team_key))
    (dst / "study.json").write_text(json.dumps(doc))
    return dst, board


def failure(report) -> str:
    assert not report.ok
    return report.checks[-1][2]


def test_honest_study_passes(study):
    _, root, _, folder = study
    report = check_study(folder, root)
    assert report.ok, report.checks
    assert [c[0] for c in report.checks] == ["layout", "schema", "signature", "entries", "protocol", "aggregates", "rerun"]


def _flip_vote(p):
    v = p["targets"][0]["votes"]["random"][0]
    v["condition"] = 1 - v["condition"]


def _swap_order(p):
    v = p["targets"][0]["votes"]["random"][0]
    v["order"] = v["order"][::-1]
    v["condition"] = v["order"][v["position"] - 2]


def _other_target(p):
    p["targets"][0]["index"] = next(i for i in range(500) if i not in {t["index"] for t in p["targets"]})


def _inflate(p):
    p["aggregates"]["random"]["major"] = [p["options"]["targets"], 0]
    p["aggregates"]["random"]["pred_rate"] = [1.0, 0.0]


def _worse_candidate(p):
    """Condition 2's candidate of target 1 replaced by its worst same-class reconstruction, with
    that reconstruction's true MSE: consistent on its face, but not the SoK's choice."""
    from reconbench.judge.selection import exact_mse, psnr, target_split
    from reconbench.image.results import load_reconstructions

    images, labels = load_reconstructions(REPO / "submissions" / TEAM / ENTRIES["deepdream"] / "reconstructions.safetensors")
    targets, _, _ = target_split("digits", "static")
    t = p["targets"][0]
    same = np.flatnonzero(labels == t["label"])
    mse = exact_mse(images[same], targets[t["index"]][None])
    j = int(np.argmax(mse))
    assert mse[j] > mse.min()
    t["candidates"][1].update(rec_index=int(same[j]), mse=float(mse[j]), psnr=psnr(float(mse[j])))


def _drop_vote(p):
    """A vote the publisher dislikes, marked invalid (its answer text kept)."""
    v = p["targets"][0]["votes"]["random"][0]
    v["position"] = v["condition"] = None


def _prompt(p):
    p["prompt"] = p["prompt"].replace("more similar", "less similar")


@pytest.mark.parametrize("mutate, reason", [
    (_flip_vote, "does not map to its condition"),
    (_swap_order, "not the seeded candidate order"),
    (_other_target, "not the seeded sample"),
    (_inflate, "aggregates differ from those recomputed"),
    (_worse_candidate, "highest-PSNR"),
    (_prompt, "not the SoK's prompt"),
    (lambda p: p.update(title="evil \u202etxt.exe"), "without control or format characters"),
    (_drop_vote, "position does not match the answers"),
])
def test_forged_and_re_signed_studies_fail(study, tmp_path, mutate, reason):
    folder, board = forged(study, tmp_path, mutate)
    assert reason in failure(check_study(folder, board))


def test_signatures_and_entries(study, tmp_path):
    folder, board = forged(study, tmp_path / "a", _inflate, resign=False)
    assert "changed after signing" in failure(check_study(folder, board))
    other, _ = generate_key(tmp_path / "mallory.pem")
    folder, board = forged(study, tmp_path / "b", lambda p: None, key=other)
    assert "not one of the team's keys" in failure(check_study(folder, board))
    folder, board = forged(study, tmp_path / "c", lambda p: p.update(team="nobody"))
    assert "names team 'nobody'" in failure(check_study(folder, board))
    folder, board = forged(study, tmp_path / "d", lambda p: None)
    result = next(board.glob(f"{TEAM}/*deepdream*/result.json"))
    result.write_text(result.read_text() + "\n")
    assert "changed since the study" in failure(check_study(folder, board))


def test_hostile_files(study, tmp_path):
    folder, board = forged(study, tmp_path / "a", lambda p: None)
    text = (folder / "study.json").read_text()
    (folder / "study.json").write_text('{"payload": {}, ' + text[1:])  # two "payload" members
    assert "duplicate key 'payload'" in failure(check_study(folder, board))
    folder, board = forged(study, tmp_path / "b", lambda p: None)
    (folder / "notes.pkl").write_bytes(b"\x80\x04.")
    assert "unexpected file" in failure(check_study(folder, board))
    folder, board = forged(study, tmp_path / "c", lambda p: None)
    renamed = folder.with_name("digits-judge-elsewhere")
    folder.rename(renamed)
    assert "differs from its folder name" in failure(check_study(renamed, board))
    folder, board = forged(study, tmp_path / "d", lambda p: None)
    (folder / "study.json").unlink()
    (folder / "study.json").symlink_to(study[3] / "study.json")
    assert "not a regular file" in failure(check_study(folder, board))


def test_entries_must_be_submitted_and_of_one_target_set(study, tmp_path):
    from reconbench.judge.selection import StudyInputError

    _, root, _, _ = study
    loose = tmp_path / "recon-results" / "run"
    shutil.copytree(next((root / TEAM).glob("*deepdream*")), loose)
    with pytest.raises(StudyInputError, match="not an entry folder submissions/<team>/"):
        plan_study([next((root / TEAM).glob("*deepinversion*")), loose], options(targets=2))
    dynamic = REPO / "submissions" / TEAM
    with pytest.raises(StudyInputError, match="differs from"):
        plan_study([next(dynamic.glob("*deepinversion*")), next(dynamic.glob("*updates-leak*"))], options(targets=2))
    with pytest.raises(StudyInputError, match="2 to 6 entries"):
        plan_study([next(dynamic.glob("*deepinversion*"))], options(targets=2))


def test_command_line(study, tmp_path):
    _, root, key, honest = study
    runner = CliRunner()
    entries = [str(p) for p in sorted((root / TEAM).iterdir()) if p.is_dir()]
    with JudgeServer(best_policy) as server:
        common = [*entries, "--model", "judge-under-test", "--targets", "3", "--repeats", "1", "--image-size", "32",
                  "--base-url", server.base_url, "--cache", str(tmp_path / "cache")]
        dry = runner.invoke(app, ["judge", *common, "--api-key", "sk-do-not-print", "--dry-run"])
        assert dry.exit_code == 0, dry.output
        assert "3 calls, 0 already cached; 3 images per call" in " ".join(dry.output.split())  # however rich wraps it
        assert "From the second to the third image" in dry.output and "data:image/png;base64," in dry.output
        assert "sk-do-not-print" not in dry.output
        run = [*common, "--api-key", server.key, "--team", TEAM, "--key", str(key), "--out", str(tmp_path / "j")]
        no = runner.invoke(app, ["judge", *run], input="n\n")
        assert no.exit_code == 1 and "cancelled" in no.output and server.calls == 0
        yes = runner.invoke(app, ["judge", *run, "--yes"])
        assert yes.exit_code == 0, yes.output
        assert server.calls == 3 and "signed study:" in yes.output
    (made,) = (tmp_path / "j").iterdir()
    ok = runner.invoke(app, ["validate", str(made), "--root", str(root), "--judgements", str(tmp_path / "j")])
    assert ok.exit_code == 0 and "OK: 1 judge study checked" in ok.output, ok.output
    both = runner.invoke(app, ["validate", "--format", "json", "--no-rescore", "--root", str(root),
                               "--judgements", str(tmp_path / "j")])
    report = json.loads(both.stdout)
    assert both.exit_code == 0 and report["ok"] and len(report["entries"]) == 2
    assert [s["study_id"] for s in report["judgements"]] == [made.name]
    doc = json.loads((made / "study.json").read_text())
    doc["payload"]["title"] = "edited"
    (made / "study.json").write_text(json.dumps(doc))
    bad = runner.invoke(app, ["validate", str(made), "--root", str(root), "--judgements", str(tmp_path / "j")])
    assert bad.exit_code == 1 and "changed after signing" in bad.output
