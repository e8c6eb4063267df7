"""Issue 43's hostile open-track attacks, end to end (evaluate in the sandbox, submit, reproduce, validate with the
re-score, build the board's frame): on an open track membership is public, so an own attack's extraction or
extraordinary gap is held until the board's sealed run of the same code agrees, and reproduction no longer
lifts it (submissions/leakage.py; the rule's own cases: tests/test_own_attack_holds.py).

- fashion-n100's target set moved by up to 3 grey levels, packed in `#` comments (or one hex integer, or short
  strings): the 256 KiB cap lets it through (measured here: about 78 KB), the static literal rule too; it is
  held, before and after a listed reproducer's re-run;
- 5 carried targets moved by 3 grey levels plus 95 noised holdout images (the gap goes negative, so the
  extraordinary rule alone never fired): held for its "extracts 5", with no reproduction needed;
- a second team's noised copy after the first team's reproduction: held (another team's own attack raises no
  reference).
None of them gets a verdict, a badge or a rank on the board."""

from __future__ import annotations

import lzma
import shutil
from pathlib import Path

import numpy as np
import pytest

from reconbench.core.signing import generate_key
from submission_helpers import listed_reproducer

TEMPLATE = Path(__file__).parent / "attacks" / "packed" / "packed.py"
TRACK = "fashion-n100"
SCENARIO = "static/black-box/none"


def packed_attack(folder: Path, images: np.ndarray, labels: np.ndarray, packing: str, noise_from: int | None = None,
                  sigma: float = 0.15) -> Path:
    """tests/attacks/packed/packed.py and its store.py, the images packed one of the issue's ways; with
    `noise_from`, the attack adds N(0, sigma^2) noise to the images from there on at run time."""
    blob = lzma.compress(np.ascontiguousarray(images).tobytes() + labels.astype(np.int8).tobytes(),
                         preset=9 | lzma.PRESET_EXTREME).hex()
    head = f"COUNT = {len(images)}\nSHAPE = {tuple(int(s) for s in images.shape[1:])}\n"
    if noise_from is not None:
        head += f"SIGMA = {sigma}\nNOISE_FROM = {noise_from}\n"
    if packing == "comments":
        body = "".join(f"# {blob[i:i + 200]}\n" for i in range(0, len(blob), 200))
    elif packing == "hex integer":
        body = f"DATA = 0x1{blob}\n"
    else:  # short strings, one a line
        body = "PARTS = [\n" + "".join(f'    "{blob[i:i + 200]}",\n' for i in range(0, len(blob), 200)) + "]\n"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(TEMPLATE, folder / "packed.py")
    (folder / "store.py").write_text(head + body)
    return folder / "packed.py"


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    from reconbench.image.data.fashion_splits import fashion_splits

    home = tmp_path_factory.mktemp("own-e2e")
    (home / "reproducers").mkdir()
    with listed_reproducer(home / "reproducers") as keys:
        yield home, keys, fashion_splits("fashion-mnist", 100)


def _evaluate_submit(home: Path, team: str, images: np.ndarray, labels: np.ndarray, packing: str,
                     noise_from: int | None = None) -> Path:
    from reconbench.image.evaluation import evaluate
    from reconbench.submissions.submit import submit_result

    key = home / "keys" / f"{team}.pem"
    if not key.exists():
        generate_key(key)
    path = packed_attack(home / f"attack-{team}", images, labels, packing, noise_from)
    out = home / f"result-{team}"
    evaluate(track_id=TRACK, attack_spec=f"{path}:Packed", scenario=SCENARIO, key_path=key, out=out)
    return submit_result(out, team, root=home / "submissions", key_path=key, team_name=f"Team {team}").entry


def _moved(images: np.ndarray, levels: int) -> np.ndarray:
    """Every pixel moved by `levels` grey levels, away from the nearer bound: per-pixel MSE (levels/255)^2, over the
    exact-copy bound (1e-4, one grey level of rounding) and under the extraction threshold (5.2e-4)."""
    x = images.astype(np.int16)
    return np.where(x < 128, x + levels, x - levels).astype(np.uint8)


def _validate(home: Path, entries: list[Path]):
    from reconbench.submissions import validate_entries

    reports = validate_entries(entries, root=home / "submissions", cache=False)
    return {r.path: r for r in reports}


def _on_the_board(reports) -> dict:
    from reconbench.leaderboard.frame import entries_frame, sort_board

    board = sort_board(entries_frame(reports))
    return {row["entry_id"]: row for row in board.to_dict("records")}


def test_the_packed_open_targets_are_held_and_a_reproduction_does_not_lift_them(board):
    from reconbench.core.attack_source import MAX_TOTAL_BYTES
    from reconbench.reproduction.sign import reproduce_entry
    from reconbench.submissions.attackdata import data_problems

    home, (reproducer, _), splits = board
    moved = _moved(splits.target.images, 3)
    for packing in ("comments", "hex integer", "strings"):  # every packing fits the cap and passes the literal rule
        folder = packed_attack(home / f"size-{packing}", moved, splits.target.labels, packing).parent
        size = sum(p.stat().st_size for p in folder.iterdir())
        assert size < MAX_TOTAL_BYTES and not data_problems(folder), (packing, size)
    entry = _evaluate_submit(home, "alpha", moved, splits.target.labels, "comments")
    reproduce_entry(entry, key_path=reproducer)
    report = _validate(home, [entry])[entry]
    assert any(c.name == "reproduction" and c.status == "pass" for c in report.checks)  # the re-run made these bytes
    assert report.extraction.members == 100 and report.extraction.extracts
    assert report.trust == "held", [c.to_dict() for c in report.checks]
    assert "own attack on an open track" in report.held_reason and "extracts 100 members" in report.held_reason
    row = _on_the_board([report])[report.entry_id]
    assert row["verdict"] is None and row["tier"] is None and unranked(row)


def unranked(row: dict) -> bool:
    import pandas as pd

    return pd.isna(row["position"])


def test_five_carried_targets_among_noised_holdout_images_are_held_without_a_reproduction(board):
    home, _, splits = board
    t, h = splits.target, splits.holdout
    images = np.concatenate([_moved(t.images[:5], 3), h.images[5:]])  # the attack noises the holdout images
    labels = np.concatenate([t.labels[:5], h.labels[5:]])
    entry = _evaluate_submit(home, "gamma", images, labels, "strings", noise_from=5)
    report = _validate(home, [entry])[entry]
    assert report.extraction.members == 5 and report.extraction.extracts
    assert report.trust == "held" and "extracts 5 members" in report.held_reason, report.held_reason
    row = _on_the_board([report])[report.entry_id]
    assert row["verdict"] is None and unranked(row)


def test_a_second_team_s_noised_copy_stays_held_after_the_first_team_s_reproduction(board):
    home, _, splits = board
    first = home / "submissions" / "alpha"
    assert any((p / "reproduction.json").is_file() for p in first.iterdir() if p.is_dir())  # the first test's entry
    entry = _evaluate_submit(home, "beta", splits.target.images, splits.target.labels, "hex integer", noise_from=0)
    report = _validate(home, [entry])[entry]
    assert report.trust == "held", [c.to_dict() for c in report.checks]
    assert "extraordinary leakage" in report.held_reason
    assert unranked(_on_the_board([report])[report.entry_id])
