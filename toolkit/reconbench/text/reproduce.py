"""A text entry's reproduction: its registered text attack re-run through evaluate_text (in the
evaluator's process: a text entry names no code of its own), and a run's reconstructions.jsonl
scored against the target texts under the same tolerances as images."""

from __future__ import annotations

from pathlib import Path

from reconbench.reproduction.entry import Entry, ReproduceError, record, require_registered, require_same_target
from reconbench.reproduction.record import ReproductionRecord
from reconbench.core.envelope import RESULT_FILE, ResultError

# Text attacks run in the evaluator's process (their runs record sandbox "none"); a text entry can only
# name a registered text attack (reproduction_spec), so no code of the entry's runs in its re-run.
RERUN_NEEDS_SANDBOX = False


def reproduction_spec(folder: Path, result) -> str:
    from reconbench.text.attacks import TEXT_ATTACKS

    require_registered(folder, result, TEXT_ATTACKS)  # text tracks run registered text attacks only
    return result.payload.attack.name


def rerun(entry: Entry, *, key: Path, config: dict, weights_dir: Path | None, **common) -> None:
    from reconbench.text.evaluation import evaluate_text

    evaluate_text(attack=entry.spec, key_path=key, config=config, **common)


def score_run(entry: Entry, run_dir: Path, *, device: str, weights_dir: Path | None) -> ReproductionRecord:
    """The run's reconstructions.jsonl (hash-checked against its own result.json, strict format),
    scored against the target texts as evaluate_text and validate score them."""
    from reconbench.text.evaluation import score_against, text_membership
    from reconbench.text.files import load_text_splits
    from reconbench.text.results import TextResultFile, load_text_reconstructions, parse_any_result
    from reconbench.text.tracks import get_text_track

    p = entry.result.payload
    try:
        run = parse_any_result(run_dir / RESULT_FILE)
        if not isinstance(run, TextResultFile):
            raise ResultError(f"{run_dir / RESULT_FILE}: an image result, the entry is a text entry")
        texts = load_text_reconstructions(run_dir, run)
    except ResultError as exc:
        raise ReproduceError(f"run folder: {exc}") from None
    if len(texts.items) != p.reconstructions.count:
        raise ReproduceError(f"{run_dir}: {len(texts.items)} reconstructions, the entry has {p.reconstructions.count}")
    track = get_text_track(p.track)
    target = load_text_splits(track, ["target"])["target"]
    require_same_target(entry, target.sha256)
    metrics = score_against(texts, target, device=device)
    gaps = text_membership(track, texts, target, p.role, device=device)
    return record(entry, run_dir, run_dir / run.payload.reconstructions.file, metrics, device,
                  None if gaps is None else gaps[0].metrics)
