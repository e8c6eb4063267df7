"""The committed example entries (team reconbench-baselines) validate, re-scoring included, and
only public material is committed."""

from __future__ import annotations

from pathlib import Path

from reconbench.attacks import ATTACKS
from reconbench.text.attacks import TEXT_ATTACKS
from reconbench.submissions import discover_entries, load_team, validate_board

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / "submissions"


def test_committed_entries_are_rescored():
    entries = discover_entries(ROOT)
    assert len(entries) >= len(ATTACKS) + 1  # one baseline per registered image attack, at least, and text ones
    report = validate_board(None, ROOT, rescore=True)
    assert report.ok, [(r.entry_id, [c.message for c in r.checks if c.status == "fail"]) for r in report.entries]
    assert {r.trust for r in report.entries} == {"re-scored"}
    baselines = [r for r in report.entries if r.team == "reconbench-baselines"]
    names = {r.result.payload.attack.name for r in baselines}
    # every image attack; of the text attacks, those whose default-budget run was committed (complete so far)
    assert names - set(TEXT_ATTACKS) == set(ATTACKS) and "complete" in names and names <= set(ATTACKS) | set(TEXT_ATTACKS)
    assert all(r.readme and r.result.payload.attack.paper in r.readme for r in baselines)


def test_only_public_keys_are_committed():
    team = load_team(ROOT / "reconbench-baselines")
    assert team.name == "ReconBench baselines" and len(team.keys) >= 1
    for path in ROOT.rglob("*"):
        assert path.suffix not in (".pem", ".key") and not path.name.endswith(".pub")
        if path.is_file() and path.suffix in (".toml", ".json", ".md"):
            assert "PRIVATE KEY" not in path.read_text()
