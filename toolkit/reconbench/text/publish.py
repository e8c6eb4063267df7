"""Publish a trained text track: the data repo and the model repo, then its pinned registry row.

    1. check the local files: config.json names this track and the manifest it was trained on; every
       split and model file's sha256 matches what the manifest / config.json say;
    2. upload the splits (+ card) to <org>/reconbench-text-<dataset>, both models (+ card) to <org>/<track>;
    3. write the track's row, now `published`, with both commits and every sha256, into the registry
       file (registry/text_tracks.json by default), re-read right before the atomic write.
Nothing is written to the registry unless both uploads succeeded; the packaged registry only takes
models trained by the track's own recipe from the pinned bases.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from reconbench.core.io import sha256_file
from reconbench.text.finetune import CONFIG_FILE, read_track_config, recipe_overridden
from reconbench.text.grid import parse_text_track_id, registry_row
from reconbench.text.zoo import MANIFEST, load_prepared_split, read_text_manifest, target_split
from reconbench.zoo import ZooError


def data_repo_id(org: str, dataset: str) -> str:
    return f"{org}/reconbench-text-{dataset}"


def _check_local(track_id: str, model_dir: Path, data_dir: Path) -> tuple[dict, dict]:
    config, manifest = read_track_config(model_dir), read_text_manifest(data_dir)
    if config["track"] != track_id:
        raise ZooError(f"{model_dir / CONFIG_FILE}: trained for track '{config['track']}', not '{track_id}'")
    if sha256_file(Path(data_dir) / MANIFEST) != config["data"]["manifest_sha256"]:
        raise ZooError(f"{Path(data_dir) / MANIFEST}: not the data the models were trained on (manifest sha256 "
                       f"differs from {model_dir / CONFIG_FILE})")
    for split in manifest["splits"]:
        load_prepared_split(data_dir, split, manifest)
    for role in ("generator", "embedder"):
        for name, sha in config[role]["files"].items():
            path = Path(model_dir) / name
            if not path.is_file() or sha256_file(path) != sha:
                raise ZooError(f"{path}: missing or not the file {CONFIG_FILE} lists")
    return config, manifest


def _stage(folder: Path, files: dict[str, Path], texts: dict[str, str]) -> None:
    for name, src in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, folder / name)
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")


def publish_text_track(track_id: str, org: str, *, model_dir: Path, data_dir: Path, registry: Path | None = None,
                       token: str | None = None, endpoint: str | None = None) -> dict:
    """Upload the track's data and both models, then pin them in `registry`; returns the registry row."""
    from reconbench.core.hub import publish_folder
    from reconbench.text.cards import text_dataset_card, text_model_card
    from reconbench.text.tracks import TextRegistry, text_registry_path
    from reconbench.zoo.registry_file import upsert_track

    spec, size = parse_text_track_id(track_id)
    model_dir, data_dir = Path(model_dir), Path(data_dir)
    config, manifest = _check_local(track_id, model_dir, data_dir)
    if registry is None and recipe_overridden(config):  # the packaged registry takes the recipe as pinned only
        raise ZooError(f"{model_dir / CONFIG_FILE}: trained with a changed recipe or base ({config['command']}); "
                       "retrain without overrides, or pin it in a copy with --registry PATH")
    data_repo, model_repo = data_repo_id(org, spec.name), f"{org}/{track_id}"
    with tempfile.TemporaryDirectory(prefix="reconbench-publish-") as tmp:
        stage = Path(tmp) / "data"
        stage.mkdir()
        split_files = {e["file"]: data_dir / e["file"] for e in manifest["splits"].values()}
        _stage(stage, {**split_files, MANIFEST: data_dir / MANIFEST},
               {"README.md": text_dataset_card(manifest, repo_id=data_repo)})
        data_revision = publish_folder(stage, data_repo, repo_type="dataset", token=token, endpoint=endpoint,
                                       commit_message=f"ReconBench text data: {spec.name} ({manifest['recipe']})")
        stage = Path(tmp) / "model"
        stage.mkdir()
        files = {n: model_dir / n for role in ("generator", "embedder") for n in config[role]["files"]}
        card = text_model_card(config, data_repo=data_repo, data_revision=data_revision, prepare=manifest["recipe"])
        _stage(stage, {**files, CONFIG_FILE: model_dir / CONFIG_FILE}, {"README.md": card})
        model_revision = publish_folder(stage, model_repo, repo_type="model", token=token, endpoint=endpoint,
                                        commit_message=f"ReconBench text targets: {track_id} ({config['command']})")

    splits = manifest["splits"]
    names = {"target": target_split(size), "aux": "aux", "test": "test"}
    row = registry_row(spec, size)
    row.update({
        "status": "published",
        "source": {"kind": "hub", "model_repo": model_repo, "model_revision": model_revision,
                   "data_repo": data_repo, "data_revision": data_revision,
                   "files": {splits[s]["file"]: splits[s]["sha256"] for s in names.values()}},
        "split_sizes": {p: splits[s]["count"] for p, s in names.items()},
        "splits_sha256": {p: splits[s]["sha256"] for p, s in names.items()},
    })
    for role in ("generator", "embedder"):
        done = config[role]
        row[role].update({"config": done["recipe"], "files": done["files"], "measured": done["measured"],
                          "base": f"{done['base']['repo']}@{done['base']['revision']}",
                          "recipe": f"{manifest['recipe']} && {config['command']}"})
    upsert_track(registry or text_registry_path(), row, TextRegistry)
    return row
