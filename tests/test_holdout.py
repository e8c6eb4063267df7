"""The holdout split (issue 21): the membership gap's non-members, on every embedded track.

Same size and class counts as D_tar, disjoint from every split a shipped model trained on, pinned in
the registry, loaded on the evaluator's side only, and absent from every attack's knowledge view
(checked the way the update set is, by walking everything reachable from the view)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from torch import nn

from reconbench.image.data.arrays import ArraySet
from reconbench.image.knowledge import build_knowledge
from reconbench.core.scenario import Scenario
from reconbench.image.track_files import load_holdout, load_splits
from reconbench.core.tracks import Track, TrackError, get_track

IMAGE_TRACKS = ("digits", "digits-mlp", "digits-binary-mlp")


def _rows(images: np.ndarray) -> set[bytes]:
    return {img.tobytes() for img in images}


@pytest.mark.parametrize("track_id", IMAGE_TRACKS)
def test_the_holdout_matches_d_tar_in_size_and_class_counts(track_id):
    track = get_track(track_id)
    splits = load_splits(track)
    for dynamic in (False, True) if track.update_size else (False,):
        members, holdout = splits.members(dynamic), load_holdout(track, dynamic)
        assert len(holdout) == len(members)
        k = track.num_classes
        assert np.array_equal(np.bincount(holdout.labels, minlength=k), np.bincount(members.labels, minlength=k))
        assert holdout.sha256 == (track.update_holdout_set_sha256 if dynamic else track.holdout_set_sha256)


def test_digits_splits_are_disjoint_by_index():
    """Every split of the one seeded permutation is disjoint from the others; the holdout's images
    equal no training image beyond the dataset's own byte-identical duplicates."""
    from reconbench.image.data import digits

    full, (target, update, aux, rest) = digits._cut()
    splits = digits.digits_splits()
    holdout = {i for i in rest if full.images[i].tobytes() in _rows(splits.holdout.images)}
    assert len(set(target) | set(update) | set(aux) | set(rest)) == len(full) == 1797
    assert len(rest) == len(splits.holdout) + len(splits.test) == 697
    assert _rows(splits.update_holdout.images) <= _rows(splits.holdout.images)  # nested: the public pool holds both
    # digits has a few byte-identical images across splits; the holdout is drawn by index from `rest`
    trained = _rows(np.concatenate([splits.target.images, splits.update.images, splits.aux_same.images]))
    shared = _rows(splits.holdout.images) & trained
    assert len(shared) <= 3, len(shared)
    assert len(holdout) >= len(splits.holdout) - len(shared)


def test_a_track_without_a_holdout_says_so():
    track = get_track("digits").model_copy(update={"holdout_set_sha256": None, "id": "no-holdout"})
    with pytest.raises(TrackError, match="pins no holdout split"):
        load_holdout(track)


def test_a_changed_holdout_is_refused_by_its_pin():
    track = get_track("digits").model_copy(update={"holdout_set_sha256": "0" * 64})
    with pytest.raises(TrackError, match="holdout sha256 is"):
        load_holdout(track)


def _reachable(obj, seen=None):
    """Every array, tensor, module state and ArraySet reachable from obj."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, ArraySet):
        yield torch.from_numpy(obj.images)
    elif isinstance(obj, (torch.Tensor, np.ndarray)):
        yield torch.as_tensor(obj)
    elif isinstance(obj, nn.Module):
        yield from obj.state_dict().values()
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _reachable(v, seen)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _reachable(v, seen)
    elif dataclasses.is_dataclass(obj) or hasattr(obj, "__dict__"):
        for v in vars(obj).values():
            yield from _reachable(v, seen)


def _holdout_images_in(knowledge, holdout: ArraySet, allowed: set[bytes]) -> int:
    """How many holdout images sit in the view (as uint8 rows or [0, 1] floats), beyond byte-identical
    duplicates of images the view may hold (its aux split)."""
    pixels = int(np.prod(holdout.images.shape[1:]))
    wanted = torch.from_numpy(np.stack([img for img in holdout.images if img.tobytes() not in allowed])
                              .reshape(-1, pixels)).double()
    found = set()
    for t in _reachable(knowledge):
        t = t.detach().double().flatten()
        if t.numel() < pixels or t.numel() % pixels:
            continue
        rows = t.view(-1, pixels)
        for scale in (1.0, 255.0):
            hit = (torch.cdist(rows * scale, wanted) < 1e-3).any(dim=0)
            found |= set(torch.nonzero(hit).flatten().tolist())
    return len(found)


def _views(track: Track):
    for scenario in track.scenarios:
        yield scenario, build_knowledge(track, Scenario.parse(scenario))


@pytest.mark.parametrize("track_id", IMAGE_TRACKS)
def test_no_attack_view_holds_a_holdout_image(track_id):
    track = get_track(track_id)
    splits = load_splits(track)
    for scenario, knowledge in _views(track):
        aux = _rows(knowledge._aux.images) if knowledge._aux is not None else set()
        for dynamic in (False, True) if track.update_size else (False,):
            holdout = load_holdout(track, dynamic)
            assert _holdout_images_in(knowledge, holdout, aux) == 0, (track_id, scenario, dynamic)
    assert splits.holdout is not None


def test_the_view_walk_would_find_a_leaked_holdout_image():
    """The check above can fail: a view given one holdout image is caught."""
    track = get_track("digits")
    knowledge = build_knowledge(track, Scenario.parse("static/white-box/none"))
    holdout = load_holdout(track)
    knowledge.extras["oops"] = torch.from_numpy(holdout.images[3:4]).float() / 255
    assert _holdout_images_in(knowledge, holdout, set()) == 1


def test_the_text_holdout_is_pinned_and_in_no_text_view():
    """lee-news: the test split serves as the holdout (never trained on: the generator and the
    embedder trained on target, the tokenizer on aux and undealt documents); no text view holds
    one of its texts (walked as strings through prompts, aux texts and every attribute)."""
    from reconbench.text.corpus import lee_tokenizer_texts
    from reconbench.text.files import load_text_holdout, load_text_splits
    from reconbench.text.knowledge import build_text_knowledge
    from reconbench.text.tracks import get_text_track

    track = get_text_track("lee-news")
    holdout = load_text_holdout(track)
    splits = load_text_splits(track, ["target", "aux", "test"])
    assert track.holdout_split == "test" and holdout.sha256 == track.holdout_set_sha256
    assert len(holdout) == len(splits["target"]) == 500
    texts = set(holdout.texts)
    assert not texts & set(splits["target"].texts) and not texts & set(splits["aux"].texts)
    assert not texts & set(lee_tokenizer_texts())
    docs = {i.split("-")[1] for i in holdout.ids}
    assert not docs & {i.split("-")[1] for i in splits["target"].ids + splits["aux"].ids}

    def strings(obj, seen):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, str):
            yield obj
        elif isinstance(obj, dict):
            for k, v in obj.items():
                yield from strings(k, seen)
                yield from strings(v, seen)
        elif isinstance(obj, (list, tuple, set, frozenset)):
            for v in obj:
                yield from strings(v, seen)
        elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            for f in dataclasses.fields(obj):
                yield from strings(getattr(obj, f.name), seen)

    for scenario in track.scenarios:
        role = "embedder" if scenario.endswith("/same") else "generator"
        view = build_text_knowledge(track, scenario, role)
        found = [s for s in strings(view, set()) if s in texts]
        assert not found, (scenario, found[:3])


def test_the_evaluation_classifier_never_trained_on_the_holdout():
    """Its KNN distance is measured to the holdout too (the gap): a judge that had trained on it would
    pull it closer in feature space than the targets. Trained on aux + test only (models/evaluator.py)."""
    from reconbench.image.models.evaluator import training_set

    splits = load_splits(get_track("digits"))
    train = _rows(training_set().images)
    allowed = _rows(np.concatenate([splits.aux_same.images, splits.test.images]))
    assert len(training_set()) == len(splits.aux_same) + len(splits.test) == 697
    assert not (_rows(splits.holdout.images) & train) - allowed  # only the dataset's own byte duplicates


def test_entries_scored_with_the_retired_classifier_still_verify(tmp_path, monkeypatch):
    """An example made before the classifier was retrained claims the retired one's Acc@1/KNN: validate
    finds the retired classifier that agrees and says so; without it in the registry the claim fails."""
    import json
    import shutil
    from pathlib import Path

    from reconbench.core.envelope import RESULT_FILE
    from reconbench.submissions import validate_board
    from reconbench.core.tracks import REGISTRY_ENV, registry_path

    repo = Path(__file__).resolve().parents[1] / "submissions" / "reconbench-baselines"
    # the oldest digits example (by the time in its id): made before the retrain, as the re-issued ones are not
    old = min((p.parent for p in repo.glob(f"digits-*/{RESULT_FILE}")), key=lambda d: d.name.split("-")[-2])
    root = tmp_path / "submissions"
    shutil.copytree(repo, root / "reconbench-baselines", ignore=lambda d, names: [
        n for n in names if Path(d) == repo and n != old.name and n != "team.toml"])
    (root / "reconbench-baselines" / old.name / "reproduction.json").unlink(missing_ok=True)
    report = next(r for r in validate_board(None, root).entries if r.is_entry)
    acc = next(c for c in report.checks if c.name == "rescore.acc_top1")
    assert acc.status == "pass" and "retired evaluation classifier ba3f932e78fa" in acc.message, acc.to_dict()
    assert report.membership["knn_dist"].status == "computed"  # the gap: with the current classifier
    registry = json.loads(registry_path().read_text())
    for track in registry["tracks"]:
        track.pop("retired_evaluation_models", None)
    zoo = json.loads(registry_path().with_name("zoo.json").read_text())
    (tmp_path / "tracks.json").write_text(json.dumps({"schema_version": 1, "tracks": registry["tracks"] + zoo["tracks"]}))
    monkeypatch.setenv(REGISTRY_ENV, str(tmp_path / "tracks.json"))
    report = next(r for r in validate_board(None, root).entries if r.is_entry)
    assert next(c for c in report.checks if c.name == "rescore.acc_top1").status == "fail"
