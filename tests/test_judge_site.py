"""Judge studies on the site: `mkdocs build --strict` publishes a page per valid study (aggregates,
Pred Rate and position-bias charts, gallery), escapes contributor text, and leaves forged studies out.
Also: the study committed under judgements/ validates against the repository's submissions."""

from __future__ import annotations

import json
import shutil

from judge_helpers import REPO, TEAM, endpoint, make_board, options, public_key_of
from judgeserver import MODEL, JudgeServer, best_policy
from reconbench.judge.api import finish
from reconbench.judge.cache import AnswerCache
from reconbench.judge.check import check_studies
from reconbench.judge.runner import plan_study
from site_entries import build_site

HOSTILE = "<script>alert('judge')</script> & <b>bold</b>"


def test_committed_example_study_validates():
    reports = check_studies(REPO / "judgements", REPO / "submissions")
    assert reports and all(r.ok for r in reports), [r.checks for r in reports]
    example = reports[0].study.payload
    assert example.judge.models_reported == [MODEL] and "Scripted test judge" in example.title


def test_study_pages(tmp_path, signing_key, monkeypatch):
    root, dirs = make_board(tmp_path, public_key_of(signing_key), ["deepinversion", "deepdream"])
    plan = plan_study(dirs, options(targets=8, repeats=3, modes=("random", "fixed"), image_size=32))
    with JudgeServer(best_policy) as server:
        good = finish(plan, endpoint(server), AnswerCache(tmp_path / "cache"), team=TEAM, key_path=signing_key,
                      out_root=tmp_path / "judgements", title=HOSTILE).path.parent
    forged = tmp_path / "judgements" / "digits-judge-forged"
    shutil.copytree(good, forged)
    doc = json.loads((forged / "study.json").read_text())
    doc["payload"]["study_id"] = forged.name
    (forged / "study.json").write_text(json.dumps(doc))

    monkeypatch.delenv("RECONBENCH_JUDGEMENTS", raising=False)  # default: judgements/ beside submissions/
    out = tmp_path / "public"
    proc = build_site(root, out, rescore=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    index = (out / "judgements" / "index.html").read_text()
    page = (out / "judgements" / good.name / "index.html").read_text()
    assert not (out / "judgements" / forged.name).exists() and "digits-judge-forged" in index  # listed as failed
    assert "&lt;script&gt;alert(" in page and "<script>alert(" not in page and "<b>bold</b>" not in page
    assert MODEL in page and "From the second to the third image" in page
    assert 'id="chart-judge-pred-' in page and 'id="chart-judge-pos-' in page
    pngs = sorted((out / "judgements" / good.name).glob("target-*.png"))
    assert pngs and all(f'src="target-{p.stem.split("-")[1]}.png"' in page for p in pngs)
    assert page.count("<figure class=\"rb-gallery\">") == len(pngs)
    assert f'href="{good.name}/"' in index or f'href="./{good.name}/"' in index
