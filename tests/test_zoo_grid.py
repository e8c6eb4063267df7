"""The SoK grid in the registry: generated (not typed), listed with its status, refused until published."""

import json

import pytest
from typer.testing import CliRunner

from reconbench.core import tracks
from reconbench.cli import app
from reconbench.core.io import FileFormatError
from reconbench.core.tracks import Track, TrackError, all_tracks, get_track
from reconbench.zoo import ZooError
from reconbench.zoo.grid import parse_track_id, regenerated, registry_entry, sok_grid, zoo_registry_path
from reconbench.zoo.registry_file import read_registry_file, upsert_track

runner = CliRunner()


def test_grid_covers_the_sok_benchmark():
    grid = sok_grid()
    ids = [s.id for s in grid]
    assert len(ids) == len(set(ids)) == 69
    assert all(parse_track_id(i) == s for i, s in zip(ids, grid, strict=True))
    base = [s for s in grid if s.variant is None]
    assert {(s.dataset, s.architecture) for s in base} == {(d, a) for d in ("celeba", "cifar10", "mnist")
                                                             for a in ("vgg16", "resnet18")}
    assert sorted(s.size for s in base if s.dataset == "celeba" and s.architecture == "vgg16") == \
        [1000, 2000, 5000, 10000, 15000, 20000]
    assert sorted(s.size for s in base if s.dataset == "mnist" and s.architecture == "vgg16")[:2] == [100, 1000]
    variants = {}
    for s in grid:
        if s.variant:
            variants.setdefault(s.variant, []).append(s.size)
    assert variants["bottleneck512"] == variants["bottleneck128"] == [1000, 20000]
    assert variants["backdoor"] == [20000] and len(variants["dp"]) == len(variants["prune"]) == 6
    assert "cifar10-vgg16-n1000" in ids and "celeba-vgg16-n20000-backdoor" in ids


def test_packaged_zoo_registry_is_the_generated_grid():
    current = read_registry_file(zoo_registry_path())
    assert current == regenerated(current)  # `python -m reconbench.zoo.grid` has nothing to change
    res = runner.invoke(app, ["targets", "grid", "--check"])
    assert res.exit_code == 0 and "up to date" in res.output


def test_grid_entries_are_listed_and_refuse_to_run_until_published():
    by_id = {t.id: t for t in all_tracks()}
    assert {"digits", "digits-mlp"} <= set(by_id)  # tracks.json entries are still there
    track = by_id["cifar10-vgg16-n1000"]
    assert track.status == "unpublished" and track.train_size == 1000 and track.input_shape == (3, 32, 32)
    assert "static/white-box/similar" in track.scenarios
    assert get_track("celeba-vgg16-n1000-bottleneck128").arch_kwargs["bottleneck"] == 128
    with pytest.raises(TrackError, match="not published yet"):
        track.require_runnable()
    res = runner.invoke(app, ["tracks", "--all"], env={"COLUMNS": "250"})
    assert res.exit_code == 0
    assert "cifar10-vgg16-n1000" in res.output and "unpublished" in res.output and "embedded" in res.output
    res = runner.invoke(app, ["evaluate", "--track", "cifar10-vgg16-n1000", "--attack", "mi-face"])
    assert res.exit_code == 1 and "not published yet" in res.output


def test_regenerating_keeps_published_entries():
    current = read_registry_file(zoo_registry_path())
    published = dict(current["tracks"][0], status="published", train_accuracy=0.5)
    extra = dict(registry_entry(parse_track_id("digits-small-cnn-n50")), status="published")
    new = regenerated({"tracks": [published, extra] + current["tracks"][1:]})
    assert new["tracks"][0] == published and new["tracks"][-1] == extra
    assert len(new["tracks"]) == 70


def test_zoo_file_beside_tracks_json_is_merged_and_clashes_refused(tmp_path, monkeypatch):
    monkeypatch.delenv(tracks.REGISTRY_ENV, raising=False)
    monkeypatch.setattr(tracks, "registry_path", lambda: tmp_path / "tracks.json")
    digits = json.loads((zoo_registry_path().with_name("tracks.json")).read_text())
    (tmp_path / "tracks.json").write_text(json.dumps(digits))
    (tmp_path / "zoo.json").write_text(json.dumps({"schema_version": 1, "tracks": [
        registry_entry(parse_track_id("mnist-vgg16-n100"))]}))
    assert [t.id for t in all_tracks()] == [t["id"] for t in digits["tracks"]] + ["mnist-vgg16-n100"]
    clash = dict(registry_entry(parse_track_id("mnist-vgg16-n100")), id="digits")
    (tmp_path / "zoo.json").write_text(json.dumps({"schema_version": 1, "tracks": [clash]}))
    with pytest.raises(TrackError, match="also in tracks.json: digits"):
        all_tracks()
    monkeypatch.setenv(tracks.REGISTRY_ENV, str(tmp_path / "tracks.json"))  # an override is the whole registry
    assert [t.id for t in all_tracks()] == [t["id"] for t in digits["tracks"]]


def test_upsert_replaces_one_entry_and_refuses_invalid_ones(tmp_path):
    path = tmp_path / "r.json"
    a, b = (registry_entry(parse_track_id(i)) for i in ("mnist-vgg16-n100", "mnist-vgg16-n1000"))
    upsert_track(path, a)
    upsert_track(path, b)
    upsert_track(path, dict(a, title="changed"))
    doc = read_registry_file(path)
    assert [t["id"] for t in doc["tracks"]] == [a["id"], b["id"]] and doc["tracks"][0]["title"] == "changed"
    Track.model_validate(doc["tracks"][1])
    before = path.read_bytes()
    with pytest.raises(FileFormatError, match="refusing to write an invalid registry"):
        upsert_track(path, dict(a, status="shipped"))
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["r.json"]


@pytest.mark.parametrize("bad", ["cifar10-vgg16", "cifar10-vgg19-n1000", "cifar10-vgg16-n123", "imagenet-vgg16-n100",
                                 "cifar10-vgg16-n1000-unknown"])
def test_bad_track_ids_are_refused(bad):
    with pytest.raises(ZooError):
        parse_track_id(bad)


def test_gpu_estimate_counts_every_image_pass_of_the_recipe():
    from reconbench.zoo.estimate import BATCH, CELEBA_AUX_IMAGES, DP_FACTOR, STEP_FLOOR_S, gpu_hours, steps

    spec = parse_track_id
    assert steps(spec("cifar10-vgg16-n1000")) == 50 * 1000 / BATCH  # KEDMI: 50 epochs
    assert steps(spec("celeba-vgg16-n20000-backdoor")) == pytest.approx(50 * 22000 / BATCH)  # + 10% poisoned copies
    assert steps(spec("celeba-vgg16-n1000-prune")) == (50 + 10) * 1000 / BATCH  # + retraining, epochs // 5
    assert steps(spec("celeba-vgg16-n1000-dp")) == DP_FACTOR * 50 * 1000 / BATCH
    assert steps(spec("celeba-vgg16-n1000-pretrained")) == 50 * (1000 + CELEBA_AUX_IMAGES) / BATCH
    tiny = {("mnist", "vgg16", None): 1.0}  # 1 FLOP per step: the launch floor decides
    train, mem = gpu_hours(spec("mnist-vgg16-n1000"), tiny)
    assert train == pytest.approx(steps(spec("mnist-vgg16-n1000")) * STEP_FLOOR_S / 3600) and mem == pytest.approx(70 * train)
