"""Held is held everywhere (issue 43, item 5): a held or failed draw gives no verdict, badge or rank on the twin
page, and neither does any draw of a burned season (core/seasons.burned: 2026-s1), whose twin pages say so and
show the numbers as practice; the findings page and the defenses view read no held entry and no burned draw;
a sealed twin's "extracts" is decided by the pooled membership relabelling (core/relabel.py), not the natural p.

The reports are the committed sealed examples (team sealed-examples, 2026-s1, records signed by CI) or built from
them; a twin of a season that is not burned is the same draws with another season named."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from reconbench.core.relabel import Stratum, record as relabel_record
from reconbench.core.seasons import burned, burned_why
from reconbench.core.tracks import get_track
from reconbench.leaderboard.pages import Pages
from reconbench.leaderboard.sealed import sealed_view

ROOT = Path(__file__).resolve().parents[1] / "submissions"
GROUP = "fashion-n100-sealed"


@pytest.fixture(scope="module")
def examples():
    from reconbench.image.results import parse_result_json

    return [SimpleNamespace(team="sealed-examples", trust="re-scored", held_reason=None,
                            result=parse_result_json(p.parent / "result.json"), sealed=json.loads(p.read_text()))
            for p in sorted((ROOT / "sealed-examples").glob(f"{GROUP}-d*/sealed.json"))]


def _unburned(track):
    """The same draw, as if its season still sealed its members."""
    return track.model_copy(update={"seal": track.seal.model_copy(update={"season": "test-season"})})


def _render(view, draws=()) -> str:
    pages = Pages()
    pages.page("leaderboards/x.md", "sealed_group.md.j2", sealed=view, draws=list(draws))
    return " ".join(pages.markdown["leaderboards/x.md"].split())


def test_the_burned_season_s_twin_page_gives_no_verdict_and_says_why(examples):
    track = get_track(f"{GROUP}-d0")
    assert burned(track.seal.season) and track.seal.season == "2026-s1"
    view = sealed_view(track, examples)
    assert view["practice"] == burned_why("2026-s1") and len(view["rows"]) >= 5
    for row in view["rows"]:
        assert row["tier"] is None and row["verdict"] is None and row["pending"] == "practice draws, no verdict"
        assert row["draws"] == 5 and row["metrics"]["ssim"].mean is not None  # the numbers stay, as practice
    text = _render(view)
    from markupsafe import escape

    why = str(escape(" ".join(burned_why("2026-s1").split())))
    assert f"Practice draws: season 2026-s1 is burned ({why}); no verdict" in text
    assert "no run here gets a verdict, a badge or a rank" in text
    assert "rb-tier" not in text and "rb-verdict" not in text  # no badge on any row
    # the draw's own board says so too
    pages = Pages()
    pages.page("d.md", "_sealed.md.j2", sealed=view)
    assert "practice draws: season `2026-s1` is burned" in " ".join(pages.markdown["d.md"].split())


def test_a_held_draw_gives_its_run_no_verdict_and_a_failed_one_no_numbers(examples):
    track = _unburned(get_track(f"{GROUP}-d0"))
    free = {r["attack"]: r for r in sealed_view(track, examples)["rows"]}
    assert all(r["verdict"] is not None for r in free.values())  # a season that seals: every run has its verdict
    attack = sorted(free)[0]
    held = [SimpleNamespace(**{**vars(r), "trust": "held", "held_reason": "extraordinary leakage: ssim gap +0.3"})
            if r.result.payload.attack.name == attack and r.sealed["draw"] == 2 else r for r in examples]
    row = {r["attack"]: r for r in sealed_view(track, held)["rows"]}[attack]
    assert row["tier"] is None and row["verdict"] is None and row["on_hold"]
    assert row["pending"] == "held, no verdict: draw 3: extraordinary leakage: ssim gap +0.3"
    text = _render(sealed_view(track, held))
    line = next(x for x in text.split("| ") if "held, no verdict" in x)
    assert "rb-tier" not in line
    failed = [SimpleNamespace(**{**vars(r), "trust": "failed"}) if r.result.payload.attack.name == attack
              and r.sealed["draw"] == 2 else r for r in examples]
    row = {r["attack"]: r for r in sealed_view(track, failed)["rows"]}[attack]
    assert row["draws"] == 4 and row["verdict"] is None and row["pending"] == "no verdict yet: 4 of 5 draws"


def _with_count(record: dict, members: int, strata: list[Stratum]) -> dict:
    out = json.loads(json.dumps(record))
    out["extraction"].update(members=members, holdout=0, relabel=relabel_record(strata))
    return out


def test_a_twin_s_extracts_is_the_pooled_relabelling_s(examples):
    """One member per draw over the block's candidates extracts; the same over the pool alone does not, though
    the natural null's p of both is tiny (it stays beside the verdict as context)."""
    track = _unburned(get_track(f"{GROUP}-d0"))
    attack = examples[0].result.payload.attack.name
    mine = [r for r in examples if r.result.payload.attack.name == attack]
    for candidates, extracts in ((486, True), (20, False)):
        reports = [SimpleNamespace(**{**vars(r), "sealed": _with_count(r.sealed, 1, [Stratum("3", candidates, 10, 1, 1)])})
                   for r in mine]
        (row,) = sealed_view(track, reports)["rows"]
        assert row["extraction"].p < 1e-6  # the natural null: tiny either way
        assert (row["verdict"] == "extracts 5") is extracts, row["verdict"]
        assert row["extraction_p"].startswith("relabelling p ") and "natural-data p" in row["extraction_p"]
        if extracts:
            assert row["held"].startswith("count, membership relabelling p ")


# ---------------------------------------------------------------- the board, findings and defenses


def test_burned_draws_are_practice_on_the_board_and_never_ranked(examples):
    from reconbench.leaderboard.frame import entries_frame, practice_track, sort_board
    from reconbench.submissions import validate_entries

    assert practice_track(get_track(f"{GROUP}-d0")) and not practice_track(get_track("fashion-n100"))
    entry = next((ROOT / "sealed-examples").glob(f"{GROUP}-d0-*"))
    (report,) = validate_entries([entry], root=ROOT, rescore=False, cache=False)
    assert report.trust in ("signed", "re-scored", "held")
    board = sort_board(entries_frame([report]))
    row = board.iloc[0]
    assert bool(row["practice"]) and pd.isna(row["position"]) and row["verdict"] is None and row["tier"] is None


def _frame_row(track: str, trust: str, page: str, folder: Path, p: float, practice: bool = False, extracted=None):
    from reconbench.leaderboard.frame import COLUMNS

    row = {c: np.nan for c in COLUMNS}
    row.update(track=track, attack="deepdream", scenario="static/white-box/none", trust=trust, practice=practice,
               date=pd.Timestamp("2026-12-01"), page=page, entry_dir=str(folder), seed=0, budget="default",
               config="{}", count=100, command=f"recon-submit evaluate --track {track} --attack deepdream --seed 0")
    folder.mkdir()
    (folder / "result.json").write_text(json.dumps({"payload": {"membership": {"metrics": {
        "ssim": {"value": 0.3, "p": p, "low": 0.2, "high": 0.4}, "knn_dist": {"value": 1.0, "p": 0.5}}}}}))
    if extracted is not None:
        row.update(extracted=float(extracted), extracted_of=100.0, extracted_holdout=0.0, extraction_p=1e-9, extracts=True)
    return row


def test_findings_and_defenses_read_no_held_entry_and_no_burned_draw(tmp_path):
    from reconbench.leaderboard import defenses, findings
    from reconbench.leaderboard.frame import COLUMNS

    rows = [_frame_row("fashion-n100", "held", "entries/a/held.md", tmp_path / "held", 1e-4, extracted=100),
            _frame_row(f"{GROUP}-d0", "reproduced", "entries/b/practice.md", tmp_path / "practice", 1e-4, practice=True,
                       extracted=5),
            _frame_row("fashion-n100", "reproduced", "entries/c/honest.md", tmp_path / "honest", 0.3)]
    frame = pd.DataFrame(rows, columns=COLUMNS)
    _, gaps = findings.verdicts(frame, findings.default_conditions())
    assert [g["entry"]["page"] for g in gaps] == ["entries/c/honest.md"]
    assert defenses.attack_rows(frame) == []  # the honest entry shows no evidence; the held one is not read
    frame.loc[2, "trust"] = "held"  # even the only entry of its attack: held, so not on either page
    _, gaps = findings.verdicts(frame, findings.default_conditions())
    assert gaps == []


def test_the_held_rule_reads_a_sealed_draw_s_gap_from_its_signed_record(examples):
    """The committed examples: the rule sees each draw's gap in its sealed.json (no other team's reproduced entry
    of the draw raises the reference), and holds the draws whose gap is beyond 0 with the interval's confidence."""
    from reconbench.submissions.leakage import beyond, hold_extraordinary, sealed_gaps

    reports = [SimpleNamespace(**{**vars(r), "entry_id": r.result.payload.entry_id, "is_entry": True, "membership": {},
                                  "mirrored": {}}) for r in examples]
    expected = {r.entry_id for r in reports if beyond(sealed_gaps(r.sealed), {})}
    hold_extraordinary(reports, ROOT)
    assert expected and {r.entry_id for r in reports if r.trust == "held"} == expected
    assert all(re.search(r"extraordinary leakage: \w+ gap", r.held_reason) for r in reports if r.trust == "held")
