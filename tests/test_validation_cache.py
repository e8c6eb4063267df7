"""The validation cache (submissions/validation_cache.py): a second run reuses the costly checks'
outcomes and the near-duplicate features; a changed entry, another toolkit or a tampered cache file
is recomputed, so the verdicts are those of a run without any cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from reconbench.image.results import load_reconstructions
from reconbench.submissions import validate
from reconbench.submissions import validation_cache as vc
from reconbench.submissions.validation_cache import ValidationCache
from submission_helpers import failure, fresh_board, recorded
from test_submissions_hostile import flip_one_pixel, replace_images

REPO = Path(__file__).resolve().parents[1]


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


SECRET = b"throwaway test key, not the CI secret"


def keyed(root):
    """A cache authenticated by this test's throwaway secret (CI's is $RECONBENCH_VALIDATION_CACHE_KEY)."""
    return ValidationCache(root, secret=SECRET)


def reports(board, cache, **kw):
    out = board.validate(cache=cache, rescore=True, **kw)
    return {str(r.path): r.to_dict() for r in out.entries}


def test_a_second_run_reuses_the_checks_and_reports_the_same(board, tmp_path, calls):
    cache = keyed(tmp_path / "cache")
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
    cache = keyed(tmp_path / "cache")
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
    cache = keyed(tmp_path / "cache")
    assert reports(board, cache)[str(board.entry)]["trust"] == "re-scored"
    board.resign(lambda p: p["metrics"]["mse"].update(value=p["metrics"]["mse"]["value"] / 2))
    after = board.validate(cache=cache, rescore=True).entries
    assert calls["rescore"] == 2
    assert failure(next(r for r in after if r.path == board.entry)).name == "rescore.mse"


def test_another_toolkit_finds_nothing(board, tmp_path, calls, monkeypatch):
    cache = keyed(tmp_path / "cache")
    reports(board, cache)
    monkeypatch.setattr(vc, "toolkit_key", lambda: "0" * 64)
    reports(board, cache)
    assert calls["rescore"] == 2


@pytest.mark.parametrize("how", ["status", "digest", "truncated"])
def test_a_tampered_check_record_is_recomputed(board, tmp_path, calls, how):
    cache = keyed(tmp_path / "cache")
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
    cache = keyed(tmp_path / "cache")
    twin = near_twin(board)
    board.resign(lambda p: (p["provenance"].update(seed=p["provenance"]["seed"] + 1), recorded(p)),
                 key=board.beta_key, entry=twin)  # not alpha's run: a copy under alpha's run is a replicate (issue 45)
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
    cache = keyed(tmp_path / "cache")
    twin = near_twin(board)
    board.resign(lambda p: (p["provenance"].update(seed=p["provenance"]["seed"] + 1), recorded(p)),
                 key=board.beta_key, entry=twin)  # not a re-run of alpha's
    first = failure(next(r for r in board.validate(cache=cache).entries if r.path == twin))
    assert first.name == "duplicates" and len(searches) == 1  # the original has nothing earlier to compare
    again = failure(next(r for r in board.validate(cache=cache).entries if r.path == twin))
    assert again.message == first.message and len(searches) == 1  # the same board: the answer reused
    board.recon.write_bytes(board.recon.read_bytes()[:-8])  # the original's file no longer as signed
    after = {r.path: r for r in board.validate(cache=cache).entries}
    assert len(searches) == 2  # another board: searched again, and the original cannot be compared any more
    assert after[twin].trust != "failed", [(c.name, c.message) for c in after[twin].checks if c.status != "pass"]
    assert failure(after[board.entry]).name == "reconstructions"


# ---------------------------------------------------------------- forged records (issue 36, item 6)

def forge(folder, key: str, record: dict, *, secret: bytes | None = None) -> None:
    """A cache record as a submitter would plant it: the format, the key, and the integrity digest
    recomputed as the old format did (plain sha256, which anyone can compute) or with a given secret."""
    import hashlib
    import hmac

    body = vc.FORMAT.encode() + b"\0" + key.encode() + b"\0" + vc._canonical(record)
    digest = hmac.new(secret, body, hashlib.sha256).hexdigest() if secret else hashlib.sha256(body).hexdigest()
    path = folder / "checks" / key[:2] / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format": vc.FORMAT, "key": key, "digest": digest, "record": record}))


def plant(board, tmp_path, monkeypatch, folder, *, secret: bytes | None = None) -> None:
    """Plant in `folder` (the validation cache under RECONBENCH_CACHE) a checks record for the entry that
    claims a fabricated SSIM 0.97 and MSE 0.001 were re-scored, under the very key this toolkit looks up
    (derived from a genuine record, as a submitter can by running validate on their own machine)."""
    monkeypatch.setenv("RECONBENCH_CACHE", str(folder.parent))  # the key names the weights folder under it
    scratch = tmp_path.parent / f"{tmp_path.name}-scratch-{len(list(tmp_path.parent.glob(tmp_path.name + '-scratch-*')))}"
    board.validate(cache=keyed(scratch), rescore=True)
    [path] = list((scratch / "checks").rglob("*.json"))
    data = json.loads(path.read_text())
    record = data["record"]
    for c in record["checks"]:
        if c["name"].startswith("rescore."):
            c["status"], c["message"] = "pass", "SSIM 0.97 / MSE 0.001 re-scored within tolerance"
    record["checks"].append({"name": "rescore.ssim", "status": "pass", "message": "0.97", "details": []})
    forge(folder, data["key"], record, secret=secret)


def claims_verified(board, monkeypatch, secret: bytes | None) -> bool:
    """Validate with the default cache (RECONBENCH_CACHE) and the given CI secret: is the 0.97 reported?"""
    if secret:
        monkeypatch.setenv(vc.KEY_ENV, secret.decode())
    else:
        monkeypatch.delenv(vc.KEY_ENV, raising=False)
    report = next(r for r in board.validate(cache=True, rescore=True).entries if r.path == board.entry)
    return any("0.97" in c.message for c in report.checks)


def in_checkout(board):
    from submission_helpers import git

    git(board.root.parent, "init", "-q")  # the board's folder is a checkout
    return board.root.parent / "reconbench-cache" / "validation"  # where site.yml used to put the cache


@pytest.mark.parametrize("where", ["in the checkout", "in the user's cache"])
def test_a_planted_record_is_never_evidence(board, tmp_path, monkeypatch, calls, where):
    """Issue 36: a record committed under the old in-checkout cache folder, or placed in the cache folder
    itself, with its integrity digest recomputed, claiming SSIM 0.97: with no secret configured the cache
    is not read; with CI's secret the forged digest fails; the re-derived outcome is what is reported."""
    folder = in_checkout(board) if where == "in the checkout" else tmp_path.parent / f"{tmp_path.name}-xdg" / "validation"
    plant(board, tmp_path, monkeypatch, folder)
    assert not claims_verified(board, monkeypatch, None)  # no secret: nothing read
    assert not claims_verified(board, monkeypatch, b"the CI secret")  # a digest anyone can compute fails
    assert calls["rescore"] == 3  # re-derived each time (the first run made the genuine record)


def test_an_authentic_record_inside_the_checkout_is_not_read(board, tmp_path, monkeypatch, calls):
    """The cache lives outside the checkout: even a record bearing the right HMAC (a leaked secret) is not
    read from a folder a pull request can commit to; the same file outside it is (the control)."""
    plant(board, tmp_path, monkeypatch, in_checkout(board), secret=SECRET)
    assert not claims_verified(board, monkeypatch, SECRET)
    plant(board, tmp_path, monkeypatch, tmp_path.parent / f"{tmp_path.name}-outside" / "validation", secret=SECRET)
    assert claims_verified(board, monkeypatch, SECRET)


def test_without_a_secret_the_cache_is_inert(tmp_path):
    cache = ValidationCache(tmp_path / "cache", secret=b"")
    cache.store_record("checks", "a" * 64, {"x": 1})
    assert not (tmp_path / "cache").exists() and cache.load_record("checks", "a" * 64) is None


def test_a_record_planted_under_this_machines_key_is_not_evidence_where_verdicts_are_published(
        board, tmp_path, monkeypatch, calls):
    """Issue 36: an attack run with RECONBENCH_SANDBOX=none reads what its user can, this machine's own
    cache key (<config>/reconbench/validation-cache.key) included, and can plant a record under it. That
    key authenticates this machine's cache only (none is no boundary, and its warning line says so): the
    jobs that publish verdicts (site.yml, revalidate.yml) set CI's secret, and under it the record fails
    and the outcome is re-derived."""
    monkeypatch.setenv("RECONBENCH_HOME", str(tmp_path / "config"))  # this test's own machine key
    monkeypatch.delenv(vc.KEY_ENV, raising=False)
    stolen = vc.local_secret()  # what the unsandboxed attack reads
    assert stolen and (tmp_path / "config" / "validation-cache.key").stat().st_mode & 0o077 == 0
    plant(board, tmp_path, monkeypatch, tmp_path.parent / f"{tmp_path.name}-xdg" / "validation", secret=stolen)
    assert claims_verified(board, monkeypatch, None)  # this machine's own validate: the planted record is reused
    assert not claims_verified(board, monkeypatch, b"the CI secret")  # where CI publishes: re-derived
    for workflow in ("site.yml", "revalidate.yml"):
        text = (REPO / ".github" / "workflows" / workflow).read_text()
        assert f"{vc.KEY_ENV}: ${{{{ secrets.VALIDATION_CACHE_KEY }}}}" in text, workflow
