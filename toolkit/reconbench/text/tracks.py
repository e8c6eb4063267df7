"""The text-track registry: `registry/text_tracks.json`, beside the image tracks' `tracks.json`.

Text tracks are a registry of their own because they share no shape with image tracks (no input
shape, no classes; two target models instead of one). A text track id never equals an image track
id (checked on load), so `recon-submit evaluate --track ID` can tell which pipeline runs.
Like tracks.py this module only reads the registry: no torch, no transformers, no Hub.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from reconbench.core.scenario import Scenario
from reconbench.core.tracks import TrackError, all_tracks, read_registry_file

TEXT_REGISTRY_ENV = "RECONBENCH_TEXT_REGISTRY"  # a text registry file to use instead of the packaged one
Role = Literal["generator", "embedder"]  # Complete attacks the generator, Vec2Text the embedder


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TextEmbeddedSource(_Strict):
    kind: Literal["embedded"] = "embedded"
    folder: str  # inside the package's data folder, e.g. "lee-news"


class TextHubSource(_Strict):
    kind: Literal["hub"] = "hub"
    model_repo: str
    model_revision: str
    data_repo: str
    data_revision: str
    files: dict[str, str] = Field(default_factory=dict, description="file name -> sha256")


class TextModel(_Strict):
    """One of the track's target models.

    architecture: "gpt2" (generator; transformers' GPT-2), "minilm" (embedder; BERT encoder with mean
    pooling, as sentence-transformers/all-MiniLM-L6-v2) or "gtr-t5" (embedder; T5 encoder, mean
    pooling, dense projection, as sentence-transformers/gtr-t5-base).
    files: file name -> sha256, inside the embedded folder or the model repository.
    """

    architecture: Literal["gpt2", "minilm", "gtr-t5"]
    config: dict[str, int | float | str | bool] = Field(default_factory=dict)
    base: str | None = None  # what it was fine-tuned from (a Hub id and pin), None when trained from scratch
    files: dict[str, str]
    fine_tuning: str  # how it was trained on the target split, in a sentence (the recipe has the details)
    recipe: str  # the command that rebuilds it
    measured: dict[str, float] = Field(default_factory=dict, description="e.g. perplexity_target, perplexity_test")


class TextTrack(_Strict):
    id: str
    title: str
    dataset: str
    modality: Literal["text"] = "text"
    status: Literal["embedded", "published", "unpublished"]
    source: TextEmbeddedSource | TextHubSource | None = None
    train_size: int  # |D_tar|: the target split the models were fine-tuned on
    split_sizes: dict[str, int] = Field(default_factory=dict, description="target, aux, test -> number of texts")
    splits_sha256: dict[str, str] = Field(default_factory=dict, description="split -> TextSet.sha256")
    holdout_split: str | None = Field(
        None, description="the split that serves as the membership gap's holdout (reconbench.core.membership): "
                          "as many texts as the target split, drawn the same way, never trained on by any shipped "
                          "model (tokenizer included) and never in an attack's view; its sha256 is pinned in "
                          "splits_sha256 (reconbench.text.files.load_text_holdout)")
    generator: TextModel | None = None
    embedder: TextModel | None = None
    scenarios: list[str]
    edit_margin: float | None = Field(
        None, description="relative edit distance within which a reconstruction counts as a copy of its own target "
                          "(held until reproduced, as an exact one): reconbench.submissions.textcopy")
    prompt_words: int = 3  # Complete's prompt: the first three words of each target text (SoK App. B)
    derivation: str = ""  # how the corpus was split (documented, deterministic)

    @property
    def target_set_sha256(self) -> str | None:
        return self.splits_sha256.get("target")

    @property
    def holdout_set_sha256(self) -> str | None:
        return self.splits_sha256.get(self.holdout_split) if self.holdout_split else None

    def model(self, role: Role) -> TextModel:
        model = self.generator if role == "generator" else self.embedder
        if model is None:
            raise TrackError(f"text track '{self.id}' has no {role} target model")
        return model

    def require_runnable(self) -> None:
        if self.status == "unpublished":
            raise TrackError(
                f"text track '{self.id}' is not published yet: its target models have not been pinned in the "
                "registry (maintainers: see docs/zoo.md)"
            )

    def offers(self, scenario: Scenario) -> bool:
        return str(scenario) in self.scenarios


class TextRegistry(_Strict):
    schema_version: Literal[1]
    tracks: list[TextTrack]


def text_registry_path() -> Path:
    override = os.environ.get(TEXT_REGISTRY_ENV)
    if override:
        return Path(override)
    return Path(str(resources.files("reconbench") / "registry" / "text_tracks.json"))


def all_text_tracks() -> list[TextTrack]:
    path = text_registry_path()
    if not path.exists():
        return []
    tracks = read_registry_file(str(path), path.stat().st_mtime, TextRegistry, "text-track registry").tracks

    clash = {t.id for t in tracks} & {t.id for t in all_tracks()}
    if clash:
        raise TrackError(f"{path}: text track id(s) also used by an image track: {', '.join(sorted(clash))}")
    return tracks


def is_text_track(track_id: str) -> bool:
    return any(t.id == track_id for t in all_text_tracks())


def get_text_track(track_id: str) -> TextTrack:
    for track in all_text_tracks():
        if track.id == track_id:
            return track
    raise TrackError(f"unknown text track '{track_id}' (see `recon-submit tracks --all`)")
