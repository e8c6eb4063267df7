"""Forged sealed results (issue 43, item 5): a sealed result's membership gap and extraction count are the
board's, computed with the key; a result names its draw by the model's and pool's hashes, and a run of
one draw relabelled as another is refused.

Each forgery starts from a committed sealed example (fashion-n100-sealed-d0, made with the board's key:
its reconstructions are real), copied under a team of the test's own whose key is a throwaway one, and
re-signed by that key as a hostile contributor would. No sealed key is needed: these are refused before it.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from reconbench.core.signing import generate_key, load_private_key, sign_payload
from reconbench.core.tracks import get_track
from reconbench.submissions import validate_board
from reconbench.submissions.team import Team, write_team

EXAMPLES = Path(__file__).parents[1] / "submissions" / "sealed-examples"
ENTRY = "fashion-n100-sealed-d0-mi-face-20261204233318-3ec54ed5"


@pytest.fixture
def forged(tmp_path):
    """(root, entry folder, resign(mutate)): the example under team 'forger', signed by the forger's key."""
    key, public = generate_key(tmp_path / "keys" / "forger.pem")
    root = tmp_path / "submissions"
    write_team(root / "forger", Team(slug="forger", name="Forger", keys=[public]))
    entry = root / "forger" / ENTRY
    shutil.copytree(EXAMPLES / ENTRY, entry)
    (entry / "sealed.json").unlink()  # CI's record is for the example's payload, signed under its team

    def resign(mutate) -> None:
        from reconbench.image.results import Payload

        data = json.loads((entry / "result.json").read_text())
        mutate(data["payload"])
        # in the form the validator reads it (defaults filled in), as evaluate would have signed it
        data["payload"] = Payload.model_validate(data["payload"]).model_dump(mode="json")
        data["signature"] = sign_payload(data["payload"], load_private_key(key))
        (entry / "result.json").write_text(json.dumps(data, indent=2))

    resign(lambda p: None)
    return root, entry, resign


def _report(root: Path):
    (report,) = [r for r in validate_board(None, root, rescore=False).entries if r.is_entry]
    return report


def _check(report, name: str):
    return next(c for c in report.checks if c.name == name)


MEMBERSHIP = {  # what the hostile tester of issue 43 forged: SSIM gap 0.3, 40 of 100 members extracted
    "holdout_sha256": "0" * 64, "test": "membership permutation", "permutations": 2000, "seed": 0,
    "metrics": {"ssim": {"status": "computed", "vs_target": 0.6, "vs_holdout": 0.3, "gap": 0.3, "low": 0.25,
                         "high": 0.35, "p": 0.0005}},
    "extraction": {"members": 40, "n_members": 100, "holdout": 0, "n_holdout": 100, "threshold": 0.0005215692281814687,
                   "pair_rate": 2.0615189883013512e-07, "expected_members": 0.002, "expected_holdout": 0.002,
                   "p": 1e-90, "p_relabel": 1e-12, "extracted": {}},
}


def test_the_unforged_copy_passes_so_the_refusals_below_are_the_forgeries(forged):
    root, _, _ = forged
    report = _report(root)
    assert report.trust != "failed", [c.to_dict() for c in report.checks if c.status == "fail"]
    assert _check(report, "sealed").status == "pass"


def test_a_sealed_result_carrying_a_forged_membership_block_is_refused_and_never_read(forged, monkeypatch):
    root, entry, resign = forged
    resign(lambda p: p.__setitem__("membership", MEMBERSHIP))
    report = _report(root)
    check = _check(report, "sealed")
    assert report.trust == "failed" and check.status == "fail", [c.to_dict() for c in report.checks if c.status == "fail"]
    assert "carries a `membership` block" in check.message and "computed by the board with the key" in check.message
    assert report.sealed is None and not report.membership
    # the findings page and the held rule's reference do not read it either (they read files, not reports)
    from reconbench.leaderboard.findings import _gaps_in_result
    from reconbench.submissions.leakage import board_reproduced_gaps

    assert _gaps_in_result(entry) == {}
    # the reference reads entries whose reproduction record is accepted: grant this one, as if reproduced
    (entry / "reproduction.json").write_text("{}")
    monkeypatch.setattr("reconbench.submissions.checks.reproduction.record_accepted", lambda *a: True)
    assert board_reproduced_gaps(root, set()) == {}


def _as_draw(draw: int, *, model: bool = True, entry_id: bool = False):
    """Relabel a draw-0 payload as draw `draw`: the track, the sealed marker, the command's --track, and
    (model) the target model's hash; (entry_id) the entry id too."""
    track = get_track(f"fashion-n100-sealed-d{draw}")

    def mutate(p: dict) -> None:
        old = p["track"]
        p["track"] = track.id
        p["sealed"].update(draw=draw, commitment=track.seal.commitment)
        p["provenance"]["command"] = p["provenance"]["command"].replace(f"--track {old}", f"--track {track.id}")
        if model:
            p["target"]["model_sha256"] = track.target_model_sha256
        if entry_id:
            p["entry_id"] = p["entry_id"].replace(old, track.id)
    return mutate


def test_a_draw_0_run_relabelled_as_draw_2_is_refused(forged):
    root, _, resign = forged
    d0, d2 = get_track("fashion-n100-sealed-d0"), get_track("fashion-n100-sealed-d2")
    assert d0.seal.pool_sha256 == d2.seal.pool_sha256  # one public pool: only the model and the commitment differ
    assert d0.target_model_sha256 != d2.target_model_sha256
    # the label and the marker moved, the model's hash still names draw 0's model: refused by its hash
    resign(_as_draw(2, model=False))
    report = _report(root)
    assert report.trust == "failed" and _check(report, "registry").status == "fail"
    assert d2.target_model_sha256 in _check(report, "registry").message
    # the model's hash moved too, the entry id evaluate wrote still names draw 0: refused as relabelled
    resign(_as_draw(2))
    report = _report(root)
    check = _check(report, "sealed")
    assert report.trust == "failed" and check.status == "fail"
    assert "relabelled" in check.message and "fashion-n100-sealed-d2-" in check.message
    # a marker that names another draw than the track: refused by the marker
    resign(lambda p: p["sealed"].update(draw=0, commitment=d0.seal.commitment))
    report = _report(root)
    assert report.trust == "failed" and "sealed marker does not name" in _check(report, "sealed").message


def test_the_relabel_check_names_each_mismatch_by_hash():
    """relabel_problem on its own: each of the draw's names (model hash, pool hash, entry id) is checked."""
    from types import SimpleNamespace

    from reconbench.submissions.checks.sealed import relabel_problem

    d2 = get_track("fashion-n100-sealed-d2")

    def payload(**over):
        base = dict(target=SimpleNamespace(model_sha256=d2.target_model_sha256, target_set_sha256=d2.seal.pool_sha256),
                    entry_id=f"{d2.id}-mi-face-20261204233318-3ec54ed5", membership=None)
        return SimpleNamespace(**(base | over))

    assert relabel_problem(payload(), d2) is None
    d0 = get_track("fashion-n100-sealed-d0")
    assert "another draw" in relabel_problem(payload(target=SimpleNamespace(
        model_sha256=d0.target_model_sha256, target_set_sha256=d2.seal.pool_sha256)), d2)
    assert "not the pool" in relabel_problem(payload(target=SimpleNamespace(
        model_sha256=d2.target_model_sha256, target_set_sha256="f" * 64)), d2)
    assert re.search(r"does not begin with .*fashion-n100-sealed-d2-", relabel_problem(
        payload(entry_id="fashion-n100-sealed-d0-mi-face-20261204233318-3ec54ed5"), d2))
    assert "membership" in relabel_problem(payload(membership=object()), d2)
