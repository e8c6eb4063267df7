"""A display name or slug must be visible whole (issue 36, item 6): no invisible or default-ignorable
code point, UTS #39's Allowed identifier characters only, no mixed scripts; the tables come from the
Unicode data ICU ships (scripts/make_identity_tables.py), and the board prints a name escaped."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from reconbench.submissions.identity import confusable, profile_problems, shown
from submission_helpers import fresh_board, status
from test_submissions_trust import _team, _team_report

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def board(tmp_path_factory, tmp_path):
    return fresh_board(tmp_path_factory, tmp_path)


@pytest.mark.parametrize("name, expected", [
    ("Gamma\u3164lab", "U+3164"),  # the Hangul filler: a letter (Lo) that shows as blank space
    ("Gamma\u200blab", "U+200B"),  # a zero-width space
    ("ReconBench \u0185aselines", "U+0185 LATIN SMALL LETTER TONE SIX"),  # ƅ for b, outside TR39's table for b
    ("ReconBench\u00a0baselines", "U+00A0"),
    ("\u0391lpha lab", "mixes scripts (Grek, Latn)"),  # a Greek capital alpha among Latin letters
    ("Gamma \u13a1ecurity", "U+13A1 CHEROKEE LETTER E"),  # Cherokee is a Limited_Use script
])
def test_a_name_a_reader_cannot_see_whole_is_refused(name, expected):
    problems = profile_problems(name)
    assert problems and expected in " ".join(problems), problems


@pytest.mark.parametrize("name", ["ReconBench baselines", "Müller & Co.", "Équipe café", "東京チーム", "Группа 7",
                                  "Σίγμα", "reconbench-baselines", "lab (2024)", "서울 AI 연구실"])
def test_ordinary_names_in_any_one_script_pass(name):
    assert profile_problems(name) == []


def test_the_two_forged_display_names_fail_the_identity_check_on_the_board(board):
    """The issue's cases, as team.toml files: each newcomer fails the identity check with the code point named;
    an honest name beside them passes."""
    for slug, name, expected in (("gamma", "ReconBench\u3164baselines", "U+3164"),
                                 ("delta", "ReconBench \u0185aselines", "U+0185")):
        _team(board, slug, name)
        report = _team_report(board, slug)
        check = next(c for c in report.checks if c.status == "fail")
        assert report.trust == "failed" and check.name == "identity" and expected in check.message, check.message
    _team(board, "epsilon", "Epsilon lab")
    assert status(_team_report(board, "epsilon"), "identity") == "pass"


def test_the_board_prints_names_escaped():
    """frame.py and the text board show team names through `shown`: what a reader could not see is \\uXXXX."""
    from reconbench.leaderboard.frame import entries_frame

    class Report:
        team, entry_id, path, result, trust, checks = "gamma", "e", Path("x"), None, "failed", []
        verified: list = []

        class team_info:
            name = "Gamma\u3164lab \u0185"

    assert shown("Gamma\u3164lab") == "Gamma\\u3164lab" and shown("Müller & Co.") == "Müller & Co."
    frame = entries_frame([Report()])
    assert list(frame["team_name"]) == ["Gamma\\u3164lab \\u0185"]


def test_look_alikes_still_clash_through_the_complete_table():
    assert confusable("ReconBench", "R\u0435conBench") and confusable("alpha", "a1pha")


def test_the_tables_are_generated_from_icu_s_unicode_data():
    """The shipped confusables.json and identifier_profile.json are exactly what the script makes."""
    if importlib.util.find_spec("icu") is None:
        pytest.skip("PyICU not installed (pip install pyicu-wheels==2.15.2): the tables cannot be regenerated here")
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "make_identity_tables.py"), "--check"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "up to date", out.stdout + out.stderr
