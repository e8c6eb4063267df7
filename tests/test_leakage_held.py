"""Extraordinary leakage waits for reproduction (issue 21, item 6): targets transformed in each listed
way are held, an honest reproduced entry is not; a text within the edit margin of its own target
counts as a copy of it; holdout images returned by an entry fail as copies of public data."""

from __future__ import annotations

import io
from dataclasses import dataclass, field

from pathlib import Path

import numpy as np
import pytest

from reconbench.image.metrics import score
from reconbench.submissions.leakage import beyond, hold_extraordinary
from reconbench.image.track_files import load_holdout, load_splits
from reconbench.core.tracks import get_track


@pytest.fixture(scope="module")
def digits():
    track = get_track("digits")
    return track, load_splits(track), load_holdout(track)


def _membership(track, images, labels, target, holdout):
    return score(images, labels, target.images, target.labels, lpips=False, fid=False, track=track,
                 holdout_images=holdout.images, holdout_labels=holdout.labels).membership


def _blurred(x):
    f = x.astype(np.float64)
    pad = np.pad(f, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="edge")
    out = sum(pad[:, :, i:i + 8, j:j + 8] for i in range(3) for j in range(3)) / 9
    return np.rint(out).astype(np.uint8)


def _reencoded(x):
    from PIL import Image

    out = []
    for img in x[:, 0]:
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="JPEG", quality=30)
        out.append(np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("L")))
    return np.stack(out)[:, None]


TRANSFORMS = {
    "blurred": _blurred,
    "shifted": lambda x: np.roll(x, 1, axis=3),
    "flipped": lambda x: x[:, :, :, ::-1].copy(),
    "noised": lambda x: np.clip(x + np.random.default_rng(0).normal(0, 25, x.shape), 0, 255).astype(np.uint8),
    "re-encoded": _reencoded,
}


@pytest.fixture(scope="module")
def honest(digits):
    """The reference an honest reproduced entry sets: the aux images through the same scorer (no
    digits example shows a gap; the aux replay is the typical one)."""
    track, splits, holdout = digits
    return _membership(track, splits.aux_same.images, splits.aux_same.labels, splits.target, holdout)


@pytest.mark.parametrize("name", TRANSFORMS)
def test_transformed_targets_lie_beyond_an_honest_reproduced_entry(digits, honest, name):
    track, splits, holdout = digits
    images = TRANSFORMS[name](splits.target.images)
    assert images.dtype == np.uint8 and not np.array_equal(images, splits.target.images)
    membership = _membership(track, images, splits.target.labels, splits.target, holdout)
    mirrored = _mirrored(images, splits.target.labels, splits.target, holdout)
    reference = {n: g.gap for n, g in honest.items() if g.status == "computed"}
    over = {n for n, _, _ in beyond(membership, reference) + beyond(mirrored, reference)}
    assert over, (name, {n: g.format() for n, g in membership.items() if g.status == "computed"})
    assert not beyond(honest, reference)  # the honest entry itself stays below its own reference
    if name == "flipped":  # as submitted, a mirrored digit is no nearer its target: the mirror check catches it
        assert not beyond(membership, reference) and beyond(mirrored, reference)


def _mirrored(images, labels, target, holdout):
    import torch

    from reconbench.image.metrics.leakage import mirrored_gaps

    return mirrored_gaps(*(torch.from_numpy(x) if x.dtype == np.uint8 else x for x in
                           (images, labels, target.images, target.labels, holdout.images, holdout.labels)),
                         shape=tuple(images.shape[1:]))


@dataclass
class _Report:
    entry_id: str
    trust: str
    membership: dict
    track: str = "digits"
    held_reason: str | None = None
    is_entry: bool = True
    result: object = field(default=None)
    team: str = "a-team"
    scenario: str = "static/white-box/none"

    def __post_init__(self):
        track, scenario = self.track, self.scenario
        self.result = type("R", (), {"payload": type("P", (), {"track": track, "scenario": scenario})()})()


def test_the_held_rule_holds_the_extraordinary_and_spares_the_reproduced(digits, honest, tmp_path):
    track, splits, holdout = digits
    flipped = _membership(track, TRANSFORMS["blurred"](splits.target.images), splits.target.labels, splits.target, holdout)
    reports = [_Report("honest-reproduced", "reproduced", dict(honest)),
               _Report("honest-rescored", "re-scored", dict(honest)),
               _Report("flipped", "re-scored", dict(flipped)),
               _Report("flipped-reproduced", "reproduced", dict(flipped), track="other-track")]
    hold_extraordinary(reports, tmp_path)
    by_id = {r.entry_id: r for r in reports}
    assert by_id["honest-reproduced"].trust == "reproduced" and by_id["honest-rescored"].trust == "re-scored"
    assert by_id["flipped"].trust == "held"
    assert by_id["flipped"].held_reason.startswith("extraordinary leakage:") and "'digits'" in by_id["flipped"].held_reason
    assert by_id["flipped-reproduced"].trust == "reproduced"  # reproduction lifts it; another track's reference
    # once another team's reproduced entry of the cell has shown such a gap, the same gap is no longer extraordinary
    again = [_Report("flipped-reproduced", "reproduced", dict(flipped), team="b-team"),
             _Report("flipped", "re-scored", dict(flipped))]
    hold_extraordinary(again, tmp_path)
    assert again[1].trust == "re-scored"


def test_a_reproduced_entry_lifts_neither_its_own_team_nor_another_cell(digits, honest, tmp_path):
    """issue 33: a forger's reproduced exact copy must not clear the way for the same team's blurred copy,
    and a reproduced entry of another scenario of the track says nothing about this one."""
    track, splits, holdout = digits
    blurred = _membership(track, TRANSFORMS["blurred"](splits.target.images), splits.target.labels, splits.target, holdout)
    twin = _Report("twin", "reproduced", dict(blurred), team="forger")
    mine = _Report("blurred", "re-scored", dict(blurred), team="forger")
    other_cell = _Report("elsewhere", "reproduced", dict(blurred), team="b-team", scenario="static/black-box/none")
    theirs = _Report("theirs", "re-scored", dict(blurred), team="c-team")
    hold_extraordinary([twin, mine, other_cell, theirs], tmp_path)
    assert mine.trust == "held" and "other team" in mine.held_reason
    assert theirs.trust == "re-scored"  # the forger's reproduced twin is another team's reference for c-team
    lone = _Report("lone", "re-scored", dict(blurred), team="c-team")
    hold_extraordinary([other_cell, lone], tmp_path)
    assert lone.trust == "held"  # the reproduced entry sits in another cell


def test_a_record_file_that_does_not_verify_lifts_nothing(digits, honest, tmp_path):
    """An unsigned or forged reproduction.json on the board is no reference (board_reproduced_gaps)."""
    import json
    import shutil

    from reconbench.submissions.leakage import board_reproduced_gaps

    examples = Path(__file__).resolve().parents[1] / "submissions" / "reconbench-baselines"
    src = next(p for p in sorted(examples.iterdir()) if (p / "reproduction.json").is_file() and p.name.startswith("fashion-n100-deepdream"))
    entry = tmp_path / "reconbench-baselines" / src.name
    shutil.copytree(src, entry)
    assert board_reproduced_gaps(tmp_path, set()) != {}  # the genuine record verifies (a listed reproducer)
    shutil.copytree(src, tmp_path / "forger" / src.name)  # the same record under another team: not its entry
    assert len(sum(board_reproduced_gaps(tmp_path, set()).values(), [])) == 1
    record = json.loads((entry / "reproduction.json").read_text())
    record["signature"]["value"] = "A" * len(record["signature"]["value"])
    (entry / "reproduction.json").write_text(json.dumps(record))
    assert board_reproduced_gaps(tmp_path, set()) == {}


def test_a_null_gap_that_misses_0_by_chance_is_not_held(tmp_path):
    """Uniform noise on test_site_hostile's board: SSIM gap +0.010, its interval from +0.0016, p 0.010,
    one of six tested gaps (four metrics, two mirrored). Held only if it stays below 0.01 after Bonferroni."""
    from reconbench.core.report import GapResult

    def gap(value, low, p):
        return GapResult(status="computed", vs_target=0.3, vs_holdout=0.3 - value, gap=value, low=low, high=value + 0.01, p=p)

    null = {"ssim": gap(0.0102, 0.0016, 0.00999), "mse": gap(-0.0007, -0.0024, 0.81),
            "psnr": gap(-0.0136, -0.0449, 0.81), "knn_dist": gap(-5.1, -17.1, 0.79)}
    mirrored = {"ssim": gap(0.002, -0.006, 0.3), "mse": gap(-0.0001, -0.002, 0.6)}
    assert beyond(null, {}, 1) and not beyond(null, {}, 6) and not beyond(null, {})  # 0.00999 * 4 > 0.01
    strong = dict(null, ssim=gap(0.0102, 0.0016, 0.001))
    reports = [_Report("noise", "re-scored", null), _Report("strong", "re-scored", strong)]
    for r, m in zip(reports, (mirrored, mirrored)):
        r.mirrored = m
    hold_extraordinary(reports, tmp_path)
    assert reports[0].trust == "re-scored"
    assert reports[1].trust == "held" and "of 6 tested" in reports[1].held_reason  # 0.001 * 6 < 0.01


def test_holdout_images_returned_are_refused_as_copies(tmp_path_factory, tmp_path, digits):
    """The holdout is public data (scikit-learn's digits): an entry returning it copies, and fails."""
    from submission_helpers import fresh_board

    track, splits, holdout = digits
    board = fresh_board(tmp_path_factory, tmp_path)
    from safetensors.numpy import save_file

    from reconbench.core.io import sha256_file

    save_file({"images": np.ascontiguousarray(holdout.images), "labels": np.ascontiguousarray(holdout.labels)},
              str(board.recon))
    metrics = score(holdout.images, holdout.labels, splits.target.images, splits.target.labels, track=track).metrics

    def honest_claims(p):
        p["reconstructions"]["sha256"] = sha256_file(board.recon)
        p["metrics"] = {k: v.model_dump(mode="json") for k, v in metrics.items()}
        p.pop("membership", None)

    board.resign(honest_claims)
    report = board.only(rescore=True)
    copies = next(c for c in report.checks if c.name == "copies")
    assert report.trust == "failed" and copies.status == "fail" and "500 of 500" in copies.message, copies.to_dict()


WORDS = ("government", "Sydney", "police", "yesterday", "minister")


def _one_word_changed(text: str, k: int) -> str:
    words = text.split()
    i = (k * 7) % len(words)
    words[i] = WORDS[k % len(WORDS)] if words[i] != WORDS[k % len(WORDS)] else "rain"
    return " ".join(words)


def test_a_text_with_a_word_changed_is_a_copy_of_its_target_and_other_texts_are_not():
    """The edit margin (textcopy.calibrate_edit, pinned in the registry) catches a target with one word
    changed (most lee-news targets: long enough that one word is a small share of the text), never a
    different public text, and the flag holds the entry like an exact copy."""
    from reconbench.submissions.textcopy import flag, public_text_space, relative_edit, track_edit_margin
    from reconbench.text.files import load_text_splits
    from reconbench.text.tracks import get_text_track

    track = get_text_track("lee-news")
    margin = track_edit_margin(track)
    assert 0.05 < margin < 0.3
    splits = load_text_splits(track, ["target", "aux", "test"])
    targets = splits["target"].texts[:200]
    changed = [_one_word_changed(t, k) for k, t in enumerate(targets)]
    caught = [relative_edit(c, t) <= margin for c, t in zip(changed, targets)]
    assert np.mean(caught) > 0.9, np.mean(caught)
    others = [relative_edit(a, t) for a, t in zip(splits["test"].texts[:200], targets)]
    assert min(others) > margin
    space, threshold, _ = public_text_space(track.id, track.splits_sha256["target"])
    flags = flag(space, threshold, changed, targets, margin)
    # a word swapped for the same word in another case is an exact copy after normalisation
    assert (flags.close | flags.exact).sum() == sum(caught) and not flags.copy.any()


def test_a_pasted_target_with_one_word_changed_is_held_end_to_end(tmp_path):
    """Signed, scored: the forger's entry is held (not ranked above an honest run, which is held only
    until its reproduction record lifts it; tests/test_text_reproduce.py)."""
    from text_results_helpers import submitted_text_entry

    from reconbench.core.signing import generate_key
    from reconbench.submissions import validate_board

    key, _ = generate_key(tmp_path / "k.pem")
    subs = tmp_path / "submissions"
    entry = submitted_text_entry(tmp_path, subs, "forger", key,
                                 lambda targets: [_one_word_changed(t, k) for k, t in enumerate(targets)], score=False)
    report = next(r for r in validate_board(None, subs, rescore=False).entries if r.path == entry)
    copies = next(c for c in report.checks if c.name == "copies")
    assert report.trust == "held" and copies.status == "warn" and "within the edit margin" in copies.message, \
        [c.to_dict() for c in report.checks]
    assert "within the edit margin" in report.held_reason


def test_a_tampered_claimed_gap_is_caught_by_validate(tmp_path_factory, tmp_path):
    """The gap is part of the verified record: a re-signed payload claiming a larger SSIM gap (or a
    smaller p) fails re-scoring; the honest claim passes."""
    from submission_helpers import fresh_board, status

    board = fresh_board(tmp_path_factory, tmp_path)
    honest = board.only(rescore=True)
    assert status(honest, "rescore.membership.ssim") == "pass" and honest.trust == "re-scored"
    board.resign(lambda p: p["membership"]["metrics"]["ssim"].update(gap=p["membership"]["metrics"]["ssim"]["gap"] + 0.05))
    report = board.only(rescore=True)
    check = next(c for c in report.checks if c.name == "rescore.membership.ssim")
    assert report.trust == "failed" and check.status == "fail" and "gap" in check.message, check.to_dict()
    board.resign(lambda p: p["membership"]["metrics"]["ssim"].update(gap=p["membership"]["metrics"]["ssim"]["gap"] - 0.05,
                                                                       p=1e-9))
    check = next(c for c in board.only(rescore=True).checks if c.name == "rescore.membership.ssim")
    assert check.status == "fail" and "p " in check.message, check.to_dict()


def test_mirrored_gaps_deferred_by_rescore_are_computed_for_an_entry_that_is_not_lifted(digits, honest, tmp_path):
    """rescore defers the mirrored gaps of an entry whose own reproduction record looks accepted (the
    site build's cost); the held rule computes them when such an entry is not lifted after all, and
    never for a reproduced one: the rule reads the same gaps as before."""
    track, splits, holdout = digits
    mirrored = _mirrored(np.ascontiguousarray(splits.target.images[..., ::-1]), splits.target.labels, splits.target,
                         holdout)
    calls = []
    not_lifted = _Report("mirror", "re-scored", dict(honest))
    lifted = _Report("mirror-reproduced", "reproduced", dict(honest), team="b-team")
    for r, value in ((not_lifted, mirrored), (lifted, {})):
        r.mirrored, r.mirrored_later = None, (lambda r=r, value=value: calls.append(r.entry_id) or value)
    hold_extraordinary([not_lifted, lifted], tmp_path)
    assert calls == ["mirror"] and lifted.mirrored is None
    assert not_lifted.trust == "held" and "(reconstructions mirrored)" in not_lifted.held_reason


def test_validate_defers_the_mirrored_gaps_of_an_example_entry_its_record_lifts():
    """The real path: an example entry with an accepted reproduction record is reproduced, its mirrored
    gaps deferred (not computed), and computing them later gives gaps of the mirrored reconstructions."""
    from reconbench.submissions import validate_entries

    root = Path(__file__).resolve().parents[1] / "submissions"
    entry = next(p for p in sorted((root / "reconbench-baselines").glob("digits-deepdream-*")) if (p / "reproduction.json").is_file())
    (report,) = validate_entries([entry], root=root, cache=False)
    assert report.trust == "reproduced" and report.mirrored is None
    later = report.mirrored_later()
    assert {"mse", "ssim"} <= set(later) and all(g.status == "computed" for g in later.values())
