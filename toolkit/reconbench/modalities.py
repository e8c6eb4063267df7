"""The modality plug-ins: image and text each sit behind one small interface, `Modality`, that the
core calls. The core (the API, validation, reproduction, the board, the command line) asks which
plug-in owns a track, a result or an attack, and calls that plug-in's hook; it never branches on a
modality's name.

A plug-in is a module `reconbench/<modality>/plugin.py` that defines the names below (a module
satisfies the Protocol structurally). A third modality is a third folder with such a module, and
one more line in `MODALITIES`. docs/architecture.md ("Modalities") says what each hook must do.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from reconbench.image import plugin as image
from reconbench.text import plugin as text

if TYPE_CHECKING:
    from reconbench.reproduction.entry import Entry
    from reconbench.reproduction.record import ReproductionRecord


class Modality(Protocol):
    NAME: str  # a result's payload.modality, where the modality records one
    RERUN_NEEDS_SANDBOX: bool  # a reproduction record is signed only for a sandboxed re-run

    # what it owns: each answers for itself, so no caller compares names
    def owns_track(self, track_id: str) -> bool: ...
    def owns_result(self, result: object) -> bool: ...
    def owns_attack(self, name: str) -> bool: ...
    def owns_zoo_track(self, track_id: str) -> bool: ...
    def owns_dataset(self, name: str) -> bool: ...

    # registry and command line
    def check_track(self, track_id: str) -> None: ...
    def validation_stages(self) -> dict[str, Callable]: ...  # submissions/validate.py stages done its own way
    def load_attack(self, name: str) -> type: ...
    def result_schema(self) -> dict: ...

    # one run: evaluate a track's attack into a signed result folder
    def evaluate(self, attack: Any, track: str, *, key_path: Path, command_for: Callable[[str], str], **run: Any): ...

    # reproduction: the attack to re-run, the re-run, and the scoring of a run
    def reproduction_spec(self, folder: Path, result: object) -> str: ...
    def rerun(self, entry: Entry, *, key: Path, config: dict, weights_dir: Path | None, **common: Any) -> None: ...
    def score_run(self, entry: Entry, run_dir: Path, *, device: str, weights_dir: Path | None) -> ReproductionRecord: ...

    # the board: an object with frame, add_boards, attack_tables, knowledge, add_entries (leaderboard/build.py)
    def board(self, reports: list, *, rescore: bool, galleries: bool, site_url: str | None, timings: dict): ...

    # the zoo (maintainers): data, target models, Hub publication
    def prepare_dataset(self, name: str, folder: Path, source: Path | None, revision: str | None) -> dict: ...
    def zoo_dataset(self, track_id: str) -> str: ...
    def train_target(self, track_id: str, data: Path, out: Path, **recipe: Any) -> list[str]: ...
    def publish_track(self, track_id: str, org: str, **where: Any) -> dict: ...
    def zoo_registry_path(self) -> Path: ...


# The first plug-in speaks for an id no modality owns: the image registry's error names the unknown
# track (with its nearest ids) and the image loader explains an attack file.
MODALITIES: tuple[Modality, ...] = (image, text)


def _owner(owns: Callable[[Modality], bool]) -> Modality:
    return next((m for m in MODALITIES if owns(m)), MODALITIES[0])


def for_track(track_id: str) -> Modality:
    return _owner(lambda m: m.owns_track(track_id))


def for_result(result: object) -> Modality:
    """The plug-in of a parsed result file (reconbench.text.results.parse_any_result)."""
    return _owner(lambda m: m.owns_result(result))


def for_attack(name: str) -> Modality:
    return _owner(lambda m: m.owns_attack(name))


def for_zoo_track(track_id: str) -> Modality:
    return _owner(lambda m: m.owns_zoo_track(track_id))


def for_dataset(name: str) -> Modality:
    return _owner(lambda m: m.owns_dataset(name))


def by_name(name: str) -> Modality:
    for m in MODALITIES:
        if m.NAME == name:
            return m
    raise KeyError(f"no modality '{name}' (known: {', '.join(m.NAME for m in MODALITIES)})")
