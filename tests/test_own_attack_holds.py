"""Issue 43, items 5 and 6: held is held everywhere, and an own attack's leakage on an open track is decided
on the sealed twin (submissions/leakage.py).

The rule's inputs are built here as validation leaves them (reports with their re-scored gaps and count); the
sealed run records are real ones, signed by a throwaway season's record signer that a throwaway registry pins
(RECONBENCH_REGISTRY), so the signature check is the real one. tests/test_own_attack_e2e.py runs the hostile
attack files of the issue end to end."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from reconbench.core.report import GapResult
from reconbench.submissions.leakage import hold_extraordinary, own_attack, sealed_confirmations

SOURCE = "ab" * 32
OPEN = "fashion-n100"
CELL = "static/black-box/none"


def gap(value: float, low: float, p: float) -> GapResult:
    return GapResult(status="computed", vs_target=0.5 + value, vs_holdout=0.5, gap=value, low=low, high=value + 0.02, p=p)


NULL = {"ssim": gap(0.001, -0.01, 0.4), "mse": gap(0.0, -0.001, 0.5)}
BIG = {"ssim": gap(0.30, 0.25, 1e-4), "mse": gap(0.01, 0.008, 1e-4)}


def count(members: int, extracts: bool):
    return SimpleNamespace(members=members, n_members=100, holdout=0, extracts=extracts)


def attack(own: bool):
    if own:
        return SimpleNamespace(name="carried", code="attack.py:Carried", source_sha256=SOURCE)
    return SimpleNamespace(name="mi-face", code="reconbench.image.attacks.mi_face:MIFace", source_sha256=None)


@dataclass
class Report:
    entry_id: str
    trust: str
    membership: dict
    own: bool = True
    team: str = "alpha"
    track: str = OPEN
    extraction: object = None
    sealed: dict | None = None
    held_reason: str | None = None
    is_entry: bool = True
    mirrored: dict = field(default_factory=dict)
    result: object = None

    def __post_init__(self):
        marker = SimpleNamespace(group="g") if self.sealed is not None else None
        self.result = SimpleNamespace(payload=SimpleNamespace(track=self.track, scenario=CELL, attack=attack(self.own),
                                                              sealed=marker))


def test_own_attack_is_what_the_registry_does_not_run_as_the_toolkit_s_code():
    assert own_attack(SimpleNamespace(attack=attack(True)))
    assert not own_attack(SimpleNamespace(attack=attack(False)))
    unlisted = SimpleNamespace(name="mi-face-2", code="reconbench.x:Y", source_sha256=None)
    assert own_attack(SimpleNamespace(attack=unlisted))  # a name the catalogue does not list
    assert own_attack(SimpleNamespace(attack=SimpleNamespace(name="mi-face", code="a.py:MIFace", source_sha256=None)))


def test_an_own_attack_s_extraction_on_an_open_track_is_held_reproduced_or_not(tmp_path):
    rescored = Report("copy", "re-scored", dict(NULL), extraction=count(100, True))
    reproduced = Report("copy-reproduced", "reproduced", dict(NULL), extraction=count(100, True), team="beta")
    quiet = Report("no-extraction", "reproduced", dict(NULL), extraction=count(0, False), team="gamma")
    hold_extraordinary([rescored, reproduced, quiet], tmp_path)
    for r in (rescored, reproduced):
        assert r.trust == "held", r
        assert "own attack on an open track" in r.held_reason and "extracts 100 members" in r.held_reason
        assert "no sealed run of this code" in r.held_reason and "does not lift this" in r.held_reason
    assert quiet.trust == "reproduced"  # nothing claimed: nothing to hold


def test_a_registered_attack_keeps_its_open_track_badge(tmp_path):
    reg = Report("registered", "reproduced", dict(BIG), own=False, extraction=count(3, True))
    reg_rescored = Report("registered-rescored", "re-scored", dict(NULL), own=False, extraction=count(3, True), team="beta")
    hold_extraordinary([reg, reg_rescored], tmp_path)
    assert reg.trust == "reproduced" and reg_rescored.trust == "re-scored"


def test_an_own_attack_s_extraordinary_gap_is_held_even_reproduced(tmp_path):
    r = Report("noised", "reproduced", dict(BIG))
    hold_extraordinary([r], tmp_path)
    assert r.trust == "held" and "extraordinary leakage:" in r.held_reason and "ssim gap +0.3" in r.held_reason


def test_another_team_s_reproduced_own_attack_raises_no_reference(tmp_path):
    """Issue 43: a second team's noised copy was re-scored #2 once the first team's copy was reproduced."""
    first = Report("first", "reproduced", dict(BIG), team="alpha")
    second = Report("second", "re-scored", dict(BIG), team="beta", own=True)
    registered_second = Report("second-registered", "re-scored", dict(BIG), team="gamma", own=False)
    hold_extraordinary([first, second, registered_second], tmp_path)
    assert first.trust == "held" and second.trust == "held"
    assert registered_second.trust == "held"  # even a registered entry: an own attack lifts nobody's reference
    # a registered attack's reproduced entry still lifts other teams' (the rule before issue 43)
    lifted = Report("after", "re-scored", dict(BIG), team="beta", own=False)
    hold_extraordinary([Report("reg", "reproduced", dict(BIG), team="alpha", own=False), lifted], tmp_path)
    assert lifted.trust == "re-scored"


def test_a_sealed_draw_is_held_on_the_board_s_record_never_its_own_block(tmp_path):
    record = {"membership": {n: g.model_dump(mode="json") for n, g in BIG.items()}}
    held = Report("draw", "re-scored", {}, own=False, track="fashion-n100-sealed-d0", sealed=record)
    forged = Report("forged", "re-scored", dict(BIG), own=False, track="fashion-n100-sealed-d1", team="beta",
                    sealed={"membership": {n: g.model_dump(mode="json") for n, g in NULL.items()}})
    hold_extraordinary([held, forged], tmp_path)
    assert held.trust == "held" and "'fashion-n100-sealed-d0'" in held.held_reason
    assert forged.trust == "re-scored"  # its own gap block is not what the rule reads


# ---------------------------------------------------------------- sealed run records: what lifts the hold


@pytest.fixture
def season(tmp_path, monkeypatch):
    """A throwaway non-burned season: the open track and five draws of its sealed twin, their record signer the
    public half of a throwaway key (core/seal.record_signer), in a registry RECONBENCH_REGISTRY points at."""
    from reconbench.core.seal import new_key, record_signer_public
    from reconbench.core.tracks import SEALED_FILE, get_track, registry_path

    key = bytes.fromhex(new_key())
    shipped = [t for t in json.loads(registry_path().with_name(SEALED_FILE).read_text())["tracks"]
               if t["seal"]["group"] == "fashion-n100-sealed"]
    rows = []
    for t in shipped:
        row = json.loads(json.dumps(t))
        row["id"] = row["id"].replace("fashion-n100-sealed", "fashion-n100-sealed-t")
        row["seal"].update(group="fashion-n100-sealed-t", season="test-season-2", record_signer=record_signer_public(key))
        rows.append(row)
    opened = get_track(OPEN).model_dump(mode="json", exclude_none=True)
    registry = tmp_path / "registry.json"
    registry.write_text(json.dumps({"schema_version": 1, "tracks": [opened, *rows]}))
    monkeypatch.setenv("RECONBENCH_REGISTRY", str(registry))
    return key, rows


def numbers_for(tier: str | None, draw: int) -> dict:
    """A draw's numbers that give `tier` across five draws (validate recomputes a record's tier from its numbers,
    submissions/sealed_run_check.py): a clear SSIM gap for a membership signal, one member extracted per draw
    among the block's candidates as well for "extracts"."""
    if tier is None:
        return {}
    out = {"membership": {"ssim": {"status": "computed", "gap": 0.1, "low": 0.05, "high": 0.15, "p": 1e-4}}}
    if tier == "extracts":
        from reconbench.core.relabel import Stratum, record

        out["extraction"] = {"members": 1, "n_members": 100, "holdout": 0, "n_holdout": 100, "expected_members": 2e-5,
                             "expected_holdout": 2e-5, "threshold": 5.2e-4, "p": 2e-5, "extracts": True,
                             "relabel": record([Stratum(f"{draw}/0", 486, 10, 1, 1)])}
    return out


def write_run(root: Path, key: bytes, rows: list, tier: str | None, *, sign=True, drop=0, season="test-season-2",
              open_twin=OPEN, model=None, team="alpha", name="run1") -> Path:
    from reconbench.core.sealed_records import sign_record
    from reconbench.core.sealed_runs import record_path

    draws = [dict(track=r["id"], model_sha256=model or r["target_model_sha256"], status="scored", **numbers_for(tier, d))
             for d, r in enumerate(rows[drop:])]
    run = {"schema": "reconbench-sealed-run/1", "season": season, "twin": "fashion-n100-sealed-t", "open_twin": open_twin,
           "team": team, "run": name, "attack": {"name": "carried", "source_sha256": SOURCE, "scenario": CELL},
           "ran_at": "2026-12-07T00:00:00Z", "draws": draws, "tier": tier,
           "extracts": len(draws) if tier == "extracts" else None}
    path = record_path(root, season, team, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(sign_record(run, key) if sign else run))
    return path


def test_a_signed_sealed_run_of_the_same_code_lifts_the_hold_up_to_its_tier(tmp_path, season):
    key, rows = season
    root = tmp_path / "submissions"
    write_run(root, key, rows, "membership signal")
    assert sealed_confirmations(root) == {(SOURCE, OPEN): "membership signal"}
    signal_only = Report("gap", "reproduced", dict(BIG))
    extraction = Report("extraction", "reproduced", dict(NULL), extraction=count(100, True), team="beta")
    hold_extraordinary([signal_only, extraction], root)
    assert signal_only.trust == "reproduced"  # the sealed twin agreed: a membership signal
    assert extraction.trust == "held" and 'earned "membership signal", less than "extracts"' in extraction.held_reason
    write_run(root, key, rows, "extracts")  # the same run's record, now of an extraction
    again = Report("extraction", "re-scored", dict(NULL), extraction=count(100, True), team="beta")
    hold_extraordinary([again], root)
    assert again.trust == "re-scored"
    other_source = Report("other", "re-scored", dict(NULL), extraction=count(5, True))
    other_source.result.payload.attack.source_sha256 = "cd" * 32
    hold_extraordinary([other_source], root)
    assert other_source.trust == "held"  # another code: the sealed run said nothing about it


@pytest.mark.parametrize("forgery", ["unsigned", "another key", "a draw missing", "another open track",
                                     "another model", "a burned season", "changed after signing"])
def test_a_forged_sealed_run_record_confirms_nothing(tmp_path, season, forgery):
    from reconbench.core.seal import new_key

    key, rows = season
    root = tmp_path / "submissions"
    kw = {"unsigned": dict(sign=False), "another key": dict(), "a draw missing": dict(drop=1),
          "another open track": dict(open_twin="fashion-n500"), "another model": dict(model="0" * 64),
          "a burned season": dict(season="2026-s1"), "changed after signing": dict()}[forgery]
    signer = bytes.fromhex(new_key()) if forgery == "another key" else key
    path = write_run(root, signer, rows, "extracts", **kw)
    if forgery == "changed after signing":
        data = json.loads(path.read_text())
        data["tier"] = "extracts"
        data["draws"][0]["status"] = "scored"
        data["team"] = "mallory"
        path.write_text(json.dumps(data))
    assert sealed_confirmations(root) == {}
    r = Report("copy", "re-scored", dict(NULL), extraction=count(100, True))
    hold_extraordinary([r], root)
    assert r.trust == "held"


def test_a_hostile_run_file_that_is_not_json_or_not_a_run_is_skipped(tmp_path, season):
    from reconbench.core.sealed_runs import record_path

    root = tmp_path / "submissions"
    for i, text in enumerate(["{not json", json.dumps({"schema": "reconbench-sealed-run/1"}), json.dumps([1, 2])]):
        path = record_path(root, "test-season-2", "mallory", f"r{i}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert sealed_confirmations(root) == {}
