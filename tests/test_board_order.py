"""Boards ordered by evidence (issue 45, item 4): a cell's default order is the verdict tier (extracts >
recovers > membership signal > no evidence, then entries nothing was tested on), then the lower end of the
lead gap's 95 % interval, highest first; the likeness columns stay sortable; the page says which order it
uses and why; the reference baselines stay under every table; the verdict column comes right after the
attack. Each row's tier is computed by the board's own code (leaderboard/leakage.fill_row) from gaps and
counts given here, the inputs validation would recompute."""

from __future__ import annotations

import html
import re
from types import SimpleNamespace

import numpy as np
import pandas as pd

from reconbench.core.envelope import ExtractionResult
from reconbench.core.report import GapResult
from reconbench.leaderboard import leakage
from reconbench.leaderboard.frame import COLUMNS, TRUST_RANK, sort_board

CELL = "static/white-box/none"


def gap(value: float, low: float, p: float) -> GapResult:
    return GapResult(status="computed", vs_target=0.5 + value, vs_holdout=0.5, gap=value, low=low, high=value + 0.02, p=p)


def count(members: int, p: float) -> ExtractionResult:
    return ExtractionResult(members=members, n_members=100, holdout=0, n_holdout=100, threshold=1e-3, pair_rate=1e-6,
                            expected_members=1e-4, expected_holdout=1e-4, p=p, p_relabel=0.5)


def entry(name: str, ssim: float, gaps: dict | None, extraction=None, trust="re-scored", date="2026-12-01") -> dict:
    row = {c: np.nan for c in COLUMNS}
    row.update(team="t", team_name=f"Team {name}", entry_id=name, entry_dir=f"/x/{name}", page=f"entries/t/{name}/index.md",
               trust=trust, trust_rank=TRUST_RANK[trust], track="digits", dataset="digits", scenario=CELL,
               training="static", access="white-box", data="none", attack="mi-face", attack_label="mi-face",
               registered=True, date=pd.Timestamp(date, tz="UTC"), ssim=ssim, ssim_claimed=ssim)
    report = SimpleNamespace(membership=gaps or {}, extraction=extraction)
    leakage.fill_row(row, report, SimpleNamespace(membership=None), lambda _: "0" * 64)
    return row


def board_rows() -> pd.DataFrame:
    no_signal = lambda low: {"ssim": gap(0.01, low, 0.3), "mse": gap(0.001, low / 10, 0.4)}  # noqa: E731
    rows = [
        entry("typical", 0.90, no_signal(-0.01)),  # looks most like the targets, shows nothing
        entry("signal", 0.30, {"ssim": gap(0.02, 0.001, 1e-4), "mse": gap(0.001, 0.0, 0.4)}),
        entry("extracts", 0.10, no_signal(-0.05), count(2, 1e-6)),  # worst likeness, verbatim members
        entry("tighter", 0.50, no_signal(0.0)),  # no evidence, but its interval sits higher than "typical"'s
        entry("untested", 0.95, None),  # re-scored without a gap (nothing to test): after every tier
        entry("held", 0.99, no_signal(0.01), count(5, 1e-9), trust="held"),  # never ranked, whatever its tier
    ]
    return leakage.typed(pd.DataFrame(rows, columns=COLUMNS))


def test_a_cell_is_ordered_by_tier_then_the_lower_bound_not_by_likeness():
    board = sort_board(board_rows())
    assert board["entry_id"].tolist() == ["extracts", "signal", "tighter", "typical", "untested", "held"]
    assert board["verdict"].tolist()[:4] == ["extracts 2", "membership signal", "no evidence", "no evidence"]
    assert board["position"].tolist()[:5] == [1, 2, 3, 4, 5] and pd.isna(board["position"].iloc[5])
    # the likeness order is still there for the matrix and the badges: best SSIM first
    assert sort_board(board_rows(), order="metric")["entry_id"].tolist()[:5] == ["untested", "typical", "tighter",
                                                                                  "signal", "extracts"]


def test_the_board_says_its_order_keeps_likeness_sortable_and_the_references():
    from reconbench.image.board import cell_tables
    from reconbench.leaderboard.pages import Pages

    reference = {"label": "aux images as they are", "short": "aux images", "cell": "static/*/*", "track": "digits",
                 "metrics": {"ssim": {"value": 0.97, "coverage": None}}, "membership": {}}
    tables = cell_tables(sort_board(board_rows()), [reference])
    assert tables[0]["lead_gap"] == "ssim"
    pages = Pages()
    pages.page("leaderboards/digits.md", "cell_boards.md.j2", groups=tables, board_prefix="board-digits",
               show_track=False, show_attack=True)
    page = pages.markdown["leaderboards/digits.md"] + "".join(pages.fragments.values())
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", "", page)).split())
    assert "Order: by evidence, not by likeness" in text
    assert "extracts > recovers > membership signal > no evidence" in text and "the reference baselines" in text
    assert "likeness to the targets is no evidence" in text
    assert "5 ranked by evidence: verdict tier, then the SSIM gap's lower bound, then SSIM" in text
    heads = re.findall(r"<th([^>]*)>([^<]+)", page)
    names = [h.strip() for _, h in heads]
    assert names.index("Verdict") == names.index("Attack") + 1 < names.index("SSIM")  # in view on a phone
    assert 'data-sort="number"' in heads[names.index("SSIM")][0]  # likeness still sorts on a click
    # the rendered order is the evidence order; the reference baseline stays under the table
    body = page[page.index("<tbody>"):page.index("</tbody>")]
    assert [m for m in re.findall(r'title="(\w+)">Team', body)] == ["extracts", "signal", "tighter", "typical", "untested"]
    assert page.index("</tbody>") < page.index("rb-references") and "aux images" in page[page.index("rb-references"):]


def test_a_hostile_row_cannot_claim_a_tier():
    """The tier comes from the gaps and the count validation recomputed (fill_row), never from a column an
    entry could set: a forged `tier` in the claimed payload has nowhere to go, and an unknown tier key a
    frame might carry ranks as untested and shows no badge."""
    row = entry("forged", 0.2, {"ssim": gap(0.0, -0.02, 0.6)})
    assert row["tier"] == "no-evidence"
    row["tier"] = "<script>alert(1)</script>"
    assert leakage.tier_rank(row) == -1 and leakage.row_tier(row) is None
    from reconbench.leaderboard.pages import Pages

    env = Pages().env
    shown = env.from_string('{% from "_verdict.html.j2" import tier_badge %}{{ tier_badge(t, w, h) }}').render(
        t=row["tier"], w="<b>extracts 99</b>", h="p 0 < 1")
    assert shown == "–"


def test_the_text_board_is_ordered_by_evidence_too():
    from reconbench.text.board import TEXT_COLUMNS, sort_text_board

    def text_entry(name, bleu, gaps, extraction=None):
        row = {c: np.nan for c in TEXT_COLUMNS}
        row.update(team="t", entry_id=name, page=name, trust="re-scored", trust_rank=TRUST_RANK["re-scored"],
                   track="t", scenario=CELL, date=pd.Timestamp("2026-12-01", tz="UTC"), bleu=bleu)
        leakage.fill_row(row, SimpleNamespace(membership=gaps, extraction=extraction), SimpleNamespace(membership=None),
                         lambda _: None)
        return row

    rows = leakage.typed(pd.DataFrame([text_entry("likeness", 0.9, {"bleu": gap(0.0, -0.1, 0.5)}),
                                       text_entry("signal", 0.2, {"bleu": gap(0.1, 0.05, 1e-4)})], columns=TEXT_COLUMNS))
    assert sort_text_board(rows)["entry_id"].tolist() == ["signal", "likeness"]
