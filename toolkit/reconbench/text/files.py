"""Loading a text track's splits and its two target models, hash-checked against the registry.

Embedded tracks (`source.kind == "embedded"`) are read from the package's data folder and the
corpus module; Hub tracks (`source.kind == "hub"`) are delegated to reconbench.text.hub, which
downloads pinned revisions and checks the same registry hashes. The Hub seam (text/hub.py provides):
    load_hub_text_splits(track, parts) -> dict[str, TextSet]   (re-checked here against splits_sha256)
    load_hub_generator(track, device) -> LanguageModel
    load_hub_embedder(track, device) -> Embedder
Imports of torch / transformers stay inside functions: the registry and `recon-submit --help` must
not pay for them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reconbench.core.io import sha256_file
from reconbench.text.gpt2 import LanguageModel  # defined beside the Hub GPT-2 loader; text.lm imports it from here
from reconbench.text.items import TextSet
from reconbench.text.tracks import Role, TextTrack
from reconbench.core.tracks import embedded_file
from reconbench.core.tracks import TrackError

if TYPE_CHECKING:
    from reconbench.text.embedding import Embedder

SPLITS = ("target", "aux", "test")


def _embedded_corpora() -> dict[str, Callable[[], dict[str, TextSet]]]:
    from reconbench.text.corpus import lee_splits

    return {"lee-background": lee_splits}  # track.dataset -> its splits


def _is_hub(track: TextTrack) -> bool:
    return track.source is not None and track.source.kind == "hub"


def _embedded_folder(track: TextTrack) -> Path:
    if track.source is None or track.source.kind != "embedded":
        raise TrackError(f"text track '{track.id}': no embedded source to load from")
    folder = track.source.folder
    if not folder or "/" in folder or "\\" in folder or folder.startswith("."):
        raise TrackError(f"text track '{track.id}': bad embedded folder name {folder!r}")
    return embedded_file(folder)


def check_split(track: TextTrack, part: str, split: TextSet) -> TextSet:
    expected = track.splits_sha256.get(part)
    if expected is None:
        raise TrackError(f"text track '{track.id}': the registry pins no sha256 for its {part} split")
    if split.sha256 != expected:
        raise TrackError(
            f"text track '{track.id}': {part} split sha256 is {split.sha256}, the registry pins {expected}"
        )
    return split


def load_text_splits(track: TextTrack, parts: Collection[str] = SPLITS) -> dict[str, TextSet]:
    """The requested splits (of target, aux, test), each checked against `track.splits_sha256`."""
    track.require_runnable()
    unknown = sorted(set(parts) - set(SPLITS))
    if unknown:
        raise TrackError(f"text track '{track.id}': unknown split(s) {', '.join(unknown)} (of {', '.join(SPLITS)})")
    if _is_hub(track):
        from reconbench.text.hub import load_hub_text_splits

        loaded = load_hub_text_splits(track, parts)
    else:
        _embedded_folder(track)
        loader = _embedded_corpora().get(track.dataset)
        if loader is None:
            raise TrackError(f"text track '{track.id}': no loader for dataset '{track.dataset}'")
        loaded = loader()
    return {p: check_split(track, p, loaded[p]) for p in parts}


def load_text_holdout(track: TextTrack) -> TextSet:
    """The track's holdout (the split its registry row names as `holdout_split`), hash-checked. The
    evaluator's side only, like the target split: no attack's view holds it."""
    if not track.holdout_split:
        raise TrackError(f"text track '{track.id}' names no holdout split (registry field holdout_split): "
                         "no membership gap")
    if track.holdout_split in ("target", "aux"):
        raise TrackError(f"text track '{track.id}': the {track.holdout_split} split cannot be the holdout")
    return load_text_splits(track, [track.holdout_split])[track.holdout_split]


def main_weight_file(track: TextTrack, role: Role) -> str:
    """The role's main weight file: its only *.safetensors file, or model.safetensors among several."""
    files = track.model(role).files
    weights = sorted(n for n in files if n.endswith(".safetensors"))
    if len(weights) > 1 and "model.safetensors" in weights:
        weights = ["model.safetensors"]
    if len(weights) != 1:
        raise TrackError(f"text track '{track.id}': the {role} must pin exactly one main *.safetensors file")
    return weights[0]


def model_sha256(track: TextTrack, role: Role) -> str:
    """What results pin for a target model: the registry's sha256 of the role's main weight file."""
    return track.model(role).files[main_weight_file(track, role)]


def embedded_model_files(track: TextTrack, role: Role) -> dict[str, Path]:
    """The role's files in the embedded folder, each present and matching its registry sha256."""
    folder = _embedded_folder(track)
    out = {}
    for name, expected in sorted(track.model(role).files.items()):
        if Path(name).name != name or name.startswith("."):
            raise TrackError(f"text track '{track.id}': bad {role} file name {name!r} in the registry")
        path = folder / name
        if not path.is_file():
            raise TrackError(f"{path}: missing (the {role} of text track '{track.id}')")
        actual = sha256_file(path)
        if actual != expected:
            raise TrackError(f"{path}: sha256 is {actual}, the registry pins {expected}")
        out[name] = path
    return out


def _load_model(track: TextTrack, role: Role, architecture: str, device: str) -> Any:
    track.require_runnable()
    if _is_hub(track):
        from reconbench.text import hub

        loader = hub.load_hub_generator if role == "generator" else hub.load_hub_embedder
        return loader(track, device)
    if track.model(role).architecture != architecture:
        raise TrackError(f"text track '{track.id}': an embedded {role} must be {architecture}")
    files = embedded_model_files(track, role)
    if role == "generator":
        from reconbench.text.lm import load_lm_files

        model, tokenizer = load_lm_files(files, device=device)
        return LanguageModel(model=model, tokenizer=tokenizer, device=device)
    from reconbench.text.embedder_recipe import load_embedder_delta

    return load_embedder_delta(files, device=device)


def load_generator(track: TextTrack, device: str = "cpu") -> LanguageModel:
    """The track's target language model (Complete's target), in eval mode on `device`."""
    return _load_model(track, "generator", "gpt2", device)


def load_embedder(track: TextTrack, device: str = "cpu") -> Embedder:
    """The track's target sentence embedder (Vec2Text's target), in eval mode on `device`."""
    return _load_model(track, "embedder", "minilm", device)
