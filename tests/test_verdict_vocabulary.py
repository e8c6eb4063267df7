"""One vocabulary for the verdict tiers (issue 45, item 3): the command line (`evaluate`, `check`), a board,
the twin page, the findings and the defenses view show an entry's verdict in the words of core/verdict.py
(extracts k, recovers k, membership signal, no evidence) and in no other (the retired "leaks", "no
measurable leakage", "no leak shown", "recovers training data"); every p beside a verdict shows the
threshold it was held to.

Generated from fixtures, through the real chain: a real MI-Face run on the embedded digits track
(`evaluate` from the CLI), submitted and validated with re-scoring (site_entries), the board's frame
(leaderboard/frame.py) and its pages rendered by leaderboard/pages.py; the twin page from the sealed
examples CI scored with the key (submissions/sealed-examples). Three variants of the real entry give the
board the other tiers: its gaps with a small SSIM p (a membership signal), its count with three members
extracted, and its recovery count (core/recovery.py, computed at validation) with eight members recovered;
every verdict is computed by the board's own code from those inputs, never written here.
"""

from __future__ import annotations

import dataclasses
import html
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from typer.testing import CliRunner

from reconbench.core import verdict as vocabulary
from site_entries import make_key, submit_entry

ROOT = Path(__file__).resolve().parents[1]
# the tier labels core/verdict.py gives: a counted tier always with its count
LABEL = re.compile(r"^(?:extracts [1-9]\d*|recovers [1-9]\d*|membership signal|no evidence)$")
BADGE = re.compile(r'<span class="rb-verdict rb-tier rb-tier-([a-z-]+)"[^>]*>([^<]*)</span>(?:<span class="rb-held[^"]*">([^<]*)</span>)?')
RETIRED = re.compile(r"\bleaks\b|leak shown|no measurable leakage|recovers training data|extracts 0\b", re.I)
HELD = re.compile(r"p (?:≤ )?[\d.e+-]+ [<>≥] [\d.e-]+(?: = 0\.01 / \d+ metrics)?")


def text_of(page: str) -> str:
    """What a reader sees: tags out, entities decoded, whitespace folded."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def badges(page: str) -> list[tuple[str, str, str]]:
    return [(key, html.unescape(words), html.unescape(held or "")) for key, words, held in BADGE.findall(page)]


def assert_vocabulary(page: str, where: str) -> list[tuple[str, str, str]]:
    found = badges(page)
    assert found, f"{where}: no verdict shown"
    for key, words, held in found:
        assert key in vocabulary.BY_KEY and LABEL.match(words), (where, key, words)
        assert words.split(" ")[0] == vocabulary.BY_KEY[key].word.split(" ")[0], (where, key, words)
        if held:  # a p beside a verdict shows the threshold it was held to
            assert HELD.search(held), (where, held)
    retired = RETIRED.findall(text_of(page))
    assert not retired, f"{where}: retired verdict words {retired}"
    return found


# ---------------------------------------------------------------- fixtures: a real entry, then its pages


@pytest.fixture(scope="module")
def cli(tmp_path_factory):
    """`evaluate` and `check` on a real MI-Face run: their output and the run folder."""
    from reconbench.cli import app

    runner = CliRunner()
    work = tmp_path_factory.mktemp("vocab")
    key, out = make_key(work), work / "run"
    res = runner.invoke(app, ["evaluate", "--attack", "mi-face", "--set", "iterations=20", "--seed", "11", "--out",
                              str(out), "--key", str(key), "--quiet"])
    assert res.exit_code == 0, res.output
    checked = runner.invoke(app, ["check", str(out), "--no-rescore"])
    assert checked.exit_code == 0, checked.output
    return out, key, res.output, checked.output


@pytest.fixture(scope="module")
def frame(cli, tmp_path_factory):
    """The board's frame of the submitted, validated (re-scored) entry and two variants of it."""
    from reconbench.core.envelope import ExtractionResult
    from reconbench.leaderboard.build import load_reports
    from reconbench.leaderboard.frame import entries_frame

    folder, key, _, _ = cli
    work = tmp_path_factory.mktemp("vocab-board")
    submit_entry(folder, work / "submissions", "lab", key, name="Lab")
    (report,) = load_reports(work / "submissions", rescore=True, device="cpu")
    assert report.trust == "re-scored" and report.membership and report.extraction is not None
    assert report.recovery is not None and not report.recovery.recovers  # validation computed it; it does not fire
    signal = {m: (g.model_copy(update=dict(p=1e-4)) if m == "ssim" else g) for m, g in report.membership.items()}
    count = report.extraction.model_copy(update=dict(members=3, holdout=0, p=1e-6))
    assert isinstance(count, ExtractionResult)
    recovered = report.recovery.model_copy(update=dict(members=8, holdout=0, p=1e-3))
    variants = [report,
                dataclasses.replace(report, entry_id=report.entry_id + "-signal", path=report.path.with_name("x-signal"),
                                    membership=signal),
                dataclasses.replace(report, entry_id=report.entry_id + "-count", path=report.path.with_name("x-count"),
                                    extraction=count),
                dataclasses.replace(report, entry_id=report.entry_id + "-recovers", path=report.path.with_name("x-recovers"),
                                    recovery=recovered)]
    return entries_frame(variants), report


def test_the_command_line_says_the_verdict_in_the_tier_words_with_the_count(cli):
    folder, _, evaluated, checked = cli
    from reconbench.image.results import parse_result_json

    membership = parse_result_json(folder / "result.json").payload.membership
    expected = vocabulary.entry_verdict(dict(membership.metrics), membership.extraction)
    for output in (evaluated, checked):
        line = " ".join(output.split()).split("verdict: ", 1)[1]
        words = line.split(" (", 1)[0]
        assert LABEL.match(words) and words == expected.label
        assert f"extraction count: {expected.count}" in line and f"mean gap: {expected.signal_p}" in line
        assert HELD.search(expected.signal_p) and HELD.search(expected.count)
        assert not RETIRED.findall(output), RETIRED.findall(output)


def test_a_board_shows_the_tiers_and_no_other_verdict_words(frame, cli):
    from reconbench.image.board import cell_tables
    from reconbench.leaderboard.frame import listed, sort_board
    from reconbench.leaderboard.pages import Pages

    f, report = frame
    rows = sort_board(listed(f))
    pages = Pages()
    pages.page("leaderboards/digits.md", "cell_boards.md.j2", groups=cell_tables(rows), board_prefix="board-digits",
               show_track=False, show_attack=True)
    page = pages.markdown["leaderboards/digits.md"] + "".join(pages.fragments.values())
    found = assert_vocabulary(page, "board")
    words = [w for _, w, _ in found]
    # the real entry reads as the command line read it; its variants as the board's rule decides them
    _, _, evaluated, _ = cli
    assert " ".join(evaluated.split()).split("verdict: ", 1)[1].startswith(words[-1] + " (")
    assert words == ["extracts 3", "recovers 8", "membership signal", "no evidence"]  # and in the order of evidence
    held = {w: h for _, w, h in found}
    assert held["recovers 8"] == "p 0.001 < 0.01"
    assert held["extracts 3"] == "p 1.0e-06 < 0.01" and re.fullmatch(r"SSIM p 0\.0001 < 0\.0025 = 0\.01 / 4 metrics",
                                                                    held["membership signal"])


def test_the_twin_page_shows_the_tiers_and_no_other_verdict_words():
    from reconbench.core.tracks import all_tracks
    from reconbench.image.results import parse_result_json
    from reconbench.leaderboard.pages import Pages
    from reconbench.leaderboard.sealed import twin_pages

    root = ROOT / "submissions" / "sealed-examples"
    reports = [SimpleNamespace(team="sealed-examples", trust="re-scored", result=parse_result_json(p.parent / "result.json"),
                               sealed=json.loads(p.read_text())) for p in sorted(root.glob("*/sealed.json"))]
    # The examples' season (2026-s1) is burned: its twin pages give no verdict at all (issue 43). The same draws
    # under a season that still seals give every row its verdict, in the tier words.
    burned = [t for t in twin_pages(all_tracks(), reports, {}) if t["sealed"]["rows"]]  # the twins the examples cover
    sealing = [t.model_copy(update={"seal": t.seal.model_copy(update={"season": "test-season"})}) if t.seal else t
               for t in all_tracks()]
    twins = [t for t in twin_pages(sealing, reports, {}) if t["sealed"]["rows"]]
    assert len(twins) >= 3 and len(burned) == len(twins)
    for twin in burned:
        pages = Pages()
        pages.page(twin["path"], "sealed_group.md.j2", sealed=twin["sealed"], draws=twin["draws"])
        page = pages.markdown[twin["path"]]
        assert badges(page) == [] and not RETIRED.findall(text_of(page)), twin["path"]  # practice: no verdict
    for twin in twins:
        pages = Pages()
        pages.page(twin["path"], "sealed_group.md.j2", sealed=twin["sealed"], draws=twin["draws"])
        page = pages.markdown[twin["path"]]
        found = assert_vocabulary(page, twin["path"])
        assert len(found) == len(twin["sealed"]["rows"])  # every attack's row has its verdict
        assert all("(Fisher over the draws)" in h or h.startswith("count, membership relabelling p") for _, _, h in found)


def test_findings_and_defenses_show_the_tiers_and_no_other_verdict_words(frame, tmp_path):
    from reconbench.leaderboard import defenses, findings
    from reconbench.leaderboard.pages import Pages

    f, _ = frame
    # the same entries as reproduced entries of the undefended Fashion-MNIST track and its DP twin (the pages
    # read only those): the verdicts are recomputed from the same gaps and counts
    # (each variant as its own attack: the defenses view takes an attack's latest entry per track)
    fashion = f.assign(track="fashion-n100", trust="reproduced", dataset="fashion-mnist",
                       attack=["deepdream" if e.endswith("-count") else "deepinversion" if e.endswith("-signal") else
                               "kedmi" if e.endswith("-recovers") else "mi-face" for e in f["entry_id"]])
    dp = fashion.assign(track="fashion-n100-dp", page=fashion["page"] + "-dp", date=fashion["date"])
    both = pd.concat([fashion, dp], ignore_index=True)
    bundle = SimpleNamespace(frame=both, files={}, fragments={})
    findings.add_to_bundle(bundle, ROOT / "docs" / "grids" / "findings.toml")
    page = bundle.files[findings.PAGE] + "".join(bundle.fragments.values())
    found = assert_vocabulary(page, "findings")
    assert sorted(w for _, w, _ in found) == sorted(["extracts 3", "recovers 8", "membership signal", "no evidence"] * 2)

    attacks = defenses.attack_rows(both)
    pages = Pages()
    pages.page(defenses.PAGE, "defenses.md.j2", utility=defenses.utility_rows(mia=lambda track: 0.5), attacks=attacks,
               defenses=defenses.DEFENSES, undefended=defenses.UNDEFENDED, metric=defenses.GAP_METRIC,
               uncounted=defenses.uncounted(attacks))
    page = pages.markdown[defenses.PAGE] + "".join(pages.fragments.values())
    found = assert_vocabulary(page, "defenses")
    # listed: the two attacks with evidence undefended, each beside its entry on the DP track
    assert [a["attack"] for a in attacks] == ["deepdream", "deepinversion", "kedmi"]
    assert sorted(w for _, w, _ in found) == ["extracts 3", "extracts 3", "membership signal", "membership signal",
                                              "recovers 8", "recovers 8"]
    assert "not on the board yet" not in page  # the count is on the board: the view shows it


def test_the_tier_words_live_in_one_place_and_recovers_has_its_statistic():
    """core/verdict.py owns the words; "recovers" is decided by the recovery count (core/recovery.py): an entry
    whose count fires is called so (below "extracts", above "membership signal"), one whose count does not is not."""
    from reconbench.core.recovery import RecoveryGroup, RecoveryResult, recovery_count
    import numpy as np

    assert vocabulary.WORDS == ("extracts", "recovers", "membership signal", "no evidence")
    assert [t.rank for t in vocabulary.TIERS] == [3, 2, 1, 0]
    assert vocabulary.tier(True, SimpleNamespace(extracts=False)) is vocabulary.SIGNAL
    assert vocabulary.tier(False, SimpleNamespace(extracts=False), None) is vocabulary.NO_EVIDENCE
    assert vocabulary.tier(None) is None
    members = np.r_[np.ones(30, bool), np.zeros(30, bool)]
    for recovered, expected in ((9, vocabulary.RECOVERS), (2, vocabulary.SIGNAL)):
        near = np.r_[np.full(recovered, 0.3), np.full(60 - recovered, 4.0)]
        r = RecoveryResult.of(recovery_count([RecoveryGroup("0", near, np.ones(60), members)]))
        t = vocabulary.tier(True, SimpleNamespace(extracts=False), r)
        assert t is expected
        shown = vocabulary.label(t, vocabulary.count_of(t, None, r))
        assert LABEL.match(shown) and (shown == f"recovers {recovered}" or t is vocabulary.SIGNAL)
    assert vocabulary.entry_verdict({}, None, r).recovered == vocabulary.recovery_text(r)
