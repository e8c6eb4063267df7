"""Pinned downloads of a published text track (text/files.py calls these for `source.kind == "hub"`).

Every file is fetched through reconbench.core.hub at the commit the registry pins and checked against
its sha256 before use; once cached, nothing touches the network again. Only the parts asked for are
fetched: the knowledge view asks for aux (Vec2Text) or nothing (Complete) plus one model, scoring
asks for the target split; the target split is never fetched for an attacker's view.

File names inside the repos (written by `recon-submit hub publish <text track>`):
    data repo   <org>/reconbench-text-<dataset>:  target-n<size>.jsonl, aux.jsonl, test.jsonl,
                manifest.json, README.md  (JSON Lines in the items.jsonl_bytes form)
    model repo  <org>/<track id>:  generator/{model.safetensors, config.json, tokenizer.json},
                embedder/{model.safetensors, config.json, tokenizer.json, special_tokens_map.json}, README.md
The registry pins data files in `source.files` and each role's files in `<role>.files`, under
these names.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path

from reconbench.core.hub import download_pinned
from reconbench.text.items import TextSet
from reconbench.text.tracks import Role, TextHubSource, TextTrack
from reconbench.core.tracks import TrackError

ROLES: tuple[Role, ...] = ("generator", "embedder")
_ROLE_FILE = re.compile(r"(generator|embedder)/[A-Za-z0-9_.-]+")


def split_file(track: TextTrack, part: str) -> str:
    """The data repo's file of a split (target files carry the size: one data repo serves six tracks)."""
    if part == "target":
        return f"target-n{track.train_size}.jsonl"
    if part in ("aux", "test"):
        return f"{part}.jsonl"
    raise TrackError(f"text track '{track.id}': unknown split '{part}' (of target, aux, test)")


def _source(track: TextTrack) -> TextHubSource:
    if not isinstance(track.source, TextHubSource):
        raise TrackError(f"text track '{track.id}' is not a Hub track")
    return track.source


def _pinned(track: TextTrack, files: dict[str, str], name: str) -> str:
    sha = files.get(name)
    if not sha:
        raise TrackError(f"text track '{track.id}': the registry pins no sha256 for '{name}'")
    return sha


def download_split_file(track: TextTrack, part: str) -> Path:
    src, name = _source(track), split_file(track, part)
    return download_pinned(src.data_repo, name, revision=src.data_revision, sha256=_pinned(track, src.files, name),
                           repo_type="dataset")


def load_hub_text_splits(track: TextTrack, parts: Collection[str]) -> dict[str, TextSet]:
    """The splits in `parts`, downloaded (only those) and sha256-checked file by file."""
    from reconbench.text.jsonl import TextFileError, read_jsonl

    out = {}
    for part in parts:
        path = download_split_file(track, part)
        try:
            items = read_jsonl(path.resolve())  # the cache's blob (the snapshot entry is a link); sha256 checked
        except TextFileError as exc:
            raise TrackError(f"text track '{track.id}', {part} split: {exc}") from None
        out[part] = TextSet(part, items.items)
    return out


def role_folder(track: TextTrack, role: Role) -> Path:
    """The local folder holding every pinned file of the role (downloaded and checked, or from the cache)."""
    src, model = _source(track), track.model(role)
    if not model.files:
        raise TrackError(f"text track '{track.id}': the registry pins no {role} files")
    folders = set()
    for name, sha in sorted(model.files.items()):
        if not _ROLE_FILE.fullmatch(name) or not name.startswith(f"{role}/"):
            raise TrackError(f"text track '{track.id}': bad {role} file name {name!r} in the registry "
                             f"(expected {role}/<file>)")
        path = download_pinned(src.model_repo, name, revision=src.model_revision, sha256=sha, repo_type="model")
        folders.add(path.parent)
    if len(folders) != 1:  # one snapshot, one commit: the files sit side by side
        raise TrackError(f"text track '{track.id}': the {role} files did not land in one folder")
    return folders.pop()


def load_hub_generator(track: TextTrack, device: str = "cpu"):
    """The track's fine-tuned GPT-2 as text.files.LanguageModel."""
    from reconbench.text.gpt2 import LanguageModel, load_gpt2_folder

    if track.model("generator").architecture != "gpt2":
        raise TrackError(f"text track '{track.id}': a Hub generator must be gpt2")
    model, tokenizer = load_gpt2_folder(role_folder(track, "generator"), device)
    return LanguageModel(model=model, tokenizer=tokenizer, device=device)


def load_hub_embedder(track: TextTrack, device: str = "cpu"):
    """The track's fine-tuned gtr-t5 as text.embedding.Embedder."""
    from reconbench.text.embedding import EmbeddingError
    from reconbench.text.gtr import load_gtr_folder

    if track.model("embedder").architecture != "gtr-t5":
        raise TrackError(f"text track '{track.id}': a Hub embedder must be gtr-t5")
    try:
        return load_gtr_folder(role_folder(track, "embedder"), device)
    except EmbeddingError as exc:
        raise TrackError(f"text track '{track.id}': {exc}") from None
