"""Season 2026-s2 (issue 43, scheme v2): pools drawn from the whole sealed block, weights kept encrypted,
a draw opened only inside the board's sealed run (core/sealed_weights.opening), revealed by its season key.

Throwaway keys for everything that opens a draw: two draws of fashion-n100-sealed-s2 trained in seconds (few
epochs) and one of the u8 update twin, written into a temporary data folder and a registry that points at it.
The committed season is checked without its key: what ships, and what does not.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from reconbench.core.seal import SealError, new_key, season_key
from reconbench.image.models.sealed_registry import SEALED, SEASON_V2, draw_row_v2

GROUP = "fashion-n100-sealed-s2"
UPDATE = "fashion-n1000-u8-sealed-s2"
REFUSAL = ("{track}: this draw's model is sealed (season 2026-s2, revealed after 2027-09-01); only the board's "
           "sealed run opens it (`recon-submit seal run`). Develop on the open twin {open} or the practice draws {s1}")


def _key() -> bytes:
    return bytes.fromhex(new_key())


@pytest.fixture(scope="module")
def season(tmp_path_factory):
    """A throwaway season 2026-s2: master key, data folder with the encrypted files, registry rows."""
    from reconbench.core.tracks import SEALED_FILE, get_track, registry_path
    from reconbench.image.models.training import TrainConfig

    home = tmp_path_factory.mktemp("season2")
    master = _key()
    fast = TrainConfig(epochs=3, batch_size=64, lr=1e-3, seed=0)
    rows = [draw_row_v2(SEALED["fashion-n100-sealed"], d, 2, master, home / "data", config=fast) for d in (0, 1)]
    rows.append(draw_row_v2(SEALED["fashion-n1000-u8-sealed"], 0, 1, master, home / "data"))
    shipped = json.loads(registry_path().with_name(SEALED_FILE).read_text())["tracks"]
    practice = [t for t in shipped if t["seal"]["group"] == "fashion-n100-sealed"]  # the burned s1 twin
    opened = [get_track(t).model_dump(mode="json", exclude_none=True) for t in ("fashion-n100", "fashion-n1000-u8")]
    registry = home / "registry.json"
    registry.write_text(json.dumps({"schema_version": 1, "tracks": opened + practice + rows}))
    return home, master, registry


@pytest.fixture
def on_season(season, monkeypatch):
    home, master, registry = season
    monkeypatch.setenv("RECONBENCH_REGISTRY", str(registry))
    monkeypatch.setattr("reconbench.image.sealed.sealed_path", lambda name: home / "data" / name)
    return home, master


def test_the_seal_schema_keeps_v1_rows_and_refuses_a_half_v2_row():
    from pydantic import ValidationError

    from reconbench.core.tracks import Seal, all_tracks

    v1 = [t for t in all_tracks() if t.seal is not None and t.seal.season == "2026-s1"]
    assert len(v1) == 35 and {t.seal.scheme for t in v1} == {"v1"}  # season 2026-s1 validates unchanged
    good = {"scheme": "v2", "group": "g", "draw": 0, "draws": 1, "open_twin": "o", "season": "s", "reveal_after": "2000-01-01",
            "pool_size": 4, "commitment": "c", "block_sha256": "a" * 64, "per_class": {"0": 1, "1": 1},
            "files": {"model": {"file": "fashion/sealed/g-d0.model.sealed", "sha256": "b" * 64, "plain_sha256": "c" * 64}}}
    assert Seal.model_validate(good).per_class == {0: 1, 1: 1}
    for bad, why in ((good | {"pool_sha256": "d" * 64}, "publishes no pool hash"),
                     (good | {"block_sha256": None}, "names the block"),
                     (good | {"pool_size": 6}, "twice its per-class"),
                     (good | {"files": {}}, "encrypted model"),
                     (good | {"files": {"model": good["files"]["model"], "key": good["files"]["model"]}}, "roles"),
                     # a hostile row: a file outside the sealed folder, or a plaintext weight file
                     (good | {"files": {"model": good["files"]["model"] | {"file": "../../../etc/passwd"}}}, "pattern"),
                     (good | {"files": {"model": good["files"]["model"] | {"file": "fashion/sealed/g-d0.safetensors"}}}, "pattern"),
                     ({**good, "scheme": "v1", "pool_sha256": "d" * 64}, "belong to scheme v2")):
        with pytest.raises(ValidationError, match=why):
            Seal.model_validate(bad)


def test_a_v2_draw_is_drawn_from_the_whole_block_and_ships_only_ciphertext(season):
    home, master, registry = season
    files = sorted(p.name for p in (home / "data").rglob("*") if p.is_file())
    assert files and all(name.endswith(".sealed") for name in files)  # no plaintext weights written
    rows = json.loads(registry.read_text())["tracks"]
    for row in (r for r in rows if r.get("seal", {}).get("scheme") == "v2"):
        assert "pool_sha256" not in row["seal"] and "target_set_sha256" not in row and "update_set_sha256" not in row
        assert master.hex() not in json.dumps(row) and season_key(master, SEASON_V2).hex() not in json.dumps(row)
        for pinned in row["seal"]["files"].values():
            data = (home / "data" / pinned["file"]).read_bytes()
            assert data.startswith(b"RECONBENCH-SEALED-1\n") and pinned["sha256"] != pinned["plain_sha256"]


def test_a_v2_draw_opens_only_inside_the_boards_run_with_the_right_key(on_season):
    from reconbench.core.sealed_weights import opening, opening_season
    from reconbench.core.tracks import TrackError, get_track
    from reconbench.image.data.fashion_splits import sealed_block, sealed_pool
    from reconbench.image.sealed import is_board_run, member_set, members, pool, v2_splits
    from reconbench.image.track_files import load_splits, load_target_model, public_pool

    home, master = on_season
    track = get_track(f"{GROUP}-d0")
    assert is_board_run(track) and not is_board_run(get_track("fashion-n100-sealed-d0"))
    refusal = REFUSAL.format(track=track.id, open="fashion-n100", s1="fashion-n100-sealed")
    for load in (load_target_model, load_splits, pool, members):
        with pytest.raises(TrackError) as caught:
            load(track)
        assert str(caught.value) == refusal
    assert len(public_pool(track)) > 4_860  # the public images (the whole block among them) need no key
    with opening(master):
        model = load_target_model(track)
        splits = v2_splits(track)
        inside = members(track)
    assert splits.target.sha256 == pool(track, master).sha256 and splits.holdout is None
    assert model(splits.target.as_float()[:2]).shape == (2, 10)
    assert (np.bincount(splits.target.labels) == 20).all() and inside.sum() == 100
    assert (np.bincount(splits.target.labels[inside]) == 10).all()
    # not the block's first 2n: the pool spreads over the block, and the draws differ
    block = sealed_block(track.dataset)
    first = set(map(bytes, sealed_pool(track.dataset, 100).images.reshape(200, -1)))
    mine = set(map(bytes, splits.target.images.reshape(200, -1)))
    assert len(mine & first) < 40  # 200 of 4,860 drawn at random: about 8 in the first 200
    assert set(map(bytes, block.images.reshape(len(block), -1))) >= mine  # all from the block
    other = member_set(get_track(f"{GROUP}-d1"), master)
    assert len(set(map(bytes, other.images.reshape(100, -1))) & set(map(bytes, member_set(track, master).images.reshape(100, -1)))) < 20
    # after the reveal the season key alone opens it; the board's key of another season (or another board) does not
    with opening_season(SEASON_V2, season_key(master, SEASON_V2)):
        assert (members(track) == inside).all()
        load_target_model(track)
    with opening(_key()), pytest.raises(SealError, match="does not open the published commitment"):
        load_target_model(track)
    with opening(_key()), pytest.raises(SealError, match="does not open"):
        members(track)


def test_a_swapped_or_changed_ciphertext_is_one_clear_error(on_season, tmp_path, monkeypatch):
    from reconbench.core.sealed_weights import opening
    from reconbench.core.tracks import TrackError, get_track
    from reconbench.image.track_files import load_target_model

    home, master = on_season
    data = tmp_path / "data"
    shutil.copytree(home / "data", data)
    monkeypatch.setattr("reconbench.image.sealed.sealed_path", lambda name: data / name)
    d0, d1 = get_track(f"{GROUP}-d0"), get_track(f"{GROUP}-d1")
    shutil.copy(data / d1.seal.files["model"].file, data / d0.seal.files["model"].file)  # d1's model as d0's
    with opening(master), pytest.raises(TrackError, match="sealed model file's sha256 is not the"):
        load_target_model(d0)
    # a forged row that pins the swapped file's bytes still cannot open it: another draw's key and label
    files = d0.seal.files | {"model": d0.seal.files["model"].model_copy(update={"sha256": d1.seal.files["model"].sha256})}
    forged = d0.model_copy(update={"seal": d0.seal.model_copy(update={"files": files})})
    with opening(master), pytest.raises(SealError, match=f"this key does not open it as '{d0.id}/model'"):
        load_target_model(forged)
    # a row whose plaintext hash is not the decrypted file's
    shutil.copy(home / "data" / d0.seal.files["model"].file, data / d0.seal.files["model"].file)
    files = d0.seal.files | {"model": d0.seal.files["model"].model_copy(update={"plain_sha256": "0" * 64})}
    forged = d0.model_copy(update={"seal": d0.seal.model_copy(update={"files": files})})
    with opening(master), pytest.raises(SealError, match="decrypted model .* is not the 0000"):
        load_target_model(forged)


def test_a_v2_update_twin_opens_its_observation_only_in_the_boards_run(on_season):
    from reconbench.core.sealed_weights import opening
    from reconbench.core.tracks import TrackError, get_track
    from reconbench.image.dynamic import observed_update
    from reconbench.image.sealed import member_set
    from reconbench.image.sealed_scores import observation_matches
    from reconbench.image.track_files import load_target_model

    home, master = on_season
    track = get_track(f"{UPDATE}-d0")
    before = load_target_model(track)  # the open twin's model: public
    with pytest.raises(TrackError, match="this draw's model is sealed"):
        observed_update(track, before)
    with opening(master):
        seen, after = observed_update(track, before)
        assert seen.batch_sizes == (8,) and observation_matches(track, master)
        assert len(member_set(track)) == 8


def test_evaluate_on_a_v2_twin_or_draw_is_refused_in_one_line_before_any_attack(on_season, tmp_path):
    from typer.testing import CliRunner

    from reconbench.cli import app
    from reconbench.core.console import suggest
    from reconbench.core.signing import generate_key

    generate_key(tmp_path / "me.pem")
    for given in (GROUP, f"{GROUP}-d1"):
        out = tmp_path / given
        res = CliRunner().invoke(app, ["evaluate", "--track", given, "--attack", "deepdream", "--budget", "quick",
                                       "--out", str(out), "--key", str(tmp_path / "me.pem"), "--quiet"])
        assert res.exit_code != 0
        draw = f"{GROUP}-d0" if given == GROUP else given
        said = REFUSAL.format(track=draw, open="fashion-n100", s1="fashion-n100-sealed")
        assert " ".join(res.output.split()) == "error: " + " ".join(suggest(said).split())
        assert not out.exists()


def test_reveal_publishes_the_season_key_and_verify_decrypts_and_checks_every_file(on_season, tmp_path, monkeypatch):
    from reconbench.submissions.seal_reveal import read_reveal, reveal, verify

    home, master = on_season
    with pytest.raises(SealError, match="does not open"):
        reveal(_key(), SEASON_V2, tmp_path / "wrong.json")
    document = reveal(master, SEASON_V2, tmp_path / "reveal.json")
    text = (tmp_path / "reveal.json").read_text()
    assert master.hex() not in text and season_key(master, SEASON_V2).hex() in text and len(document["commitments"]) == 3
    key, season = read_reveal(tmp_path / "reveal.json")
    calls = []
    opened, checked = verify(key, season, tmp_path / "submissions",
                             hooks=[lambda k, s, root, tracks: calls.append((k, s, sorted(tracks))) or []])
    assert set(opened) == {f"{GROUP}-d0", f"{GROUP}-d1", f"{UPDATE}-d0"}
    assert sorted(v.entry for v in checked) == sorted([f"{GROUP}-d0 model", f"{GROUP}-d1 model", f"{UPDATE}-d0 gradients",
                                                       f"{UPDATE}-d0 updated_model", f"{UPDATE}-d0 observation"])
    assert all(v.ok for v in checked), checked
    assert calls == [(key, SEASON_V2, sorted(opened))]  # the board's run records are the hooks' to recompute
    # a changed byte in a shipped file: verify says which file fails
    data = tmp_path / "data"
    shutil.copytree(home / "data", data)
    monkeypatch.setattr("reconbench.image.sealed.sealed_path", lambda name: data / name)
    from reconbench.core.tracks import get_track

    target = data / get_track(f"{GROUP}-d1").seal.files["model"].file
    target.write_bytes(target.read_bytes()[:-1] + bytes([target.read_bytes()[-1] ^ 1]))
    _, checked = verify(key, season, tmp_path / "submissions")
    assert [v.entry for v in checked if not v.ok] == [f"{GROUP}-d1 model"]


def test_a_v1_season_sealed_with_the_boards_key_is_revealed_by_its_draws_openings_never_the_key(
        season, tmp_path, monkeypatch):
    """Season 2026-s1 (v1) was sealed with the board's key itself, from which 2026-s2's key derives: its reveal
    publishes each draw's seed and nonce, which open its commitments (and verify recomputes), never the key."""
    from reconbench.core.seal import DrawOpenings, commitment, draw_members
    from reconbench.core.tracks import get_track
    from reconbench.image.sealed import members, pool
    from reconbench.submissions.seal_reveal import read_reveal, reveal, verify

    home, master, registry = season
    rows = json.loads(registry.read_text())["tracks"]
    old = next(r for r in rows if r["id"] == "fashion-n100-sealed-d0")
    group = "fashion-n100-sealed-old"
    labels = pool(get_track("fashion-n100-sealed-d0")).labels
    seal = old["seal"] | {"group": group, "season": "old", "commitment": commitment(
        master, group, 0, old["seal"]["pool_sha256"], draw_members(master, group, 0, labels))}
    mixed = tmp_path / "registry.json"
    mixed.write_text(json.dumps({"schema_version": 1, "tracks": rows + [old | {"id": f"{group}-d0", "seal": seal}]}))
    monkeypatch.setenv("RECONBENCH_REGISTRY", str(mixed))
    with pytest.raises(SealError, match="does not open"):
        reveal(_key(), "old", tmp_path / "wrong.json")
    reveal(master, "old", tmp_path / "old.json")
    text = (tmp_path / "old.json").read_text()
    assert master.hex() not in text and season_key(master, SEASON_V2).hex() not in text and '"key"' not in text
    opened, season_name = read_reveal(tmp_path / "old.json")
    assert isinstance(opened, DrawOpenings) and season_name == "old"
    track = get_track(f"{group}-d0")
    assert (members(track, opened) == members(track, master)).all()
    assert verify(opened, "old", tmp_path / "submissions")[0] == {track.id: seal["commitment"]}
    with pytest.raises(SealError, match="do not include it"):  # they open that season's draws only
        draw_members(opened, group, 1, labels)


def test_the_committed_season_ships_only_ciphertext_and_hashes_that_bind_it():
    """The 35 rows of season 2026-s2 as committed, checked without the key."""
    from reconbench.core.io import sha256_file
    from reconbench.core.seasons import burned, seasons
    from reconbench.core.tracks import all_tracks, embedded_file, get_track
    from reconbench.image.data.fashion_splits import sealed_block, sealed_pool
    from reconbench.image.models.sealed_registry import DRAWS, per_class_counts, season_group

    assert seasons()[SEASON_V2]["status"] == "sealed" and seasons()[SEASON_V2]["scheme"] == "v2" and not burned(SEASON_V2)
    assert burned("2026-s1")
    v2 = [t for t in all_tracks() if t.seal is not None and t.seal.season == SEASON_V2]
    assert {t.seal.group for t in v2} == {season_group(twin, SEASON_V2) for twin in SEALED.values()}
    assert len(v2) == DRAWS * len(SEALED) and {t.seal.scheme for t in v2} == {"v2"}
    assert len({t.seal.commitment for t in v2}) == len(v2) and len({t.seal.record_signer for t in v2}) == 1
    shipped = sorted((embedded_file("fashion/sealed")).iterdir())
    assert not [p.name for p in shipped if "-s2-" in p.name and not p.name.endswith(".sealed")]  # no plaintext
    s1_models = {sha256_file(p) for p in shipped if p.suffix == ".safetensors"}
    for t in v2:
        twin = SEALED[t.seal.group.removesuffix("-s2")]
        assert t.seal.pool_sha256 is None and t.target_set_sha256 is None and t.update_set_sha256 is None
        assert t.holdout_set_sha256 is None and t.update_holdout_set_sha256 is None
        assert t.seal.block_sha256 == sealed_block(t.dataset).sha256
        assert t.seal.per_class == per_class_counts(twin) and t.seal.pool_size == 2 * (twin.update_size or t.train_size)
        # a 2026-s1 pool's hash is nowhere in the row (the s2 pool is not the block's first 2n, and is not published)
        assert sealed_pool(t.dataset, t.seal.pool_size // 2).sha256 not in json.dumps(t.model_dump(mode="json"))
        for role, pinned in t.seal.files.items():
            path = embedded_file(pinned.file)
            assert path.read_bytes().startswith(b"RECONBENCH-SEALED-1\n") and sha256_file(path) == pinned.sha256
            assert pinned.plain_sha256 not in s1_models and pinned.plain_sha256 != pinned.sha256
        if twin.update_size:  # the model before the update is the open twin's, public
            assert set(t.seal.files) == {"gradients", "updated_model"}
            assert t.target_model_sha256 == get_track(twin.open_twin).target_model_sha256
        else:
            assert set(t.seal.files) == {"model"} and t.source is None
            assert t.target_model_sha256 == t.seal.files["model"].plain_sha256


def test_tracks_calls_the_burned_twins_practice_draws_and_the_new_ones_board_run(tmp_path):
    from typer.testing import CliRunner

    from reconbench.cli import app
    from reconbench.core.sealed_next import ran_line

    res = CliRunner().invoke(app, ["tracks"], env={"COLUMNS": "250"})
    flat = " ".join(res.output.split())
    assert res.exit_code == 0 and "fashion-n100-sealed-s2" in flat and "fashion-n100-sealed " in flat
    assert "practice draws (season 2026-s1, burned: membership public)" in flat
    assert "board-run (the board runs your attack:" in flat and "seal run)" in flat
    assert "evaluate --track fashion-n100-sealed --draws 1" in flat  # the try-one command names a practice twin
    # evaluate's closing line on practice draws: still what the first-hour walk reads, and what they are
    line = ran_line(["fashion-n100-sealed-d0"])
    assert re.search(r"sealed twin fashion-n100-sealed: 1 of 5 draws ran", line) and "Next: submit each draw's folder" in line
    assert "scored by CI's keyed validation after your pull request" in line and "revealed after 2027-03-01" in line
    assert "practice draws (season 2026-s1, burned: membership public): their numbers give no verdict" in line
