"""The zoo end to end against the local Hub-compatible server: prepare (digits stand-in) -> train
(tiny budget) -> publish -> pin in a registry copy -> evaluate from a clean cache -> offline rerun;
and every way the pins must refuse bytes that changed."""

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hubserver import point_huggingface_hub_at
from reconbench.cli import app
from reconbench.core.console import invoked_as
from reconbench.image.evaluation import evaluate
from reconbench.core.hub import HubError
from reconbench.core.io import sha256_file
from reconbench.image.knowledge import build_knowledge
from reconbench.core.scenario import Scenario
from reconbench.core.signing import generate_key
from reconbench.core.tracks import REGISTRY_ENV, TrackError, get_track
from reconbench.image.track_files import load_splits, model_file
from reconbench.zoo import ZooError
from reconbench.zoo.prepare import prepare_dataset
from reconbench.zoo.publish import publish_track
from reconbench.zoo.targets import Overrides, train_track

TRACK = "digits-small-cnn-n100"
ORG = "reconbench-test"
MODEL_REPO, DATA_REPO = f"{ORG}/{TRACK}", f"{ORG}/reconbench-digits"
runner = CliRunner()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Prepared digits data and a small CNN trained for 3 epochs on its 100-image target set."""
    root = tmp_path_factory.mktemp("zoo")
    data = root / "data"
    prepare_dataset("digits", data)
    train_track(TRACK, data, root / "model", overrides=Overrides(epochs=3))
    return data, root / "model"


@pytest.fixture
def published(built, hub_server, tmp_path, monkeypatch):
    """The track published to the local server, pinned in a copy of the packaged registry."""
    data, model = built
    registry = tmp_path / "tracks.json"
    shutil.copyfile(Path(__file__).parents[1] / "toolkit/reconbench/registry/tracks.json", registry)
    res = runner.invoke(app, ["hub", "publish", TRACK, "--org", ORG, "--model-dir", str(model), "--data", str(data),
                              "--registry", str(registry)])
    assert res.exit_code == 0, res.output
    monkeypatch.setenv(REGISTRY_ENV, str(registry))
    return registry


def gets(server, name: str) -> int:
    return sum(1 for m, p in server.requests if m == "GET" and p.endswith("/" + name))


def test_publish_pins_revisions_and_hashes_and_keeps_other_entries(published, built, hub_server):
    data, model = built
    tracks = json.loads(published.read_text())["tracks"]
    packaged = json.loads((Path(__file__).parents[1] / "toolkit/reconbench/registry/tracks.json").read_text())["tracks"]
    assert tracks[:len(packaged)] == packaged  # the digits entries are untouched
    entry = get_track(TRACK)
    assert entry.status == "published" and entry.dataset == "digits"
    src = entry.source
    assert src.model_repo == MODEL_REPO and src.data_repo == DATA_REPO
    assert src.model_revision == hub_server.store.resolve("model", MODEL_REPO, "main")
    assert src.data_revision == hub_server.store.resolve("dataset", DATA_REPO, "main")
    assert src.files["model.safetensors"] == sha256_file(model / "model.safetensors") == entry.target_model_sha256
    for name in ("target-n100", "update", "aux_same", "test"):
        assert src.files[f"{name}.safetensors"] == sha256_file(data / f"{name}.safetensors")
    assert "static/white-box/none" in entry.scenarios and not any(s.endswith("/similar") for s in entry.scenarios)
    assert entry.recipe.startswith("recon-submit data prepare digits && recon-submit targets train digits-small-cnn-n100")
    # publishing again replaces the entry (no duplicate) and the server keeps the older commit
    res = runner.invoke(app, ["hub", "publish", TRACK, "--org", ORG, "--model-dir", str(model), "--data", str(data),
                              "--registry", str(published)])
    assert res.exit_code == 0, res.output
    assert [t["id"] for t in json.loads(published.read_text())["tracks"]].count(TRACK) == 1


def test_model_card_has_yaml_metadata(published, built, hub_server):
    store = hub_server.store
    commit = store.resolve("model", MODEL_REPO, "main")
    files = store.files("model", MODEL_REPO, commit)
    assert {"model.safetensors", "config.json", "README.md"} <= set(files)
    card = store.blob("model", MODEL_REPO, files["README.md"]).read_text()
    meta = yaml.safe_load(card.split("---\n")[1])
    config = json.loads((built[1] / "config.json").read_text())
    assert meta["license"] == "cc-by-4.0" and meta["datasets"] == [DATA_REPO]
    facts = meta["reconbench"]
    assert facts["train_size"] == 100 and facts["dataset"] == "digits"
    assert facts["test_accuracy"] == config["test_accuracy"] and facts["memorization"] is None
    assert facts["recipe"][1] == "recon-submit targets train digits-small-cnn-n100 --epochs 3"
    assert facts["data_revision"] == store.resolve("dataset", DATA_REPO, "main")
    dfiles = store.files("dataset", DATA_REPO, facts["data_revision"])
    assert {"manifest.json", "README.md", "target-n50.safetensors", "target-n200.safetensors"} <= set(dfiles)


def test_evaluate_from_clean_cache_then_offline(published, hub_server, tmp_path, monkeypatch):
    key, _ = generate_key(tmp_path / "key.pem")
    out = evaluate(track_id=TRACK, attack_spec="mi-face", config={"iterations": 20}, key_path=key,
                   out=tmp_path / "run1", command="test")
    payload = out.result.payload
    entry = get_track(TRACK)
    assert payload.track == TRACK and payload.reconstructions.count == 100
    assert payload.target.model_sha256 == entry.target_model_sha256
    assert payload.target.target_set_sha256 == entry.target_set_sha256
    # only what the white-box/no-data view and the metrics need was fetched, each once
    assert gets(hub_server, "model.safetensors") == 1 and gets(hub_server, "target-n100.safetensors") == 1
    for name in ("aux_same", "update", "test", "target-n50", "target-n200"):
        assert gets(hub_server, f"{name}.safetensors") == 0, name
    # offline now: the server is gone and huggingface_hub may not reach anything
    hub_server.stop()
    point_huggingface_hub_at(monkeypatch, endpoint="http://127.0.0.1:9", offline=True,
                             home=Path(os.environ["HF_HOME"]))
    again = evaluate(track_id=TRACK, attack_spec="mi-face", config={"iterations": 20}, key_path=key,
                     out=tmp_path / "run2", command="test")
    assert again.result.payload.reconstructions.sha256 == payload.reconstructions.sha256


def test_knowledge_view_never_fetches_the_target_set(published, hub_server):
    track = get_track(TRACK)
    k = build_knowledge(track, Scenario.parse("static/black-box/same"))
    assert len(k.aux_data) == 1247
    assert gets(hub_server, "aux_same.safetensors") == 1 and gets(hub_server, "model.safetensors") == 1
    assert gets(hub_server, "target-n100.safetensors") == 0 and gets(hub_server, "test.safetensors") == 0
    k = build_knowledge(track, Scenario.parse("dynamic/white-box/none"))
    assert gets(hub_server, "update.safetensors") == 1 and gets(hub_server, "target-n100.safetensors") == 0
    assert k.target_size == 50


def test_changed_byte_on_the_server_is_caught(published, hub_server, tmp_path):
    hub_server.corrupt(MODEL_REPO, "model.safetensors")
    key, _ = generate_key(tmp_path / "key.pem")
    with pytest.raises(HubError, match="sha256 mismatch"):
        evaluate(track_id=TRACK, attack_spec="mi-face", config={"iterations": 5}, key_path=key, out=tmp_path / "r")
    hub_server.corrupt(DATA_REPO, "target-n100.safetensors", repo_type="dataset")
    with pytest.raises(HubError, match="target-n100.safetensors: sha256 mismatch"):
        load_splits(get_track(TRACK), ["target"])


def test_a_registry_pin_that_does_not_match_the_bytes_is_refused(published, hub_server):
    doc = json.loads(published.read_text())
    entry = next(t for t in doc["tracks"] if t["id"] == TRACK)
    entry["source"]["files"]["model.safetensors"] = "0" * 64
    published.write_text(json.dumps(doc))
    with pytest.raises(HubError, match="sha256 mismatch"):
        model_file(get_track(TRACK))
    del entry["source"]["files"]["model.safetensors"]
    published.write_text(json.dumps(doc))
    with pytest.raises(TrackError, match="pins no sha256"):
        model_file(get_track(TRACK))


def test_publish_refuses_data_the_model_was_not_trained_on(built, hub_server, tmp_path):
    data, model = built
    other = tmp_path / "other-data"
    shutil.copytree(data, other)
    manifest = json.loads((other / "manifest.json").read_text())
    manifest["recipe"] += " (edited)"
    (other / "manifest.json").write_text(json.dumps(manifest))
    registry = tmp_path / "r.json"
    with pytest.raises(ZooError, match="not the data the model was trained on"):
        publish_track(TRACK, ORG, model_dir=model, data_dir=other, registry=registry)
    assert not registry.exists() and hub_server.requests == []
    changed = tmp_path / "changed-data"
    shutil.copytree(data, changed)
    (changed / "test.safetensors").write_bytes(b"x")
    with pytest.raises(ZooError, match="test.safetensors: missing or not the file manifest.json lists"):
        publish_track(TRACK, ORG, model_dir=model, data_dir=changed, registry=registry)
    res = runner.invoke(app, ["hub", "publish", TRACK, "--org", ORG, "--data", str(data), "--registry", str(registry),
                              "--model-dir", str(tmp_path / "missing")])
    assert res.exit_code == 1 and f"run `{invoked_as()} targets train` first" in res.output.replace("\n", "")
    assert not registry.exists() and hub_server.requests == []


def test_packaged_registry_takes_only_the_tracks_own_recipe(built, hub_server, tmp_path, monkeypatch):
    import reconbench.zoo.publish as publish

    packaged = tmp_path / "zoo.json"  # stands in for registry/zoo.json, which a test must never write
    monkeypatch.setattr(publish, "zoo_registry_path", lambda: packaged)
    data, model = built
    with pytest.raises(ZooError, match="trained with a changed recipe .*--epochs 3"):
        publish_track(TRACK, ORG, model_dir=model, data_dir=data)
    assert not packaged.exists() and hub_server.requests == []
