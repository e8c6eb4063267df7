"""Publish one trained track to the Hub and pin it in a registry file.

    1. check the local files: the model folder's config.json names this track and the data
       manifest it was trained on; every file's sha256 matches what config.json / manifest.json say;
    2. upload the dataset's splits (+ dataset card) to the dataset repo <org>/reconbench-<dataset>;
    3. upload model.safetensors + config.json (+ model card) to the model repo <org>/<track id>;
    4. write the track's entry, now `published`, with both commits and every file's sha256, into the
       registry file (registry/zoo.json by default), re-read right before the atomic write.
Nothing is written to the registry unless both uploads succeeded, and the packaged registry only
takes models trained by their track's own recipe (no --epochs/--width-div smoke runs).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from reconbench.core.hub import publish_folder
from reconbench.core.io import sha256_file
from reconbench.zoo import ZooError
from reconbench.zoo.cards import dataset_card, model_card
from reconbench.zoo.grid import parse_track_id, registry_entry, zoo_registry_path
from reconbench.zoo.loading import MODEL_FILE, PARTS
from reconbench.zoo.prepare import MANIFEST, manifest_sha256, read_manifest, target_split
from reconbench.zoo.registry_file import upsert_track
from reconbench.zoo.targets import CONFIG_FILE, plan, read_config


def data_repo_id(org: str, dataset: str) -> str:
    return f"{org}/reconbench-{dataset}"


def model_repo_id(org: str, track_id: str) -> str:
    return f"{org}/{track_id}"


def _stage(folder: Path, files: dict[str, Path], texts: dict[str, str]) -> None:
    for name, src in files.items():
        try:
            os.link(src, folder / name)  # no copy of large files where the file system allows
        except OSError:
            shutil.copyfile(src, folder / name)
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")


def _check_local(track_id: str, model_dir: Path, data_dir: Path) -> tuple[dict, dict]:
    config, manifest = read_config(model_dir), read_manifest(data_dir)
    if config["track"] != track_id:
        raise ZooError(f"{model_dir / CONFIG_FILE}: trained for track '{config['track']}', not '{track_id}'")
    if manifest["dataset"] != config["dataset"]:
        raise ZooError(f"{data_dir / MANIFEST}: dataset '{manifest['dataset']}', the model needs '{config['dataset']}'")
    if manifest_sha256(data_dir) != config["data"]["manifest_sha256"]:
        raise ZooError(f"{data_dir / MANIFEST}: not the data the model was trained on (manifest sha256 differs "
                       f"from {model_dir / CONFIG_FILE})")
    if sha256_file(model_dir / MODEL_FILE) != config["model"]["sha256"]:
        raise ZooError(f"{model_dir / MODEL_FILE}: sha256 differs from the one in {CONFIG_FILE}")
    for split, entry in manifest["splits"].items():
        path = data_dir / entry["file"]
        if not path.is_file() or sha256_file(path) != entry["sha256"]:
            raise ZooError(f"{path}: missing or not the file manifest.json lists for split '{split}'")
    return config, manifest


def publish_track(track_id: str, org: str, *, model_dir: Path, data_dir: Path, registry: Path | None = None,
                  token: str | None = None, endpoint: str | None = None) -> dict:
    """Upload the track's data and model, then pin them in `registry`; returns the registry entry."""
    spec = parse_track_id(track_id)
    model_dir, data_dir = Path(model_dir), Path(data_dir)
    config, manifest = _check_local(track_id, model_dir, data_dir)
    if registry is None:  # the packaged registry: only the track's own recipe may be pinned there
        _, recipe, kwargs = plan(track_id)
        if config["recipe"] != recipe.to_dict() or config["arch_kwargs"] != kwargs:
            raise ZooError(f"{model_dir / CONFIG_FILE}: trained with a changed recipe ({config['command']}); "
                           "retrain without overrides, or pin it in a copy with --registry PATH")
    data_repo, model_repo = data_repo_id(org, spec.dataset), model_repo_id(org, track_id)

    split_files = {e["file"]: data_dir / e["file"] for e in manifest["splits"].values()}
    with tempfile.TemporaryDirectory(prefix="reconbench-publish-") as tmp:
        stage = Path(tmp) / "data"
        stage.mkdir()
        _stage(stage, {**split_files, MANIFEST: data_dir / MANIFEST}, {"README.md": dataset_card(manifest, repo_id=data_repo)})
        data_revision = publish_folder(stage, data_repo, repo_type="dataset", token=token, endpoint=endpoint,
                                       commit_message=f"ReconBench data: {spec.dataset} ({manifest['recipe']})")
        stage = Path(tmp) / "model"
        stage.mkdir()
        card = model_card(config, data_repo=data_repo, data_revision=data_revision, prepare_command=manifest["recipe"])
        _stage(stage, {MODEL_FILE: model_dir / MODEL_FILE, CONFIG_FILE: model_dir / CONFIG_FILE}, {"README.md": card})
        model_revision = publish_folder(stage, model_repo, repo_type="model", token=token, endpoint=endpoint,
                                        commit_message=f"ReconBench target: {track_id} ({config['command']})")

    splits = manifest["splits"]
    names = {"target": target_split(spec.size), **{p: p for p in PARTS if p != "target"}}
    files = {MODEL_FILE: config["model"]["sha256"]}
    files.update({splits[s]["file"]: splits[s]["sha256"] for s in names.values() if s in splits})
    entry = registry_entry(spec, arch_kwargs=config["arch_kwargs"])
    if "aux_similar" not in splits:
        entry["scenarios"] = [s for s in entry["scenarios"] if not s.endswith("/similar")]
    entry.update({
        "status": "published",
        "source": {"kind": "hub", "model_repo": model_repo, "model_revision": model_revision,
                   "data_repo": data_repo, "data_revision": data_revision, "files": files},
        "target_model_sha256": config["model"]["sha256"],
        "target_set_sha256": splits[names["target"]]["content_sha256"],
        "update_set_sha256": splits["update"]["content_sha256"],
        "train_accuracy": config["train_accuracy"],
        "test_accuracy": config["test_accuracy"],
        "memorization": (config.get("memorization") or {}).get("value"),
        "recipe": f"{manifest['recipe']} && {config['command']}",
    })
    upsert_track(registry or zoo_registry_path(), entry)
    return entry
