"""The validation cache (submissions/validation_cache.py): a second run reuses the costly checks'
outcomes and the near-duplicate features; a changed entry, another toolkit or a tampered cache file
is recomputed, so the verdicts are those of a run without any cache."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from reconbench.image.results import load_reconstructions
from reconbench.submissions import validate
from reconbench.submissions import validation_cache as vc
from reconbench.submissions.validation_cache import ValidationCache
from submission_helpers import failure, fresh_board
from test_submissions_hostile import flip_one_pixel, replace_images


@pytest.fixture
def board(tmp_path_factory, tmp_path):
    return fresh_board(tmp_path_factory, tmp_path)


@pytest.fixture
def calls(monkeypatch):
    """How often each cached stage really ran (the stages are wrapped, not replaced)."""
    counts = {name: 0 for name in vc.CACHED_STAGES}

    def counted(name, stage):
        def run(ctx):
            counts[name] += 1
            return stage(ctx)
        return run

    monkeypatch.setattr(validate, "STAGES", [(n, counted(n, s) if n in counts else s) for n, s in validate.STAGES])
    return counts


def reports(board, cache, **kw):
    out = board.validate(cache=cache, rescore=True, **kw)
    return {str(r.path): r.to_dict() for r in out.entries}


def test_a_second_run_reuses_the_checks_and_reports_the_same(board, tmp_path, calls):
    cache = ValidationCache(tmp_path / "cache")
    first = reports(board, cache)
    assert calls == {"rescore": 1, "copies": 1, "nearcopies": 1}
    second = reports(board, cache)
    assert calls == {"rescore": 1, "copies": 1, "nearcopies": 1}  # nothing re-ran
    assert second == first == reports(board, False)
    assert first[str(board.entry)]["trust"] == "re-scored"
    files = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert files and all(p.suffix in (".json", ".safetensors") for p in files)  # data, never a pickle


def test_the_membership_gaps_come_back_from_the_cache(board, tmp_path, calls):
    """The held rule (submissions/leakage.py) and the board read the re-scored gaps: a reused outcome
    carries them as they were computed, the per-reconstruction best values of the entry page's plot too."""
    cache = ValidationCache(tmp_path / "cache")
    first = {str(r.path): r for r in board.validate(cache=cache, rescore=True).entries if r.is_entry}
    second = {str(r.path): r for r in board.validate(cache=cache, rescore=True).entries if r.is_entry}
    assert calls["rescore"] == 1
    entry = str(board.entry)
    assert first[entry].membership and first[entry].mirrored and first[entry].gaps
    for path, r in first.items():
        again = second[path]
        assert again.membership == r.membership and again.mirrored == r.mirrored
        assert set(again.gaps) == set(r.gaps)
        for name, gap in r.gaps.items():
            back = again.gaps[name]
            assert (back.gap, back.low, back.high, back.p, back.per_group) == (gap.gap, gap.low, gap.high, gap.p, gap.per_group)
            np.testing.assert_array_equal(back.best_target, gap.best_target)
            np.testing.assert_array_equal(back.best_holdout, gap.best_holdout)


def test_a_changed_claim_is_checked_again(board, tmp_path, calls):
    cache = ValidationCache(tmp_path / "cache")
    assert reports(board, cache)[str(board.entry)]["trust"] == "re-scored"
    board.resign(lambda p: p["metrics"]["mse"].update(value=p["metrics"]["mse"]["value"] / 2))
    after = board.validate(cache=cache, rescore=True).entries
    assert calls["rescore"] == 2
    assert failure(next(r for r in after if r.path == board.entry)).name == "rescore.mse"


def test_another_toolkit_finds_nothing(board, tmp_path, calls, monkeypatch):
    cache = ValidationCache(tmp_path / "cache")
    reports(board, cache)
    monkeypatch.setattr(vc, "toolkit_key", lambda: "0" * 64)
    reports(board, cache)
    assert calls["rescore"] == 2


@pytest.mark.parametrize("how", ["status", "digest", "truncated"])
def test_a_tampered_check_record_is_recomputed(board, tmp_path, calls, how):
    cache = ValidationCache(tmp_path / "cache")
    clean = reports(board, cache)
    [record] = list((tmp_path / "cache" / "checks").rglob("*.json"))
    data = json.loads(record.read_text())
    if how == "status":  # the re-score passed; claim it failed, with a digest that no longer matches
        data["record"]["checks"][0]["message"] = "tampered"
        data["record"]["rescored"] = False
        record.write_text(json.dumps(data))
    elif how == "digest":  # a well-formed file for another key
        data["key"] = "f" * 64
        record.write_text(json.dumps(data))
    else:
        record.write_text(record.read_text()[:100])
    assert reports(board, cache) == clean
    assert calls["rescore"] == 2


def near_twin(board):
    """Another team's copy of the board's entry with one pixel of each image changed."""
    images, labels = load_reconstructions(board.recon)
    twin = board.root / "beta" / "digits-mine-really"
    shutil.copytree(board.entry, twin)
    replace_images(board, flip_one_pixel(images, seed=1), labels, entry=twin, key=board.beta_key,
                   entry_id="digits-mine-really")
    return twin


def test_tampered_features_cannot_hide_a_near_duplicate(board, tmp_path):
    cache = ValidationCache(tmp_path / "cache")
    twin = near_twin(board)
    first = board.validate(cache=cache).entries
    check = failure(next(r for r in first if r.path == twin))
    assert check.name == "duplicates" and board.entry.name in check.message
    files = list((tmp_path / "cache" / "features").rglob("*.safetensors"))
    assert len(files) == 2  # the original's and the twin's
    for path in files:  # far-away features under the original metadata: a digest mismatch
        tensors = load_file(str(path))
        with safe_open(str(path), framework="numpy") as f:
            meta = f.metadata()
        save_file({"pixel": np.zeros_like(tensors["pixel"]), "struct": np.ones_like(tensors["struct"])}, str(path),
                  metadata=meta)
        assert cache.load_features(path.stem) is None
    again = board.validate(cache=cache).entries
    assert failure(next(r for r in again if r.path == twin)).message == check.message


def test_no_cache_from_the_environment(monkeypatch):
    monkeypatch.setenv(vc.CACHE_ENV, "0")
    assert not vc.enabled_by_env()
    monkeypatch.setenv(vc.CACHE_ENV, "1")
    assert vc.enabled_by_env()


def test_the_near_duplicate_answer_is_reused_only_for_the_same_board(board, tmp_path, monkeypatch):
    from reconbench.submissions.checks import duplicates

    searches = []
    real = duplicates.first_near_duplicate
    monkeypatch.setattr(duplicates, "first_near_duplicate", lambda *a, **k: searches.append(1) or real(*a, **k))
    cache = ValidationCache(tmp_path / "cache")
    twin = near_twin(board)
    board.resign(lambda p: p["provenance"].update(seed=p["provenance"]["seed"] + 1), key=board.beta_key, entry=twin)  # not a re-run of alpha's
    first = failure(next(r for r in board.validate(cache=cache).entries if r.path == twin))
    assert first.name == "duplicates" and len(searches) == 1  # the original has nothing earlier to compare
    again = failure(next(r for r in board.validate(cache=cache).entries if r.path == twin))
    assert again.message == first.message and len(searches) == 1  # the same board: the answer reused
    board.recon.write_bytes(board.recon.read_bytes()[:-8])  # the original's file no longer as signed
    after = {r.path: r for r in board.validate(cache=cache).entries}
    assert len(searches) == 2  # another board: searched again, and the original cannot be compared any more
    assert after[twin].trust != "failed", [(c.name, c.message) for c in after[twin].checks if c.status != "pass"]
    assert failure(after[board.entry]).name == "reconstructions"
