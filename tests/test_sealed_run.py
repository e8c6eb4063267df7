"""The board's sealed run (issue 43, item 1): a sealed submission is the attack; the board runs it on every draw
of the twin in the sandbox, scores it with the key and signs one record of numbers; validation checks the
records without the key; after the reveal anyone recomputes them from the board's published output.

Everything uses a throwaway key: a tiny season ("test-season", 2 draws of fashion-n100's sealed twin, models
trained in seconds) in a registry of the test's own (RECONBENCH_REGISTRY), the data in a temporary folder.
"""

from __future__ import annotations

import base64
import json
import lzma
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from reconbench.core.seal import new_key

ATTACKS = Path(__file__).parent / "attacks"
GROUP = "fashion-n100-sealed"
SEASON = "test-season"
DRAWS = 2
FAST = {"iterations": 40}  # mi-face: a few seconds per draw


@pytest.fixture(scope="module")
def season(tmp_path_factory):
    """A throwaway-key season of DRAWS draws of fashion-n100-sealed: home, key file, key, registry file."""
    from reconbench.core.tracks import SEALED_FILE, get_track, registry_path
    from reconbench.image.models.sealed_registry import SEALED, draw_row
    from reconbench.image.models.training import TrainConfig

    home = tmp_path_factory.mktemp("sealed-run")
    key = bytes.fromhex(new_key())
    (home / "seal.key").write_text(key.hex() + "\n")
    shipped = json.loads(registry_path().with_name(SEALED_FILE).read_text())["tracks"]
    rows = []
    for d in range(DRAWS):
        row = draw_row(SEALED[GROUP], d, DRAWS, key, home / "data", config=TrainConfig(epochs=20, batch_size=64, lr=1e-3, seed=0),
                       season=SEASON, reveal_after="2000-01-01")
        row["source"]["model_file"] = str(home / "data" / row["source"]["model_file"])  # never the package's data folder
        row["near_copy"] = next(t["near_copy"] for t in shipped if t["seal"]["group"] == GROUP)
        rows.append(row)
    opened = get_track("fashion-n100").model_dump(mode="json", exclude_none=True)
    registry = home / "registry.json"
    registry.write_text(json.dumps({"schema_version": 1, "tracks": [opened, *rows]}))
    return home, home / "seal.key", key, registry


@pytest.fixture
def board(season, monkeypatch, tmp_path):
    """The season's registry in force, the sandbox required, and a fresh board: submissions root, private out."""
    home, key_file, key, registry = season
    monkeypatch.setenv("RECONBENCH_REGISTRY", str(registry))
    monkeypatch.setenv("RECONBENCH_SANDBOX", "bubblewrap")
    root, out, subs = tmp_path / "submissions", tmp_path / "private", tmp_path / "sealed-submissions"
    root.mkdir()
    return dict(home=home, key_file=key_file, key=key, root=root, out=out, subs=subs)


def _submission(subs: Path, team: str, run: str, text: str, season: str = SEASON) -> Path:
    path = subs / season / team / run / "submission.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


REGISTERED = f'''twin = "{GROUP}"
scenario = "static/white-box/none"
budget = "quick"
seed = 0

[attack]
name = "mi-face"

[options]
iterations = {FAST["iterations"]}
'''


def _own(subs: Path, team: str, run: str, code: str, cls: str, scenario: str = "static/black-box/same") -> Path:
    path = _submission(subs, team, run, f'twin = "{GROUP}"\nscenario = "{scenario}"\nbudget = "quick"\n\n'
                                        f'[attack]\nfile = "attack.py"\nclass = "{cls}"\n')
    (path.parent / "attack").mkdir()
    (path.parent / "attack" / "attack.py").write_text(code)
    return path


def test_the_board_runs_a_registered_attack_on_every_draw_signs_one_record_and_verify_recomputes_it(board, tmp_path):
    """seal -> the board's sealed run -> validate the record -> reveal -> verify from the private output."""
    from reconbench.core.sealed_runs import SealedRun, record_path
    from reconbench.core.tracks import sealed_draws
    from reconbench.pipeline.sealed_run import run
    from reconbench.submissions.seal_reveal import read_reveal, reveal, verify
    from reconbench.submissions.sealed_run_check import check_runs

    sub = _submission(board["subs"], "lab-a", "first", REGISTERED)
    done = run(sub, board["key"], out=board["out"], root=board["root"], seal_key_path=board["key_file"])
    assert done.path == record_path(board["root"], SEASON, "lab-a", "first") and done.path.is_file()
    record = SealedRun.model_validate(json.loads(done.path.read_text()))
    draws = sealed_draws(GROUP)
    assert [(d.track, d.model_sha256) for d in record.draws] == [(t.id, t.target_model_sha256) for t in draws]
    assert all(d.status == "scored" and d.membership["ssim"]["status"] == "computed" for d in record.draws)
    assert all(d.extraction["n_members"] == 100 and d.output_mac for d in record.draws)
    assert record.attack.name == "mi-face" and record.attack.source_sha256 is None and record.attack.budget == "quick"
    assert record.tier in ("no evidence", "membership signal", "extracts")  # a verdict: every draw was scored
    # numbers only: no key, no pixels, no reconstructions; those went to the private output, one folder per draw
    text = done.path.read_text()
    assert board["key"].hex() not in text and "images" not in text and len(text) < 40_000
    assert sorted(p.name for p in done.out.iterdir()) == [t.id for t in draws]
    assert all((done.out / t.id / "reconstructions.safetensors").is_file() for t in draws)
    assert not list(board["root"].glob("sealed-runs/**/*.safetensors"))
    # rounded to the board's digits: a published number is a channel out of the attack's process
    gap = record.draws[0].membership["ssim"]["gap"]
    assert gap == float(f"{gap:.3g}")
    # validation without the key: the board's record passes
    (checked,) = check_runs(board["root"])
    assert checked.ok, checked.message
    # reveal, then anyone recomputes the record from the board's published output
    reveal(board["key"], SEASON, tmp_path / "reveal.json")
    revealed, season = read_reveal(tmp_path / "reveal.json")
    _, verified = verify(revealed, season, board["root"], runs_out=board["out"])
    (mine,) = [v for v in verified if v.entry.startswith("sealed run")]
    assert mine.ok, mine.message
    # an output swapped after the run is caught by its MAC
    recon = done.out / draws[1].id / "reconstructions.safetensors"
    shutil.copy(done.out / draws[0].id / "reconstructions.safetensors", recon)
    _, verified = verify(revealed, season, board["root"], runs_out=board["out"])
    (mine,) = [v for v in verified if v.entry.startswith("sealed run")]
    assert not mine.ok and "output_mac" in mine.message
