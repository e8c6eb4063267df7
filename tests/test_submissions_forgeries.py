"""Each check of the validator rejects its own forged entry, with a reason that names the problem.

All forgeries start from one real entry (mi-face on digits, evaluated once per session)."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
from safetensors.numpy import save_file

from reconbench.image.data.digits import digits_splits
from reconbench.core.io import sha256_file
from reconbench.image.metrics import score
from reconbench.submissions import validate_entries
from submission_helpers import failure, fresh_board, status

CHECK_ORDER = ["structure", "schema", "identity", "signature", "paths", "registry", "reconstructions", "rescore", "copies", "nearcopies",
               "duplicates"]


@pytest.fixture
def board(tmp_path_factory, tmp_path):
    return fresh_board(tmp_path_factory, tmp_path)


def test_the_real_entry_is_rescored(board):
    report = board.only(rescore=True)
    assert report.trust == "re-scored", [c.to_dict() for c in report.checks]
    stages = [c.name.split(".")[0] for c in report.checks]
    assert list(dict.fromkeys(stages)) == CHECK_ORDER
    assert {c.name for c in report.checks} >= {"rescore.mse", "rescore.psnr", "rescore.ssim", "rescore.fid"}
    assert status(report, "rescore.mse") == "pass" and "as claimed" in next(c for c in report.checks if c.name.startswith("rescore")).message
    assert report.result.payload.attack.name == "mi-face" and report.team_info.name == "Alpha lab"
    assert report.unverified == []  # LPIPS/FID were neither claimed nor computable: nothing unverified
    # the public API: entries only, same report
    (api,) = validate_entries(None, board.root, rescore=False)
    assert api.entry_id == board.entry.name and api.trust == "signed" and status(api, "rescore") == "not-run"


def test_metric_changed_and_resigned_by_another_teams_key(board):
    board.resign(lambda p: p["metrics"]["mse"].update(value=0.001), key=board.beta_key)
    check = failure(board.only())
    assert check.name == "signature"
    assert "not one of the team's keys" in check.message and "belongs to team(s) beta" in check.message


def test_metric_changed_without_resigning(board):
    data = board.result_json.read_text().replace('"value": 0.1', '"value": 0.0', 1)
    board.result_json.write_text(data)
    check = failure(board.only())
    assert check.name == "signature" and "payload was changed" in check.message


def test_inflated_metrics_resigned_by_the_team_are_caught_by_rescoring(board):
    def inflate(p):
        p["metrics"]["mse"]["value"] /= 2
        p["metrics"]["psnr"]["value"] += 3.0
        p["metrics"]["ssim"]["coverage"] = 0.5

    board.resign(inflate)
    assert board.only(rescore=False).trust == "signed"  # the signature is genuine
    report = board.only(rescore=True)
    check = failure(report)
    assert check.name == "rescore.mse" and "claimed" in check.message and "recomputed" in check.message
    assert status(report, "rescore.psnr") == "fail" and "coverage" in next(
        c.message for c in report.checks if c.name == "rescore.ssim")
    assert status(report, "copies") == "not-run"


def test_claimed_metric_that_cannot_be_recomputed_here_stays_unverified(board):
    board.resign(lambda p: p["metrics"].update(lpips={"status": "computed", "value": 0.2, "coverage": 0.1, "note": None}))
    report = board.only(rescore=True)
    assert report.trust == "signed" and report.unverified == ["lpips"]
    lp = next(c for c in report.checks if c.name == "rescore.lpips")
    assert lp.status == "not-run" and "unverified" in lp.message and "0.2" in lp.message


def test_swapped_reconstruction_file(board):
    from reconbench.image.results import load_reconstructions

    images, labels = load_reconstructions(board.recon)
    save_file({"images": np.ascontiguousarray(images[::-1]), "labels": np.ascontiguousarray(labels[::-1])}, str(board.recon))
    check = failure(board.only())
    assert check.name == "reconstructions" and "sha256" in check.message and "swapped" in check.message


def _copy_and_sign(board, images, labels, target):
    save_file({"images": np.ascontiguousarray(images), "labels": np.ascontiguousarray(labels)}, str(board.recon))
    from reconbench.core.tracks import get_track

    # as evaluate scores: with the track's evaluation classifier (Acc@1/5 and KNN are never left out)
    metrics = score(images, labels, target.images, target.labels, track=get_track("digits")).metrics

    def honest(p):
        p["reconstructions"]["sha256"] = sha256_file(board.recon)
        p["metrics"] = {k: v.model_dump(mode="json") for k, v in metrics.items()}
        p.pop("membership", None)  # the base entry's gap is of other reconstructions: validate computes it

    board.resign(honest)


def test_exact_copies_of_its_own_targets_are_held_until_reproduced(board, tmp_path, monkeypatch):
    """Reconstructions that ARE the target images, honestly scored and signed: a perfect attack and a
    copy look alike, so the entry is held (never ranked) until a reproducer's record says otherwise."""
    from reconbench.reproduction.record import RECORD_FILE, REPRODUCERS_ENV, write_record
    from reconbench.reproduction.rerun import load_entry, score_run
    from reconbench.reproduction.sign import sign_record
    from reconbench.core.signing import generate_key, load_private_key

    target = digits_splits().target
    images, labels = target.images.copy(), target.labels.copy()
    images[7] = 255 - images[7]  # one that is not a copy
    _copy_and_sign(board, images, labels, target)
    report = board.only(rescore=True)
    assert report.trust == "held", [c.to_dict() for c in report.checks]
    copies = next(c for c in report.checks if c.name == "copies")
    assert copies.status == "warn" and "499 of 500" in copies.message and "indices 0, 1, 2" in copies.message
    assert "exact copies of the entry's own targets" in copies.message
    assert "reconstruction 7 " not in "\n".join(copies.details) and len(copies.details) == 499
    assert copies.details[0] == "reconstruction 0 = target 0 (per-pixel MSE 0.00e+00)"
    assert "exact copies of its own targets: 499 of 500" in report.held_reason
    assert report.evidence["exact"] == 499 and report.evidence["rows"][0]["index"] == 0

    # One exact copy is enough to hold (a single recovered image is what Deep Leakage's entry has).
    one = board.recon.parent  # same entry, now honest noise plus one exact target
    noise = np.random.default_rng(0).integers(0, 256, target.images.shape, dtype=np.uint8)
    noise[3] = target.images[42]
    _copy_and_sign(board, noise, target.labels, target)
    report = board.only()
    assert report.trust == "held" and "exact copies of its own targets: 1 of 500" in report.held_reason
    assert next(c for c in report.checks if c.name == "copies").details == (
        "reconstruction 3 = target 42 (per-pixel MSE 0.00e+00)",)

    # A reproducer's signed record lifts it to "reproduced": then it ranks.
    key, public = generate_key(tmp_path / "reproducer.pem")
    listed = tmp_path / "reproducers.toml"
    listed.write_text(f'[[reproducer]]\nname = "test reproducer"\nkey = "{public}"\n')
    monkeypatch.setenv(REPRODUCERS_ENV, str(listed))
    entry = load_entry(one)
    record = score_run(entry, one)  # the entry's own files as the "re-run": this test is about trust, not re-running
    assert record.verdict == "reproduced"
    write_record(one / RECORD_FILE, sign_record(record, load_private_key(key)))
    report = board.only()
    assert report.trust == "reproduced" and report.held_reason is None, [c.to_dict() for c in report.checks]
    from reconbench.leaderboard.frame import UNRANKED

    assert report.trust not in UNRANKED


def test_exact_copies_of_public_images_that_are_not_its_targets_fail(board):
    """Auxiliary (public, non-target) images submitted as reconstructions: no attack recovers an image
    it was not trained on, so these can only be copies: the entry fails, whatever a reproducer says."""
    aux, target = digits_splits().aux_same, digits_splits().target
    images, labels = target.images.copy(), target.labels.copy()
    images[10:20] = aux.images[:10]  # ten copies of non-target public images among exact target copies
    labels[10:20] = aux.labels[:10]
    _copy_and_sign(board, images, labels, target)
    check = failure(board.only())
    # the non-member rule (issue 33: within the extraction threshold of a public non-member) names the split
    assert check.name == "copies" and "10 of 500" in check.message and "not members (aux_same)" in check.message
    assert "indices 10, 11, 12" in check.message and len(check.details) == 10


def test_wrong_target_hash(board):
    board.resign(lambda p: p["target"].update(target_set_sha256="0" * 64))
    check = failure(board.only())
    assert check.name == "registry" and "target_set_sha256" in check.message and "registry pins" in check.message


def test_wrong_model_hash_and_wrong_count(board):
    def forge(p):
        p["target"]["model_sha256"] = "1" * 64
        p["reconstructions"]["count"] = 10

    board.resign(forge)
    check = failure(board.only())
    assert check.name == "registry" and "(and 1 more)" in check.message
    assert any("|D_tar| = 500" in d for d in check.details)


def test_more_queries_than_the_tracks_budget(board):
    board.resign(lambda p: p["provenance"].update(queries=1_000_001))
    check = failure(board.only())
    assert check.name == "registry" and "provenance.queries is 1,000,001, more than track 'digits' allows (1,000,000" in check.message


@pytest.mark.parametrize("code", [
    "mine.py:Better",
    # old module names (core/moved.py) resolve, but only to the class the name is registered to
    "reconbench.attacks.deep_dream:DeepDream", "reconbench.attacks.mi_face:DeepDream", "reconbench.tracks:MIFace",
    "reconbench.attacks.mi_face.MIFace:MIFace",
])
def test_registered_attack_name_with_other_code(board, code):
    board.resign(lambda p: p["attack"].update(code=code))
    check = failure(board.only())
    assert check.name == "registry" and "needs a name of its own" in check.message


def test_a_registered_attack_signed_under_its_old_module_name_passes(board):
    board.resign(lambda p: p["attack"].update(code="reconbench.attacks.mi_face:MIFace"))
    assert status(board.only(), "registry") == "pass"


def test_scenario_the_attack_cannot_run_in(board):
    # mi-face needs a white-box model; the track offers static/black-box/same
    board.resign(lambda p: p.update(scenario="static/black-box/same"))
    check = failure(board.only())
    assert check.name == "registry" and "mi-face" in check.message and "gives less" in check.message


def test_user_attack_rule(board):
    board.resign(lambda p: (p["attack"].update(name="my-attack", code="my_attack.py:MyAttack"),
                            p["provenance"].update(command="recon-submit evaluate --attack my_attack.py:MyAttack")))
    assert status(board.only(), "registry") == "pass"
    for code in ("reconbench.image.attacks.mi_face:MIFace", "reconbench.attacks.mi_face:MIFace"):
        board.resign(lambda p: p["attack"].update(name="my-attack", code=code))
        assert "file.py:Class" in failure(board.only()).message


@pytest.mark.parametrize("name", ["rni-face", "mi_face", "miface", "deep-1eakage", "deep-leakage-"])
def test_an_ascii_look_alike_of_a_registered_attack_name_is_refused(board, name):
    """Issue 36: a user's own attack under a name that reads as a registered one (rn for m, 1 for l,
    punctuation) is refused as a team name would be; a name of its own passes (test_user_attack_rule)."""
    board.resign(lambda p: p["attack"].update(name=name, code="mine.py:Mine"))
    check = failure(board.only())
    assert check.name == "registry" and "looks like the registered attack" in check.message, check.message


def test_unknown_track(board):
    board.resign(lambda p: p.update(track="cifar-nonexistent"))
    check = failure(board.only())
    assert check.name == "registry" and "unknown track" in check.message


def test_symlinks_are_refused(board, tmp_path):
    (board.entry / "README.md").symlink_to("/etc/passwd")
    check = failure(board.only())
    assert check.name == "structure" and "README.md: symbolic link" in check.message


def test_symlinked_entry_and_team_folders(board, tmp_path):
    outside = tmp_path / "outside-entry"
    shutil.copytree(board.entry, outside)
    (board.root / "alpha" / "digits-linked").symlink_to(outside)
    (board.root / "gamma").symlink_to(board.root / "alpha")
    reports = {str(r.path.relative_to(board.root)): r for r in board.validate().entries}
    assert "entry folder is a symbolic link" in failure(reports["alpha/digits-linked"]).message
    assert "team folder is a symbolic link" in failure(reports["gamma"]).message
    assert reports[f"alpha/{board.entry.name}"].trust == "signed"  # the others are still checked


def test_pickles_by_name_and_by_content(board):
    import pickle

    (board.entry / "model.pt").write_bytes(b"not even a pickle")
    check = failure(board.only())
    assert check.name == "structure" and "model.pt: '.pt' files can hold pickles" in check.message
    os.unlink(board.entry / "model.pt")
    board.recon.write_bytes(pickle.dumps({"images": [1, 2, 3]}, protocol=4))
    check = failure(board.only())
    assert "reconstructions.safetensors: content is a pickle" in check.message and "whatever its name" in check.message


def test_torch_zip_checkpoint_disguised_as_safetensors(board):
    import zipfile

    with zipfile.ZipFile(board.recon, "w") as z:
        z.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
    check = failure(board.only())
    assert check.name == "structure" and "torch zip checkpoint" in check.message


def test_path_traversal_in_the_given_paths(board, tmp_path):
    traversal = board.root / "alpha" / ".." / ".." / "elsewhere" / "result.json"
    report = board.validate([traversal])
    assert not report.ok and report.entries == [] and "elsewhere/result.json" in report.outside[0]


def test_truncated_result_json(board):
    data = board.result_json.read_bytes()
    board.result_json.write_bytes(data[: len(data) // 2])
    check = failure(board.only())
    assert check.name == "schema" and "malformed JSON" in check.message and "result.json" in check.message


def test_truncated_reconstructions(board):
    data = board.recon.read_bytes()
    board.recon.write_bytes(data[:-1000])
    check = failure(board.only())
    assert check.name == "reconstructions" and "truncated" in check.message


def test_oversized_file_is_refused_without_reading_it(board):
    os.truncate(board.recon, 2 * 1024**3)  # sparse: 2 GB on paper, nothing on disk
    check = failure(board.only())
    assert check.name == "structure" and "2,147,483,648 bytes, over the 67,108,864-byte cap" in check.message


def test_duplicate_reconstructions_under_another_team(board):
    """Team beta copies alpha's entry (under a new id) and signs it with its own key."""
    twin = board.root / "beta" / "digits-mi-face-copy"
    shutil.copytree(board.entry, twin)
    board.resign(lambda p: p.update(entry_id="digits-mi-face-copy"), key=board.beta_key, entry=twin)
    report = board.validate([twin])
    (r,) = report.entries
    check = failure(r)
    assert check.name == "duplicates" and "already on the board" in check.message and board.entry.name in check.message


def test_copy_distances_match_a_naive_reference():
    import torch

    from reconbench.submissions.checks import copies

    rng = np.random.default_rng(0)
    rec = rng.integers(0, 256, (37, 1, 8, 8), dtype=np.uint8)
    pool_u8 = rng.integers(0, 256, (101, 1, 8, 8), dtype=np.uint8)
    pool = torch.from_numpy(pool_u8.reshape(101, -1)).float() / 255
    old = copies.CHUNK_ELEMENTS
    copies.CHUNK_ELEMENTS = 500  # several row blocks
    try:
        best, where = copies.nearest_copies(rec, pool)
    finally:
        copies.CHUNK_ELEMENTS = old
    a, b = rec.reshape(37, -1) / 255.0, pool_u8.reshape(101, -1) / 255.0
    naive = np.array([[np.mean((x - y) ** 2) for y in b] for x in a])
    assert np.allclose(best, naive.min(1), atol=1e-6) and (where == naive.argmin(1)).all()


def test_copy_threshold_is_about_two_grey_levels():
    """Per-pixel MSE 1e-4 on [0, 1]: a uniform shift of 2/255 is a copy, 3/255 is not."""
    import torch

    from reconbench.submissions.checks import copies

    pool_u8 = np.random.default_rng(1).integers(50, 200, (5, 1, 8, 8), dtype=np.uint8)  # no clipping below
    pool = torch.from_numpy(pool_u8.reshape(5, -1)).float() / 255
    best2, where2 = copies.nearest_copies(pool_u8 + np.uint8(2), pool)
    best3, _ = copies.nearest_copies(pool_u8 + np.uint8(3), pool)
    assert np.allclose(best2, (2 / 255) ** 2, rtol=1e-4) and (where2 == np.arange(5)).all()
    assert (best2 <= copies.COPY_MSE).all() and (best3 > copies.COPY_MSE).all()


@pytest.mark.parametrize("arrays, expected", [
    # same byte count as 500 uint8 8x8 images + labels, but float32 pixels
    ({"images": np.zeros((500, 1, 8, 2), np.float32), "labels": np.zeros(500, np.int64)}, "is float32, expected uint8"),
    ({"images": np.zeros((500, 1, 8, 8), np.uint8), "labels": np.full(500, 10, np.int64)}, "outside 0..9"),
    ({"images": np.zeros((500, 1, 4, 16), np.uint8), "labels": np.zeros(500, np.int64)}, "needs [500, 1, 8, 8]"),
    ({"images": np.zeros((499, 1, 8, 8), np.uint8), "labels": np.zeros(499, np.int64),
      "extra": np.zeros(72, np.uint8)}, "exactly the tensors"),
])
def test_malformed_reconstructions_signed_as_they_are(board, arrays, expected):
    save_file(arrays, str(board.recon))
    board.resign(lambda p: p["reconstructions"].update(sha256=sha256_file(board.recon)))
    check = failure(board.only())
    assert check.name == "reconstructions" and expected in check.message
