"""The text zoo end to end against the local Hub-compatible server, with stand-ins: a tiny parquet
dataset repo, a 2-layer GPT-2 and a 2-layer gtr-t5 as the bases -> prepare -> fine-tune -> publish ->
pin in a registry copy -> load from a clean cache through text/files.py -> offline rerun; and every
way the pins must refuse bytes that changed."""

import json
import os
import shutil
from pathlib import Path

import pytest
import torch
import yaml
from typer.testing import CliRunner

from hubserver import point_huggingface_hub_at, serving
from reconbench.cli import app
from reconbench.core.hub import HubError
from reconbench.core.io import FileFormatError, sha256_file
from reconbench.text import files
from reconbench.text.finetune import TextOverrides, train_text_track
from reconbench.text.grid import TEXT_DATASETS, TextDatasetSpec
from reconbench.text.gtr import load_gtr_folder
from reconbench.text.tracks import TEXT_REGISTRY_ENV, get_text_track
from reconbench.text.publish import publish_text_track
from reconbench.text.zoo import load_prepared_split, prepare_text_dataset
from reconbench.core.tracks import TrackError
from reconbench.zoo import ZooError
from text_standins import gpt2_base_folder, gtr_base_folder, toy_texts, write_parquet_dataset

ORG = "reconbench-test"
TOY = TextDatasetSpec("toy", "toy sentences", f"{ORG}/toy-texts", "data/train-00000-of-00001.parquet",
                      "data/test-00000-of-00001.parquet", "sentence", "test data", sizes=(8, 16), aux_max=12, test_max=6)
TRACK = "toy-n16"
MODEL_REPO, DATA_REPO = f"{ORG}/{TRACK}", f"{ORG}/reconbench-text-toy"
BASES = {"generator": {"repo": f"{ORG}/gpt2-standin", "revision": None,
                       "files": {"config.json": None, "model.safetensors": None, "tokenizer.json": None}},
         "embedder": {"repo": f"{ORG}/gtr-standin", "revision": None,
                      "files": {n: None for n in ("config.json", "model.safetensors", "tokenizer.json",
                                                  "2_Dense/config.json", "2_Dense/model.safetensors")}}}
runner = CliRunner()


def _folder_bytes(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Stand-in sources on a server of their own; the toy dataset prepared from it and both targets
    fine-tuned for 2 epochs. The toy spec stays registered for the module."""
    root = tmp_path_factory.mktemp("text-zoo")
    texts = toy_texts(48)
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(TEXT_DATASETS, "toy", TOY)
        torch.set_num_threads(1)
        with pytest.MonkeyPatch.context() as hub_mp, serving(root, hub_mp) as server:
            src = write_parquet_dataset(root / "src", {TOY.pool_file: texts[:40] + [texts[0], "  ", texts[1]],
                                                       TOY.test_file: texts[40:] + [texts[2]]}, "sentence")
            server.add_files(TOY.repo, _folder_bytes(src), repo_type="dataset")
            server.add_files(BASES["generator"]["repo"], _folder_bytes(gpt2_base_folder(root / "gpt2", texts)))
            server.add_files(BASES["embedder"]["repo"], _folder_bytes(gtr_base_folder(root / "gtr", texts)))
            manifest = prepare_text_dataset("toy", root / "data")
            config = train_text_track(TRACK, root / "data", root / "model", bases=BASES,
                                      overrides=TextOverrides(epochs=2, batch_size=4))
        yield {"data": root / "data", "model": root / "model", "manifest": manifest, "config": config,
               "texts": texts, "src": src}


@pytest.fixture
def published(built, hub_server, tmp_path, monkeypatch):
    registry = tmp_path / "text_tracks.json"
    shutil.copyfile(Path(__file__).parents[1] / "toolkit/reconbench/registry/text_tracks.json", registry)
    res = runner.invoke(app, ["hub", "publish", TRACK, "--org", ORG, "--model-dir", str(built["model"]),
                              "--data", str(built["data"]), "--registry", str(registry)])
    assert res.exit_code == 0, res.output
    monkeypatch.setenv(TEXT_REGISTRY_ENV, str(registry))
    return registry


def gets(server, name: str) -> int:
    return sum(1 for m, p in server.requests if m == "GET" and p.endswith("/" + name))


def test_prepare_cuts_nested_disjoint_deduplicated_splits(built):
    m, data = built["manifest"], built["data"]
    assert m["source"]["repo"] == TOY.repo and len(m["source"]["revision"]) == 40
    assert set(m["source"]["files"]) == {TOY.pool_file, TOY.test_file}
    small, big = (load_prepared_split(data, f"target-n{n}") for n in (8, 16))
    aux, test = load_prepared_split(data, "aux"), load_prepared_split(data, "test")
    assert set(small.ids) < set(big.ids) and len(big) == 16 and len(aux) == 12 and len(test) == 6
    assert not (set(big.texts) & set(aux.texts)) and not (set(big.texts + aux.texts) & set(test.texts))
    assert len(set(big.texts + aux.texts)) == 28 and "" not in big.texts + aux.texts  # repeats and blanks dropped
    assert built["texts"][2] not in test.texts  # a test text that is also in the pool is dropped
    assert all(i.startswith("toy-train-") for i in big.ids) and all(i.startswith("toy-test-") for i in test.ids)
    for split, entry in m["splits"].items():
        assert sha256_file(data / entry["file"]) == entry["sha256"]
    again = prepare_text_dataset("toy", data.parent / "again", built["src"])  # the local copy gives the same splits
    assert {k: v["sha256"] for k, v in again["splits"].items()} == {k: v["sha256"] for k, v in m["splits"].items()}
    with pytest.raises(FileExistsError):
        prepare_text_dataset("toy", data, built["src"])


def test_prepare_refuses_bad_sources(built, tmp_path):
    from text_standins import write_parquet_dataset as write

    few = write(tmp_path / "few", {TOY.pool_file: built["texts"][:10], TOY.test_file: built["texts"][40:]}, "sentence")
    with pytest.raises(ZooError, match="10 usable texts .* 17 needed"):
        prepare_text_dataset("toy", tmp_path / "out", few)
    wrong = write(tmp_path / "wrong", {TOY.pool_file: built["texts"], TOY.test_file: built["texts"]}, "text")
    with pytest.raises(FileFormatError, match="cannot read the text column 'sentence'"):
        prepare_text_dataset("toy", tmp_path / "out", wrong)
    assert not (tmp_path / "out").exists()


def test_publish_pins_both_repos_and_keeps_other_rows(published, built, hub_server):
    rows = json.loads(published.read_text())["tracks"]
    packaged = json.loads((Path(__file__).parents[1] / "toolkit/reconbench/registry/text_tracks.json").read_text())["tracks"]
    assert rows[:len(packaged)] == packaged
    track = get_text_track(TRACK)
    assert track.status == "published" and track.train_size == 16 and track.split_sizes == {"target": 16, "aux": 12, "test": 6}
    src = track.source
    assert src.model_repo == MODEL_REPO and src.data_repo == DATA_REPO
    assert src.model_revision == hub_server.store.resolve("model", MODEL_REPO, "main")
    assert src.data_revision == hub_server.store.resolve("dataset", DATA_REPO, "main")
    config = built["config"]
    for role in ("generator", "embedder"):
        assert track.model(role).files == config[role]["files"]
        assert set(track.model(role).files) >= {f"{role}/model.safetensors", f"{role}/config.json", f"{role}/tokenizer.json"}
        assert track.model(role).base == f"{config[role]['base']['repo']}@{config[role]['base']['revision']}"
        assert track.model(role).config["epochs"] == 2
    assert files.model_sha256(track, "embedder") == sha256_file(built["model"] / "embedder/model.safetensors")
    assert set(track.model("generator").measured) == {"perplexity_target", "perplexity_test"}
    for part, name in (("target", "target-n16"), ("aux", "aux"), ("test", "test")):
        assert track.splits_sha256[part] == built["manifest"]["splits"][name]["sha256"] == src.files[f"{name}.jsonl"]
    card = hub_server.store.blob("model", MODEL_REPO, hub_server.store.files("model", MODEL_REPO, src.model_revision)["README.md"])
    meta = yaml.safe_load(card.read_text().split("---\n")[1])
    assert meta["reconbench"]["data_revision"] == src.data_revision and meta["datasets"] == [DATA_REPO]
    assert meta["reconbench"]["embedder"]["base"]["revision"] == config["embedder"]["base"]["revision"]
    dfiles = hub_server.store.files("dataset", DATA_REPO, src.data_revision)
    assert {"manifest.json", "target-n8.jsonl", "target-n16.jsonl", "aux.jsonl", "test.jsonl"} <= set(dfiles)
    dcard = hub_server.store.blob("dataset", DATA_REPO, dfiles["README.md"]).read_text()
    assert f"`{TOY.repo}` @ `{built['manifest']['source']['revision']}`" in dcard
    res = runner.invoke(app, ["tracks"], env={"COLUMNS": "250"})
    assert res.exit_code == 0 and "toy-n16" in res.output and "published" in res.output


def test_text_commands_dispatch_and_refuse_image_only_options(built, tmp_path):
    res = runner.invoke(app, ["data", "prepare", "toy", "--source", str(built["src"]), "--out", str(tmp_path / "d")])
    assert res.exit_code == 0, res.output
    assert "target-n16" in res.output and "16 texts" in res.output
    assert (tmp_path / "d/aux.jsonl").read_bytes() == (built["data"] / "aux.jsonl").read_bytes()
    res = runner.invoke(app, ["targets", "train", TRACK, "--data", str(tmp_path / "d"), "--width-div", "4"])
    assert res.exit_code == 1 and "for image tracks only" in res.output
    res = runner.invoke(app, ["targets", "train", "toy-n12", "--data", str(tmp_path / "d")])
    assert res.exit_code == 1 and "not a zoo track id" in res.output.replace("\n", "")


def test_load_from_clean_cache_fetches_only_what_is_asked_then_runs_offline(published, built, hub_server, monkeypatch):
    track = get_text_track(TRACK)
    aux = files.load_text_splits(track, ["aux"])["aux"]
    assert len(aux) == 12 and gets(hub_server, "aux.jsonl") == 1
    assert gets(hub_server, "target-n16.jsonl") == 0 and gets(hub_server, "test.jsonl") == 0  # an attacker's view
    emb = files.load_embedder(track)
    local = load_gtr_folder(built["model"] / "embedder")
    probe = built["texts"][:5]
    vectors = emb.encode(probe)
    assert torch.allclose(vectors, local.encode(probe), atol=1e-6) and torch.allclose(vectors.norm(dim=1), torch.ones(5))
    lm = files.load_generator(track)
    prompt = lm.tokenizer(["the film is"], return_tensors="pt")
    assert prompt["input_ids"][0, 0] == lm.tokenizer.eos_token_id  # the bos mark training put before each text
    out = lm.model.generate(**prompt, max_new_tokens=4, do_sample=False, pad_token_id=lm.tokenizer.pad_token_id)
    target = files.load_text_splits(track, ["target"])["target"]
    assert target.sha256 == track.splits_sha256["target"] and gets(hub_server, "target-n16.jsonl") == 1
    # offline now: the server is gone and huggingface_hub may not reach anything
    hub_server.stop()
    point_huggingface_hub_at(monkeypatch, endpoint="http://127.0.0.1:9", offline=True, home=Path(os.environ["HF_HOME"]))
    assert torch.equal(files.load_embedder(track).encode(probe), vectors)
    again = files.load_generator(track).model.generate(**prompt, max_new_tokens=4, do_sample=False,
                                                       pad_token_id=lm.tokenizer.pad_token_id)
    assert torch.equal(again, out)
    assert files.load_text_splits(track, ["target", "aux"])["aux"].sha256 == aux.sha256
    with pytest.raises(HubError, match="test.jsonl: not in the local cache"):
        files.load_text_splits(track, ["test"])


def test_evaluate_complete_on_the_hub_track_from_a_clean_cache_then_offline(published, hub_server, monkeypatch,
                                                                          signing_key, tmp_path):
    from reconbench.text.evaluation import evaluate_text

    first = evaluate_text(track_id=TRACK, attack="complete", budget="quick", key_path=signing_key,
                          out=tmp_path / "run1", command="test")
    payload = first.result.payload
    track = get_text_track(TRACK)
    assert payload.track == TRACK and len(first.items) == 16
    assert payload.target.model_sha256 == files.model_sha256(track, "generator")
    assert payload.target.target_set_sha256 == track.splits_sha256["target"]
    assert gets(hub_server, "generator/model.safetensors") == 1 and gets(hub_server, "embedder/model.safetensors") == 0
    assert gets(hub_server, "aux.jsonl") == 0 and gets(hub_server, "test.jsonl") == 0  # Complete's cells need no data
    hub_server.stop()
    point_huggingface_hub_at(monkeypatch, endpoint="http://127.0.0.1:9", offline=True, home=Path(os.environ["HF_HOME"]))
    again = evaluate_text(track_id=TRACK, attack="complete", budget="quick", key_path=signing_key,
                          out=tmp_path / "run2", command="test")
    assert again.items == first.items


def test_changed_byte_on_the_server_is_caught(published, hub_server):
    track = get_text_track(TRACK)
    hub_server.corrupt(MODEL_REPO, "embedder/model.safetensors")
    with pytest.raises(HubError, match="embedder/model.safetensors: sha256 mismatch"):
        files.load_embedder(track)
    hub_server.corrupt(DATA_REPO, "aux.jsonl", repo_type="dataset")
    with pytest.raises(HubError, match="aux.jsonl: sha256 mismatch"):
        files.load_text_splits(track, ["aux"])


def test_forged_registry_pins_are_refused(published, hub_server):
    doc = json.loads(published.read_text())
    row = next(t for t in doc["tracks"] if t["id"] == TRACK)
    row["generator"]["files"]["generator/model.safetensors"] = "0" * 64
    row["embedder"]["files"] = {"../../etc/passwd": "1" * 64}
    published.write_text(json.dumps(doc))
    track = get_text_track(TRACK)
    with pytest.raises(HubError, match="sha256 mismatch"):
        files.load_generator(track)
    with pytest.raises(TrackError, match="bad embedder file name"):
        files.load_embedder(track)
    del row["source"]["files"]["aux.jsonl"]
    row["source"]["model_revision"] = "main"  # a moving branch is not a pin
    published.write_text(json.dumps(doc))
    track = get_text_track(TRACK)
    with pytest.raises(TrackError, match="pins no sha256 for 'aux.jsonl'"):
        files.load_text_splits(track, ["aux"])
    with pytest.raises(HubError, match="revision must be a full 40-hex commit sha"):
        files.load_generator(track)


def test_publish_refuses_what_it_cannot_vouch_for(built, hub_server, tmp_path, monkeypatch):
    import reconbench.text.tracks as text_tracks

    other = tmp_path / "other-data"
    shutil.copytree(built["data"], other)
    (other / "manifest.json").write_text((other / "manifest.json").read_text().replace("toy sentences", "edited"))
    registry = tmp_path / "r.json"
    with pytest.raises(ZooError, match="not the data the models were trained on"):
        publish_text_track(TRACK, ORG, model_dir=built["model"], data_dir=other, registry=registry)
    model = tmp_path / "model"
    shutil.copytree(built["model"], model)
    (model / "generator/model.safetensors").write_bytes(b"x")
    with pytest.raises(ZooError, match="generator/model.safetensors: missing or not the file config.json lists"):
        publish_text_track(TRACK, ORG, model_dir=model, data_dir=built["data"], registry=registry)
    packaged = tmp_path / "packaged.json"  # stands in for registry/text_tracks.json, which a test must never write
    monkeypatch.setattr(text_tracks, "text_registry_path", lambda: packaged)
    with pytest.raises(ZooError, match="trained with a changed recipe or base .*--epochs 2"):
        publish_text_track(TRACK, ORG, model_dir=built["model"], data_dir=built["data"])
    assert not registry.exists() and not packaged.exists() and hub_server.requests == []
