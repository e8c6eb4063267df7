"""The image modality behind the interface of reconbench.modalities.Modality: the registry of
image tracks (registry/*.json), attacks run from their own file in the sandbox, image results
(result.json + reconstructions.safetensors) and the image zoo."""

from __future__ import annotations

from pathlib import Path


NAME = "image"


def validation_stages() -> dict:
    return {}  # the stages of submissions/validate.py are the image ones


def owns_track(track_id: str) -> bool:
    from reconbench.core.tracks import TrackError, get_track

    try:
        get_track(track_id)
    except TrackError:
        return False
    return True


def owns_result(result: object) -> bool:
    from reconbench.image.results import ResultFile

    return isinstance(result, ResultFile)


def owns_attack(name: str) -> bool:
    from reconbench.core.catalogue import BY_NAME

    return name in BY_NAME


def check_track(track_id: str) -> None:
    from reconbench.core.tracks import get_track

    track = get_track(track_id)  # TrackError: unknown (with the nearest ids), before torch and the attack load
    if track.seal is not None and track.seal.scheme == "v2":  # a board-run draw: refused outside the board's run
        from reconbench.image.sealed import require_opened

        require_opened(track)


def load_attack(name: str) -> type:
    from reconbench.image.attacks import load_attack as load

    return load(name)


def result_schema() -> dict:
    from reconbench.image.results import result_json_schema

    return result_json_schema()


def evaluate(attack, track: str, *, key_path: Path, command_for, scenario, seed, device, options, budget, out,
             weights_dir, progress, surrogate, limits=None):
    """A registered name, `file.py:Class` or an Attack class, run in its own (sandboxed) process."""
    from reconbench.image.evaluation import evaluate as run
    from reconbench.pipeline.isolation.parent import attack_spec

    if isinstance(attack, type):
        _require_importable(attack)
    spec = attack_spec(attack)  # a class is run from its source file, in its own process
    return run(
        track_id=track, attack_spec=spec, scenario=scenario, seed=seed, device=device,
        out=Path(out) if out is not None else None, key_path=key_path, config=dict(options or {}),
        progress=progress, command=command_for(spec), weights_dir=Path(weights_dir) if weights_dir is not None else None,
        budget=budget, surrogate=surrogate, limits=limits,
    )


def has_source_file(cls: type) -> bool:
    import os
    import sys

    file = getattr(sys.modules.get(cls.__module__), "__file__", None)
    return bool(file) and os.path.isfile(file)  # not "<stdin>", "<string>"


def _require_importable(cls: type) -> None:
    """evaluate runs the attack in a process of its own, which imports the class from its file: a
    class with no file cannot be found there, and a script's own calls would run again there (the
    harness then stops them with a less helpful error). Both are said here, before anything runs."""
    import ast
    import sys

    from reconbench.core.attack_errors import AttackError

    where = "see the site page \"Use from Python\", site/python.md"
    if not has_source_file(cls):
        raise AttackError(f"attack class {cls.__qualname__} has no .py file (a notebook cell, python -c or stdin): "
                          "evaluate imports the class from its file in the attack's own process; save it to a .py "
                          f"file first (run_attack takes it as it is; {where})")
    if cls.__module__ != "__main__":
        return
    file = sys.modules["__main__"].__file__
    try:
        tree = ast.parse(Path(file).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return  # nothing to say; the child reports what it finds
    guarded = any(isinstance(node, ast.If) and "__name__" in ast.unparse(node.test) and "__main__" in ast.unparse(node.test)
                  for node in tree.body)
    if not guarded:
        raise AttackError(f"{file}: the attack's process imports this script to load {cls.__qualname__}, which would "
                          "run the script's own calls again; put them under `if __name__ == \"__main__\":` "
                          f"({where})")


RERUN_NEEDS_SANDBOX = True  # reconbench/image/reproduce.py says why


def __getattr__(hook: str):
    """The reproduction hooks (reproduction_spec, rerun, score_run) load reconbench/image/reproduce.py when asked for."""
    if hook in ("reproduction_spec", "rerun", "score_run"):
        from reconbench.image import reproduce

        return getattr(reproduce, hook)
    raise AttributeError(f"module {__name__} has no attribute {hook}")


def board(reports: list, **settings):
    """The image entries' board for leaderboard/build.py (reconbench/image/board.py)."""
    from reconbench.image.board import ImageBoard

    return ImageBoard(reports, **settings)


# --- the zoo (maintainers): docs/zoo.md

def owns_zoo_track(track_id: str) -> bool:
    return False  # the default: an image zoo id, or the image grid's error for an unknown one


def owns_dataset(name: str) -> bool:
    return False  # the default: celeba, cifar10, mnist, digits, or the image zoo's error


def prepare_dataset(name: str, folder: Path, source: Path | None, revision: str | None) -> dict:
    from reconbench.zoo.prepare import prepare_dataset as prepare

    return prepare(name, folder, source)


def zoo_dataset(track_id: str) -> str:
    from reconbench.zoo.grid import parse_track_id

    return parse_track_id(track_id).dataset


def train_target(track_id: str, data: Path, out: Path, *, device: str, epochs, batch_size, lr, seed, width_div,
                 memorization: int, init_weights: Path | None, echo) -> list[str]:
    from reconbench.zoo.targets import Overrides, train_track

    config = train_track(
        track_id, data, out, overrides=Overrides(epochs=epochs, batch_size=batch_size, lr=lr, seed=seed, width_div=width_div),
        device=device, memorization_models=memorization, init_weights=init_weights, echo=echo)
    return [f"{track_id}: train accuracy {config['train_accuracy']:.4f}, test accuracy {config['test_accuracy']:.4f}"
            + (f", variant {config['variant_report']}" if config["variant_report"] else ""),
            f"wrote {out} (model sha256 {config['model']['sha256']})"]


def publish_track(track_id: str, org: str, *, model_dir: Path, data_dir: Path, registry: Path | None) -> dict:
    from reconbench.zoo.publish import publish_track as publish

    return publish(track_id, org, model_dir=model_dir, data_dir=data_dir, registry=registry)


def zoo_registry_path() -> Path:
    from reconbench.zoo.grid import zoo_registry_path as path

    return path()
