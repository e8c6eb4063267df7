"""Sealed tracks (issue 34): membership drawn from a secret, committed, scored at validation, revealed.

Everything here uses throwaway keys: the sealed twin of fashion-n100 (its real pool and recipe) is
drawn again with a key made for the test, a model trained on its members in seconds (fewer epochs
than the shipped draws), and the registry pointed at that draw (RECONBENCH_REGISTRY).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from reconbench.core.seal import SealError, commitment, draw_members, new_key, open_draw
from reconbench.image.models.sealed_registry import SEALED
from carried_attack import write_carried_attack

ATTACKS = Path(__file__).parent / "attacks"
GROUP = "fashion-n100-sealed"
UPDATE_GROUP = "fashion-n1000-u64-sealed"


def _key() -> bytes:
    return bytes.fromhex(new_key())


def test_draw_is_half_of_each_class_and_the_commitment_binds_to_key_and_members():
    labels = np.repeat(np.arange(10), 20)
    key, other = _key(), _key()
    members = draw_members(key, GROUP, 0, labels)
    assert all(members[labels == c].sum() == 10 for c in range(10))
    assert (draw_members(key, GROUP, 0, labels) == members).all()  # a function of key, track and draw
    assert (draw_members(key, GROUP, 1, labels) != members).any()  # draws differ
    assert (draw_members(other, GROUP, 0, labels) != members).any()
    pool = "ab" * 32
    published = commitment(key, GROUP, 0, pool, members)
    assert (open_draw(key, GROUP, 0, pool, labels, published) == members).all()
    with pytest.raises(SealError, match="does not open"):
        open_draw(other, GROUP, 0, pool, labels, published)
    flipped = members.copy()
    flipped[[0, 1]] = ~flipped[[0, 1]]
    assert commitment(key, GROUP, 0, pool, flipped) != published  # binding: another membership, another hash


def test_a_bad_key_file_gets_one_message_naming_it(tmp_path):
    from reconbench.core.seal import read_key

    bad = tmp_path / "seal.key"
    bad.write_text("not hex\n")
    with pytest.raises(SealError, match=f"{bad}: the seal key must be hex"):
        read_key(bad)
    bad.write_text("ab" * 8)
    with pytest.raises(SealError, match="8 bytes, at least 32"):
        read_key(bad)


@pytest.fixture(scope="module")
def sealed(tmp_path_factory):
    """A throwaway-key draw of fashion-n100-sealed: key file, registry file, and the draw's members."""
    from reconbench.core.tracks import SEALED_FILE, get_track, registry_path
    from reconbench.image.models.sealed_registry import draw_row
    from reconbench.image.models.training import TrainConfig

    home = tmp_path_factory.mktemp("sealed")
    key = _key()
    (home / "seal.key").write_text(key.hex() + "\n")
    row = draw_row(SEALED[GROUP], 0, 1, key, home / "data", config=TrainConfig(epochs=30, batch_size=64, lr=1e-3, seed=0),
                   season="test-season", reveal_after="2000-01-01")
    model = row["source"]["model_file"]
    row["source"]["model_file"] = str(home / "data" / model)  # an absolute path: the package's data folder is not touched
    shipped = json.loads(registry_path().with_name(SEALED_FILE).read_text())["tracks"]
    row["near_copy"] = next(t["near_copy"] for t in shipped if t["seal"]["group"] == GROUP)  # the same public pool
    opened = get_track("fashion-n100").model_dump(mode="json", exclude_none=True)
    registry = home / "registry.json"
    registry.write_text(json.dumps({"schema_version": 1, "tracks": [opened, row]}))
    return home, key, registry, row["id"]


@pytest.fixture
def on_sealed(sealed, monkeypatch):
    home, key, registry, track_id = sealed
    monkeypatch.setenv("RECONBENCH_REGISTRY", str(registry))
    return home, key, track_id


def _evaluate_and_submit(home: Path, track_id: str, spec: str, team: str, twin: bool = False):
    """Evaluate on a draw, or (twin) on every draw of the twin `track_id` as `recon-submit evaluate --draws all`
    does (the throwaway registry has one), and submit the result."""
    from reconbench.api import evaluate_draws
    from reconbench.core.signing import generate_key
    from reconbench.image.evaluation import evaluate
    from reconbench.submissions.submit import submit_result

    keys = home / "keys"
    user_key = keys / f"{team}.pem"
    if not user_key.exists():
        generate_key(user_key)
    out = home / f"result-{team}"
    shutil.rmtree(out, ignore_errors=True)
    if twin:
        (done,) = evaluate_draws(spec, track_id, draws="all", out=out, key=user_key, scenario="static/black-box/same",
                                 command_for_track=lambda t: f"test_sealed {t}")
        out = done.folder
        assert out.parent == home / f"result-{team}"  # one folder per draw inside --out
    else:
        done = evaluate(track_id=track_id, attack_spec=spec, scenario="static/black-box/same", key_path=user_key, out=out,
                        command="test_sealed")
    root = home / f"submissions-{team}"
    submit_result(out, team, root=root, key_path=user_key, team_name=f"Team {team}")
    return done.result, root, root / team / done.result.payload.entry_id


def _sealed_check(report):
    (entry,) = [r for r in report.entries if r.is_entry]
    return entry, next((c for c in entry.checks if c.name == "sealed"), None)


def test_seal_train_evaluate_validate_reveal_verify(on_sealed, tmp_path):
    """The whole cycle with a throwaway key; the numbers recomputed after the reveal equal what validate published."""
    from reconbench.core.tracks import get_track
    from reconbench.image.sealed import members, pool
    from reconbench.submissions import validate_board
    from reconbench.submissions.seal_reveal import read_reveal, reveal, verify

    home, key, track_id = on_sealed
    track = get_track(track_id)
    result, root, entry = _evaluate_and_submit(home, GROUP, f"{ATTACKS / 'carried.py'}:AuxMean", "ref", twin=True)
    payload = result.payload
    assert payload.track == track_id and payload.provenance.command == f"test_sealed {track_id}"  # the twin ran as its draws
    # evaluate: metrics against the whole pool, no membership, a marker of what waits for validation
    assert payload.membership is None and payload.sealed is not None
    assert payload.sealed.status == "scored at validation" and set(payload.sealed.pending) == {"membership gap", "extraction count"}
    assert payload.target.target_set_sha256 == pool(track).sha256 == track.seal.pool_sha256
    assert payload.metrics["ssim"].status == "computed"
    # validate without the key: passes, nothing recorded
    entry_report, check = _sealed_check(validate_board(None, root, rescore=False))
    assert check.status == "pass" and "scored at validation" in check.message and entry_report.sealed is None
    # issue 45: which draw of how many, how many of this run are in, when the numbers are published
    assert f"draw 1 of {track.seal.draws}, 1 of {track.seal.draws} draws of this run on the board" in check.message
    assert "published on the twin's board" in check.message and f"revealed after {track.seal.reveal_after}" in check.message
    assert not (entry / "sealed.json").exists()
    # with the key: the gap of the draw, written once, then checked
    entry_report, check = _sealed_check(validate_board(None, root, rescore=False, seal_key=key, write_sealed=True))
    assert check.status == "pass", check.message
    published = json.loads((entry / "sealed.json").read_text())
    assert published["membership"]["ssim"]["status"] == "computed"
    ext = published["extraction"]  # the per-sample count of the draw, at the dataset's calibration (issue 33)
    assert ext["n_members"] + ext["n_holdout"] == 200 and 0 <= ext["members"] <= ext["n_members"] and 0 < ext["p"] <= 1
    assert key.hex() not in (entry / "sealed.json").read_text()
    # an independent reference for the gap: aux images know nothing, best member vs best non-member per class
    from reconbench.core.io import load_arrays
    from reconbench.image.metrics.pixel import MSEKernel
    from reconbench.image.metrics.leakage import kernel_matrix
    import torch

    arrays = load_arrays(entry / "reconstructions.safetensors")
    inside = members(track, key)
    mem, non = pool(track).subset(np.flatnonzero(inside)), pool(track).subset(np.flatnonzero(~inside))
    diffs = []
    for c in np.unique(arrays["labels"]):
        r = torch.from_numpy(arrays["images"][arrays["labels"] == c])
        t = torch.from_numpy(mem.images[mem.labels == c])
        h = torch.from_numpy(non.images[non.labels == c])
        d_t = kernel_matrix(MSEKernel((1, 32, 32)), r, t, "cpu").min(1)
        d_h = kernel_matrix(MSEKernel((1, 32, 32)), r, h, "cpu").min(1)
        diffs.append(d_h - d_t)
    assert published["membership"]["mse"]["gap"] == pytest.approx(np.concatenate(diffs).mean(), abs=1e-9)
    # a changed record fails a keyed validation
    tampered = json.loads((entry / "sealed.json").read_text())
    tampered["membership"]["ssim"]["gap"] += 0.01
    (entry / "sealed.json").write_text(json.dumps(tampered))
    _, check = _sealed_check(validate_board(None, root, rescore=False, seal_key=key))
    assert check.status == "fail" and "differs" in check.message
    # without the key, a record counts only under the draw's pinned record signer: a forger's changed
    # numbers, a record re-signed by the forger's key, an unsigned one, all fail; CI's own passes
    from reconbench.core.seal import record_signer
    from reconbench.core.sealed_records import sign_record, unsigned
    from reconbench.core.signing import sign_payload

    assert track.seal.record_signer and published["signature"]["public_key"] == track.seal.record_signer
    _, check = _sealed_check(validate_board(None, root, rescore=False))
    assert check.status == "fail" and "not CI's record" in check.message and "does not verify" in check.message
    forged = unsigned(tampered) | {"signature": sign_payload(unsigned(tampered), record_signer(_key()))}
    for record, why in [(forged, "signed by another key"), (unsigned(published), "carries no signature")]:
        (entry / "sealed.json").write_text(json.dumps(record))
        _, check = _sealed_check(validate_board(None, root, rescore=False))
        assert check.status == "fail" and why in check.message, check.message
    # with the key: an unsigned record whose numbers match fails, and --write-sealed signs it
    _, check = _sealed_check(validate_board(None, root, rescore=False, seal_key=key))
    assert check.status == "fail" and "numbers match" in check.message
    _, check = _sealed_check(validate_board(None, root, rescore=False, seal_key=key, write_sealed=True))
    assert check.status == "pass" and "signed" in check.message
    assert json.loads((entry / "sealed.json").read_text()) == sign_record(unsigned(published), key)
    (entry / "sealed.json").write_text(json.dumps(published))
    entry_report, check = _sealed_check(validate_board(None, root, rescore=False))
    assert check.status == "pass" and entry_report.sealed == unsigned(published)
    # reveal: a wrong key reveals nothing; the right one writes the key with the commitments it opens
    with pytest.raises(SealError, match="does not open"):
        reveal(_key(), "test-season", tmp_path / "wrong.json")
    reveal(key, "test-season", tmp_path / "reveal.json")
    revealed, season = read_reveal(tmp_path / "reveal.json")
    opened, checked = verify(revealed, season, root)
    assert opened == {track_id: track.seal.commitment}
    assert [v.ok for v in checked] == [True]


def _public_images(n_open: int):
    from reconbench.image.data.fashion_splits import evaluator_training_set, fashion_splits

    opened = fashion_splits("fashion-mnist", 100)
    evaluator = evaluator_training_set("fashion-mnist")
    return opened, evaluator.subset(np.arange(n_open))


def _refused_as_carried(entry) -> bool:
    """The copy check refused it: exact copies of public images that are not its targets, or copies
    of public non-members (evidence of carried data)."""
    return any(c.name == "copies" and c.status == "fail" and ("not among the entry's targets" in c.message
               or "evidence of carried data" in c.message) for c in entry.checks)


def test_hostile_embedding_the_open_twins_targets_is_refused(on_sealed):
    """The open twin's membership is public (seed in the source): carried as-is onto the sealed twin, its
    targets are exact copies of public images that are not this track's targets."""
    home, key, track_id = on_sealed
    from reconbench.submissions import validate_board

    opened, _ = _public_images(0)
    folder = home / "hostile-open"
    write_carried_attack(folder, opened.target.images, opened.target.labels)
    _, root, _ = _evaluate_and_submit(home, track_id, f"{folder / 'carried.py'}:CarriedTargets", "copier")
    for key_given in (None, key):
        entry, _ = _sealed_check(validate_board(None, root, rescore=False, seal_key=key_given))
        assert entry.trust == "failed" and entry.sealed is None
        assert _refused_as_carried(entry), "; ".join(f"{c.name}: {c.message[:300]}" for c in entry.checks if c.status == "fail")


def test_hostile_loss_pick_over_carried_public_data_is_refused_with_the_key(on_sealed):
    """Carrying the public pool (its recipe is public) and other public images, then picking the
    images the model fits best, is membership inference: its picks that are not pool images are copies
    of public non-members, so the copy rule refuses it with or without the key, and it gets no sealed
    numbers."""
    home, key, track_id = on_sealed
    from reconbench.core.tracks import get_track
    from reconbench.image.sealed import members, pool
    from reconbench.submissions import validate_board

    track = get_track(track_id)
    whole = pool(track)
    _, others = _public_images(100)
    images = np.concatenate([whole.images, others.images])
    labels = np.concatenate([whole.labels, others.labels])
    folder = home / "hostile-loss"
    write_carried_attack(folder, images, labels)
    result, root, entry_dir = _evaluate_and_submit(home, track_id, f"{folder / 'carried.py'}:LossPick", "picker")
    # it does pick mostly members (AUC-level membership inference), and some non-members
    from reconbench.core.io import load_arrays

    picked = load_arrays(entry_dir / "reconstructions.safetensors")["images"]
    inside = members(track, key)
    is_member = [any((m == p).all() for m in whole.images[inside]) for p in picked]
    assert 0.6 < np.mean(is_member) < 1.0
    # Its picks outside the pool are copies of public non-members: refused before the key is needed
    # (issue 33's copy rule); with the key too, and it gets no sealed numbers
    for key_given in (None, key):
        entry, _ = _sealed_check(validate_board(None, root, rescore=False, seal_key=key_given, write_sealed=True))
        assert entry.trust == "failed" and _refused_as_carried(entry)
        assert entry.sealed is None and not (entry_dir / "sealed.json").exists()


def _forge(home: Path, entry_dir: Path, team: str, images: np.ndarray, labels: np.ndarray) -> None:
    """The entry's reconstructions replaced and its payload re-signed by the team's own (throwaway) key, as a
    contributor who edits their outputs would: the signature is theirs, so only the rules can refuse it."""
    from reconbench.core.io import save_arrays, sha256_file
    from reconbench.core.signing import load_private_key, sign_payload

    recon = entry_dir / "reconstructions.safetensors"
    save_arrays(recon, {"images": np.ascontiguousarray(images), "labels": np.ascontiguousarray(labels, dtype=np.int64)})
    data = json.loads((entry_dir / "result.json").read_text())
    data["payload"]["reconstructions"]["sha256"] = sha256_file(recon)
    data["signature"] = sign_payload(data["payload"], load_private_key(home / "keys" / f"{team}.pem"))
    (entry_dir / "result.json").write_text(json.dumps(data, indent=2))


def _moved(images: np.ndarray, rng) -> np.ndarray:
    """Each pixel moved 3 grey levels up or down: per-pixel MSE about 1.4e-4, over the exact-copy rule's 1e-4
    and under the count's extraction threshold (5.2e-4 on Fashion-MNIST)."""
    return np.clip(images.astype(np.int16) + rng.choice([-3, 3], size=images.shape), 0, 255).astype(np.uint8)


def _says_no_index(check, slots) -> bool:
    """A refusal on a sealed draw gives counts only: none of the forged outputs' indices, no details."""
    return not check.details and not any(re.search(rf"\b{s}\b", check.message) for s in slots)


def test_hostile_moved_copies_are_refused_at_the_counts_threshold_keyed_and_keyless_with_counts_only(on_sealed):
    """Issue 43: with the key, the carried-data rule failed only exact copies (MSE <= 1e-4) while the count
    credited anything within 5.2e-4; without it, the non-member search was skipped on sealed draws. Now
    one threshold, the count's: a member moved 3 grey levels is credited by the count, a pool non-member
    moved the same is refused with the key, a public image outside the pool moved the same is refused
    without it; and the refusals give counts only, never which outputs."""
    from reconbench.core.io import load_arrays
    from reconbench.core.tracks import extraction_calibration, get_track
    from reconbench.image.sealed import members, pool
    from reconbench.submissions import validate_board

    home, key, track_id = on_sealed
    track = get_track(track_id)
    # the dataset's calibration, as the count's and the open twin's
    assert extraction_calibration(track).threshold == get_track("fashion-n100").extraction.threshold
    _, root, entry_dir = _evaluate_and_submit(home, track_id, f"{ATTACKS / 'carried.py'}:AuxMean", "mover")
    honest = load_arrays(entry_dir / "reconstructions.safetensors")
    whole, inside = pool(track), members(track, key)
    rng = np.random.default_rng(0)
    slots = np.array([17, 42, 61, 88, 93])

    def forged(source_images, source_labels):
        images, labels = honest["images"].copy(), honest["labels"].copy()
        images[slots], labels[slots] = _moved(source_images, rng), source_labels
        _forge(home, entry_dir, "mover", images, labels)
        (entry_dir / "sealed.json").unlink(missing_ok=True)

    # five members, moved: no rule refuses them, and the count credits them
    picked = np.flatnonzero(inside)[:5]
    forged(whole.images[picked], whole.labels[picked])
    entry, check = _sealed_check(validate_board(None, root, rescore=False, seal_key=key))
    assert entry.trust != "failed" and check.status == "pass", check.message
    assert entry.sealed["extraction"]["members"] >= 5
    # five non-members of the pool, moved the same: public images of the draw's pool, so nothing to refuse
    # without the key; with it, refused at the count's threshold, by a count
    picked = np.flatnonzero(~inside)[:5]
    forged(whole.images[picked], whole.labels[picked])
    entry, check = _sealed_check(validate_board(None, root, rescore=False))
    assert entry.trust != "failed" and check.status == "pass"
    entry, check = _sealed_check(validate_board(None, root, rescore=False, seal_key=key, write_sealed=True))
    assert entry.trust == "failed" and check.status == "fail" and entry.sealed is None
    assert check.message.startswith("5 of 100 reconstructions are within the extraction threshold"), check.message
    assert _says_no_index(check, slots) and not (entry_dir / "sealed.json").exists()
    # five public images outside the pool (the evaluator's training set), moved: refused without the key
    _, outside = _public_images(5)
    forged(outside.images, outside.labels)
    for key_given in (None, key):
        entry, _ = _sealed_check(validate_board(None, root, rescore=False, seal_key=key_given))
        copies = next(c for c in entry.checks if c.name == "copies")
        assert entry.trust == "failed" and copies.status == "fail" and _refused_as_carried(entry)
        assert copies.message.startswith("5 of 100 reconstructions are within the extraction threshold")
        assert "counts only" in copies.message and _says_no_index(copies, slots)


def test_across_draws_matches_scipy_and_calls_no_leak_on_uniform_ps():
    from scipy import stats

    from reconbench.core.draws import across_draws, fisher_p, verdict

    ps = [0.2, 0.03, 0.5, 0.01, 0.7]
    assert fisher_p(ps) == pytest.approx(stats.combine_pvalues(ps, method="fisher").pvalue, rel=1e-9)
    gaps = [0.01, 0.03, -0.01, 0.02, 0.00]
    a = across_draws(gaps, ps)
    half = stats.t.ppf(0.975, 4) * np.std(gaps, ddof=1) / np.sqrt(5)
    assert (a.mean, a.low, a.high) == pytest.approx((0.01, 0.01 - half, 0.01 + half))
    assert across_draws([0.02], [0.004]).low is None  # one draw: no spread
    assert verdict({"ssim": across_draws([0.02] * 5, [0.001] * 5)})
    assert not verdict({"ssim": across_draws([-0.02] * 5, [0.001] * 5)})  # significant, but on the non-members' side
    assert not verdict({"ssim": a, "mse": across_draws(gaps, [0.6] * 5)})


def test_count_across_draws_pools_the_poisson_rates_as_scipys_skellam():
    """The extraction count across draws: totals, and the Skellam tail of the summed natural-null rates
    (an independent reference: scipy.stats.skellam); one draw is that draw's own test."""
    from scipy import stats

    from reconbench.core.draws import count_across_draws
    from reconbench.core.extraction import skellam_sf

    draws = [dict(members=k, n_members=100, holdout=j, n_holdout=100, expected_members=lm, expected_holdout=lh)
             for k, j, lm, lh in [(2, 0, 1e-3, 1e-3), (0, 0, 2e-3, 1e-3), (1, 1, 1e-3, 3e-3), (0, 0, 1e-3, 1e-3), (3, 0, 4e-3, 2e-3)]]
    pooled = count_across_draws(draws)
    assert (pooled.members, pooled.holdout, pooled.n_members, pooled.per_draw) == (6, 1, 500, (2, 0, 1, 0, 3))
    assert pooled.p == pytest.approx(stats.skellam.sf(6 - 1 - 1, 9e-3, 8e-3), rel=1e-6)
    # the natural p is context: the badge needs every draw's membership relabelling (tests/test_relabel.py)
    assert pooled.relabel_p is None and not pooled.extracts
    one = count_across_draws(draws[:1])
    assert one.p == pytest.approx(skellam_sf(2, 1e-3, 1e-3)) and one.draws == 1
    nothing = count_across_draws([dict(d, members=0, holdout=0) for d in draws])
    assert nothing.p == pytest.approx(stats.skellam.sf(-1, 9e-3, 8e-3), rel=1e-6) and not nothing.extracts
    with pytest.raises(ValueError, match="no draw"):
        count_across_draws([])


def test_draws_picks_all_or_the_first_n_of_a_sealed_twin():
    from reconbench.core.tracks import TrackError, pick_draws

    assert [t.id for t in pick_draws(GROUP, "all")] == [f"{GROUP}-d{i}" for i in range(5)]
    assert [t.id for t in pick_draws(GROUP, "2")] == [f"{GROUP}-d0", f"{GROUP}-d1"]
    for bad in ("0", "6", "two"):
        with pytest.raises(TrackError, match=f"--draws {bad}: give 'all' or a number of draws from 1 to 5"):
            pick_draws(GROUP, bad)
    with pytest.raises(TrackError, match="'fashion-n100' is not a sealed twin"):
        pick_draws("fashion-n100", "all")


@pytest.mark.parametrize("group", sorted(SEALED))
def test_each_shipped_sealed_twin_has_k_draws_pinned_and_nothing_secret(group):
    from reconbench.core.io import sha256_file
    from reconbench.core.tracks import embedded_file, sealed_draws
    from reconbench.image.models.sealed_registry import DRAWS

    draws = sealed_draws(group)
    assert [t.seal.draw for t in draws] == list(range(DRAWS)) and {t.seal.draws for t in draws} == {DRAWS}
    assert len({t.seal.commitment for t in draws}) == len(draws)
    assert len({t.seal.record_signer for t in draws}) == 1 and draws[0].seal.record_signer  # one season, one signer
    assert all(t.holdout_set_sha256 is None and t.update_holdout_set_sha256 is None for t in draws)  # the pool's other half: sealed
    assert all(sha256_file(embedded_file(t.source.model_file)) == t.target_model_sha256 for t in draws)  # pinned
    if SEALED[group].update_size:  # an update twin: one public model before, K secret updates, each observation pinned
        seen = [t.seal.observation for t in draws]
        assert {t.update_set_sha256 for t in draws} == {draws[0].seal.pool_sha256} and len({t.target_model_sha256 for t in draws}) == 1
        assert len({o.gradients_sha256 for o in seen}) == len({o.updated_model_sha256 for o in seen}) == len(draws)
        assert all(sha256_file(embedded_file(o.gradients_file)) == o.gradients_sha256 and
                   sha256_file(embedded_file(o.updated_model_file)) == o.updated_model_sha256 for o in seen)
        assert {t.update_size for t in draws} == {draws[0].seal.pool_size // 2}
        return
    assert len({t.target_model_sha256 for t in draws}) == len(draws)
    assert {t.target_set_sha256 for t in draws} == {draws[0].seal.pool_sha256}  # one public pool, K secret halves
    assert {t.train_size for t in draws} == {draws[0].seal.pool_size // 2}


def test_every_shipped_sealed_record_is_signed_by_its_draws_pinned_signer():
    """Checked without the key, as the site and a contributor's validate check them."""
    from reconbench.core.sealed_records import signature_problem
    from reconbench.core.tracks import get_track

    records = sorted((Path(__file__).parents[1] / "submissions").glob("*/*/sealed.json"))
    assert records
    for path in records:
        record = json.loads(path.read_text())
        assert signature_problem(record, get_track(record["track"]).seal.record_signer) is None, path


def test_the_shipped_sealed_twin_names_its_draws_and_pins_nothing_secret():
    from reconbench.core.tracks import TrackError, all_tracks, get_track

    draws = [t for t in all_tracks() if t.seal is not None and t.seal.group == GROUP]
    with pytest.raises(TrackError, match=f"'{GROUP}' is a sealed twin of {len(draws)} draws"):
        get_track(GROUP)


def test_the_board_reports_each_attacks_mean_gap_across_the_sealed_examples_draws():
    """The sealed examples (five attacks on each of fashion-n100-sealed's draws, sealed.json written by
    validate with the CI key): the board's row of each attack is the mean of its draws' recorded gaps."""
    from types import SimpleNamespace

    from reconbench.core.tracks import get_track
    from reconbench.image.results import parse_result_json
    from reconbench.leaderboard.sealed import sealed_view

    root = Path(__file__).resolve().parents[1] / "submissions" / "sealed-examples"
    every = [SimpleNamespace(team="sealed-examples", trust="re-scored", result=parse_result_json(p.parent / "result.json"),
                             sealed=json.loads(p.read_text())) for p in sorted(root.glob("*/sealed.json"))]
    groups = {r.sealed["group"] for r in every}
    assert {GROUP, "fashion-n500-sealed", UPDATE_GROUP} <= groups  # the twins the examples cover (scripts/make_sealed_examples.py)
    for group in sorted(groups):  # every twin's row per attack: all K draws, their mean
        reports = [r for r in every if r.sealed["group"] == group]
        view = sealed_view(get_track(f"{group}-d0"), reports)
        assert view["rows"] and all(row["draws"] == view["seal"].draws for row in view["rows"]), group
    reports = [r for r in every if r.sealed["group"] == GROUP]
    view = sealed_view(get_track(f"{GROUP}-d0"), reports)
    assert len(view["rows"]) >= 5
    for row in view["rows"]:
        gaps = [r.sealed["membership"]["ssim"]["gap"] for r in reports if r.result.payload.attack.name == row["attack"]]
        assert row["draws"] == len(gaps) == view["seal"].draws
        assert row["metrics"]["ssim"].mean == pytest.approx(np.mean(gaps))
        # season 2026-s1 is burned (issue 43): practice draws, the numbers shown and no verdict
        # (tests/test_sealed_holds.py); the p the gap rests on is still shown beside its threshold
        assert row["verdict"] is None and row["tier"] is None and row["pending"] == "practice draws, no verdict", row
        assert re.search(r"p [\d.e-]+ [<>≥] [\d.e-]+", row["held"]), row["held"]
        counts = [r.sealed["extraction"] for r in sorted(reports, key=lambda r: r.sealed["draw"])
                  if r.result.payload.attack.name == row["attack"]]
        pooled = row["extraction"]  # the count pooled over the draws: totals and each draw's
        assert pooled.per_draw == tuple(c["members"] for c in counts) and pooled.members == sum(pooled.per_draw)
        assert pooled.n_members == sum(c["n_members"] for c in counts) and pooled.holdout == sum(c["holdout"] for c in counts)
    # the twin's page: one nav item in place of its draws, its draws' boards linked, the pooled count shown
    from reconbench.core.tracks import all_tracks
    from reconbench.leaderboard.pages import Pages
    from reconbench.leaderboard.sealed import grouped_nav, nav_links, twin_pages

    family = [t for t in all_tracks() if t.dataset == "fashion-mnist" and t.architecture == "mcnn" and not t.variant]
    links = [title for title, _ in nav_links(family)]
    assert links.count(GROUP) == 1 and not any(t.startswith(f"{GROUP}-d") for t in links) and "fashion-n100" in links
    cards = grouped_nav(family, "tracks/{}.md")  # the model cards: the draws nested under the twin's one item
    (nested,) = [items for title, items in cards if title == GROUP]
    assert nested == [(f"{GROUP}-d{i}", f"tracks/{GROUP}-d{i}.md") for i in range(5)] and ("fashion-n100", "tracks/fashion-n100.md") in cards
    (twin,) = [p for p in twin_pages(family, reports, {}) if p["path"] == f"leaderboards/{GROUP}.md"]
    pages = Pages()
    pages.page(twin["path"], "sealed_group.md.j2", sealed=twin["sealed"], draws=twin["draws"])
    text = pages.markdown[twin["path"]]
    assert all(f"]({GROUP}-d{i}.md)" in text for i in range(5)) and "members extracted (per draw)" in text
    row = view["rows"][0]
    assert f"{row['extraction'].members} of {row['extraction'].n_members}, holdout" in text


def test_evaluate_s_closing_lines_on_a_sealed_draw_say_scored_at_validation():
    """Where the run ends (cli/commands/verdict.py), a sealed draw's result says the gap and the count are
    scored at validation, not "not tested": its members are the key's secret (issue 37, item 3)."""
    from rich.console import Console

    from reconbench.cli.commands.verdict import print_verdict
    from reconbench.image.results import parse_result_json

    root = Path(__file__).resolve().parents[1] / "submissions" / "sealed-examples"
    payload = parse_result_json(next(root.glob(f"{GROUP}-d*/result.json"))).payload
    console = Console(record=True, width=200)
    print_verdict(console, payload)
    text = " ".join(console.export_text().split())
    assert "membership gap and extraction count: scored at validation" in text
    assert f"sealed track {GROUP}, draw {payload.sealed.draw}" in text
    assert "not tested" not in text and "verdict:" not in text
    # issue 45: which draw of how many, what comes next and when the numbers are published
    from reconbench.core.tracks import get_track

    seal = get_track(payload.track).seal
    assert f"draw {seal.draw + 1} of {seal.draws} of twin {GROUP}" in text
    assert "scored by CI's keyed validation after your pull request" in text and "published on the twin's board" in text
    assert f"revealed after {seal.reveal_after}" in text


def test_every_sealed_command_says_how_many_draws_ran_what_next_and_when_the_score_comes(tmp_path):
    """Issue 45: `evaluate --draws N` says N of K ran and what a partial run means; `submit` how many draws
    of the run are in; `tracks` lists the twin ids `--track` takes, not only the draws."""
    from reconbench.core.sealed_next import draws_in, ran_line, submitted_line
    from reconbench.core.tracks import get_track, pick_draws
    from reconbench.image.results import parse_result_json
    from cli_process import recon

    draws = [t.id for t in pick_draws(GROUP, 1)]
    seal = get_track(draws[0]).seal
    line = ran_line(draws)
    assert line.startswith(f"sealed twin {GROUP}: 1 of {seal.draws} draws ran (d0).")
    assert f'"partial: 1 of {seal.draws} draws"' in line and "--draws all" in line and "submit each draw's folder" in line
    assert f"revealed after {seal.reveal_after}" in line
    assert "partial" not in ran_line([t.id for t in pick_draws(GROUP, "all")])
    assert ran_line(["digits"]) is None and submitted_line("digits", 0) is None
    # draws_in counts the draws of one run in a team folder; a hostile folder (broken JSON) counts for nothing
    examples = Path(__file__).resolve().parents[1] / "submissions" / "sealed-examples"
    team = tmp_path / "team"
    entry = next(examples.glob(f"{GROUP}-d0-*/result.json")).parent
    shutil.copytree(entry, team / entry.name)
    (team / "broken").mkdir()
    (team / "broken" / "result.json").write_text("{not json")
    payload = parse_result_json(team / entry.name / "result.json").payload
    assert draws_in(team, payload) == 1
    said = submitted_line(payload.track, 1)
    assert f"1 of {seal.draws} draws of this run" in said and f"submit the other {seal.draws - 1} draw folders" in said
    out = recon("tracks", env={"COLUMNS": "100"}).stdout
    ids = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│") and line.split("│")[1].strip()]
    assert GROUP in ids and f"{GROUP}-d0" not in ids  # the twin's id, its draws folded into it
    flat = " ".join(out.split())
    assert "evaluate --track fashion-n100-sealed --draws 1 --budget quick" in flat  # the first twin, sorted
    assert "scored by CI's keyed validation" in flat and "docs/sealed.md" in flat



@pytest.fixture(scope="module")
def sealed_update(tmp_path_factory):
    """A throwaway-key draw of the u64 update twin: the observation computed with the key (a gradient and a
    fine-tune, about a CPU second) and a registry holding it beside the open twin."""
    from reconbench.core.tracks import get_track
    from reconbench.image.models.sealed_registry import draw_row

    home = tmp_path_factory.mktemp("sealed-update")
    key = _key()
    row = draw_row(SEALED[UPDATE_GROUP], 0, 1, key, home / "data", season="test-season", reveal_after="2000-01-01")
    seen = row["seal"]["observation"]
    for name in ("gradients_file", "updated_model_file"):
        seen[name] = str(home / "data" / seen[name])  # absolute: the package's data folder is not touched
    opened = get_track("fashion-n1000-u64").model_dump(mode="json", exclude_none=True)
    row["near_copy"] = get_track(f"{UPDATE_GROUP}-d0").near_copy.model_dump(mode="json")  # the same public pool
    registry = home / "registry.json"
    registry.write_text(json.dumps({"schema_version": 1, "tracks": [opened, row]}))
    return home, key, registry, row["id"]


def test_a_sealed_update_twin_hands_the_attack_the_published_observation_of_its_members(sealed_update, monkeypatch):
    """The attack's view on a sealed update twin: the gradient and the updated model the key holder published
    (pinned by hash), which equal image/dynamic.py's recipe on the draw's members, not on the public pool;
    a file that differs from its pin is refused."""
    import torch

    from reconbench.core.scenario import Scenario
    from reconbench.core.tracks import TrackError, get_track
    from reconbench.image.dynamic import fine_tune, observed_gradients
    from reconbench.image.knowledge import build_knowledge
    from reconbench.image.sealed import member_set, pool
    from reconbench.image.track_files import load_target_model

    home, key, registry, track_id = sealed_update
    monkeypatch.setenv("RECONBENCH_REGISTRY", str(registry))
    track = get_track(track_id)
    assert len(pool(track)) == 128 and track.update_size == 64 and track.holdout_set_sha256 is None
    before = load_target_model(track)
    mine = member_set(track, key)
    expected = observed_gradients(before, mine, batch_size=64)
    seen = build_knowledge(track, Scenario.parse("dynamic/white-box/none")).extra("update_gradients")
    assert seen.batch_sizes == (64,) and seen.parameter_names == expected.parameter_names
    # equal up to float32 summation order (the file was written at one torch thread, this may run at more:
    # 5e-6 of a tensor's largest entry at two); the public pool's update differs by far more (below)
    assert all((a - b).abs().max() <= 1e-4 * b.abs().max() for a, b in zip(seen.gradients[0], expected.gradients[0]))
    whole = observed_gradients(before, pool(track), batch_size=128)  # what a public-pool update would show
    assert not torch.allclose(seen.gradients[0][-1], whole.gradients[0][-1])
    after = build_knowledge(track, Scenario.parse("dynamic/black-box/same")).extra("query_after")
    probe = torch.rand(5, 1, 32, 32)
    with torch.no_grad():
        assert torch.allclose(after(probe), torch.softmax(fine_tune(before, mine)(probe), dim=1), atol=1e-6)
    gradient_file = Path(track.seal.observation.gradients_file)
    saved = gradient_file.read_bytes()
    gradient_file.write_bytes(saved[:-4] + b"\0\0\0\0")
    try:
        with pytest.raises(TrackError, match="gradient file's sha256 is not"):
            build_knowledge(track, Scenario.parse("dynamic/white-box/none"))
    finally:
        gradient_file.write_bytes(saved)


def test_a_sealed_update_twin_is_scored_at_validation_against_its_members(sealed_update, monkeypatch):
    """evaluate on the twin runs on its draw and marks the gap pending; validate with the key scores the
    reconstructions against the members of the update (the pool's other half as the holdout)."""
    from reconbench.api import evaluate_draws
    from reconbench.core.signing import generate_key
    from reconbench.core.tracks import get_track
    from reconbench.image.sealed import members
    from reconbench.submissions import validate_board
    from reconbench.submissions.submit import submit_result

    home, key, registry, track_id = sealed_update
    monkeypatch.setenv("RECONBENCH_REGISTRY", str(registry))
    user_key = home / "user.pem"
    generate_key(user_key)
    (done,) = evaluate_draws("deep-leakage", UPDATE_GROUP, draws="all", out=home / "run", key=user_key,
                             scenario="dynamic/white-box/none", options={"iterations": 1, "max_iter": 2})
    # (no command given: it records the evaluate line with --set iterations/max_iter, which validate holds it to)
    payload = done.result.payload
    assert payload.track == track_id and payload.membership is None and payload.sealed.status == "scored at validation"
    assert payload.target.target_set_sha256 == get_track(track_id).seal.pool_sha256 and payload.reconstructions.count == 64
    root = home / "submissions"
    submit_result(done.folder, "upd", root=root, key_path=user_key, team_name="Team upd")
    entry_report, check = _sealed_check(validate_board(None, root, rescore=False, seal_key=key, write_sealed=True))
    assert check.status == "pass", check.message
    (record,) = root.glob("upd/*/sealed.json")
    published = json.loads(record.read_text())
    ext = published["extraction"]
    assert (ext["n_members"], ext["n_holdout"]) == (64, 64) and int(members(get_track(track_id), key).sum()) == 64
    assert published["membership"]["ssim"]["status"] == "computed" and key.hex() not in record.read_text()
    # after the reveal: the entry's numbers, and the published observation recomputed from the opened members
    from reconbench.submissions.seal_reveal import verify

    _, checked = verify(key, "test-season", root)
    assert [(v.entry.endswith(" observation"), v.ok) for v in checked] == [(False, True), (True, True)]
    # an observation of another set of images, published under this draw's commitment, is caught
    from reconbench.core.tracks import Track
    from reconbench.image.models.sealed_registry import draw_row
    from reconbench.image.sealed_scores import observation_matches

    elsewhere = home / "other-draw"
    forged = draw_row(SEALED[UPDATE_GROUP], 0, 1, _key(), elsewhere, season="test-season", reveal_after="2000-01-01")
    seen = {k: str(elsewhere / v) if k.endswith("_file") else v for k, v in forged["seal"]["observation"].items()}
    track = get_track(track_id)
    swapped = Track.model_validate(track.model_dump(mode="json") | {"seal": track.seal.model_dump(mode="json") | {"observation": seen}})
    assert observation_matches(track, key) and not observation_matches(swapped, key)


def test_an_update_twin_s_page_says_its_observation_is_published_and_what_a_member_copy_means():
    from reconbench.core.tracks import all_tracks
    from reconbench.leaderboard.pages import Pages
    from reconbench.leaderboard.sealed import twin_pages

    family = [t for t in all_tracks() if t.dataset == "fashion-mnist" and t.architecture == "mcnn" and not t.variant]
    pages = {p["path"]: p for p in twin_pages(family, [], {})}
    rendered = Pages()
    for group in (UPDATE_GROUP, "fashion-n1000-sealed"):
        page = pages[f"leaderboards/{group}.md"]
        rendered.page(page["path"], "sealed_group.md.j2", sealed=page["sealed"], draws=page["draws"])
    update = " ".join(rendered.markdown[f"leaderboards/{UPDATE_GROUP}.md"].split())
    static = " ".join(rendered.markdown["leaderboards/fashion-n1000-sealed.md"].split())
    assert "an update of the public model before it by its own half of one public pool of 128 images" in update
    assert "an exact copy of a member needs a reproduction and a reviewer" in update
    assert "a model trained on its own half of one public pool of 2000 images" in static and "exact copy" not in static


def test_every_twin_page_renders_its_table_of_draws_as_a_table():
    """Issue 45: on a static twin's page the table of draws followed the paragraph with no blank line
    (trim_blocks ate it after the `{% endif %}` of the update twins' paragraph), so Markdown printed its
    pipes as text. Rendered here as MkDocs renders it (mkdocs.yml's `tables` extension)."""
    import markdown

    from reconbench.core.tracks import all_tracks
    from reconbench.leaderboard.pages import Pages
    from reconbench.leaderboard.sealed import twin_pages

    rendered = Pages()
    twins = twin_pages([t for t in all_tracks() if getattr(t, "seal", None) is not None], [], {})
    assert {p["path"] for p in twins} >= {f"leaderboards/{GROUP}.md", f"leaderboards/{UPDATE_GROUP}.md"}
    for page in twins:
        rendered.page(page["path"], "sealed_group.md.j2", sealed=page["sealed"], draws=page["draws"])
        body = rendered.markdown[page["path"]].split("\n---\n", 1)[1]  # past the front matter
        html = markdown.markdown(body, extensions=["tables", "attr_list", "admonition"])
        assert "<th>draw</th>" in html and "| draw |" not in html and "|---|" not in html, page["path"]


def test_the_update_pools_are_past_every_static_twin_s_pool_and_class_balanced():
    from reconbench.core.tracks import get_track
    from reconbench.image.data.fashion import fashion_mnist
    from reconbench.image.data.fashion_splits import UPDATE_POOL_STARTS, _view, fashion_splits, layout, sealed_update_pool

    labels, block = fashion_mnist()["train"].labels, layout()["sealed"]
    tail = set(block[UPDATE_POOL_STARTS[0]:].tolist())
    for twin in SEALED.values():
        opened = get_track(twin.open_twin)
        if twin.update_size:
            update = fashion_splits(opened.dataset, opened.train_size, twin.update_size).update
            got = sealed_update_pool(opened.dataset, twin.update_size)
            assert (np.bincount(got.labels, minlength=10) == 2 * np.bincount(update.labels, minlength=10)).all()
        else:
            used = _view(opened.dataset).keep(labels, block)[: 2 * opened.train_size]
            assert tail.isdisjoint(used.tolist()), twin.group
