"""Issue 33: public data carried into an entry is never ranked, by any route.

- An attack file that embeds the public target set (exact, blurred, noise tuned just under the
  near-copy limits, mixed with noise) is evaluated in the sandbox, submitted and reproduced by a
  listed reproducer (a reproduction of its twin): validate still refuses it, because its attack/
  carries data (submissions/attackdata.py), and the held rule's reference is not lifted by it.
- An output that copies one public non-member (a holdout or a test image) among honest-looking
  outputs is refused with that reason (submissions/publiccopy.py through checks/copies.py).
"""

from __future__ import annotations

import base64
import zlib
from pathlib import Path

import numpy as np
import pytest

from reconbench.core.io import save_arrays, sha256_file
from reconbench.image.data.digits import digits_splits
from reconbench.image.results import RECONSTRUCTIONS_FILE
from reconbench.submissions.attackdata import data_problems, file_problems
from submission_helpers import failure, fresh_board, listed_reproducer

TEMPLATE = Path(__file__).parent / "attacks" / "carried" / "embedded.py"
MODES = ("exact", "blurred", "noised", "mixed")


def carried_attack(folder: Path, mode: str) -> Path:
    """tests/attacks/carried/embedded.py with the digits target set pasted in."""
    target = digits_splits().target
    data = base64.b64encode(zlib.compress(np.ascontiguousarray(target.images).tobytes()
                                          + np.ascontiguousarray(target.labels, dtype=np.int64).tobytes(), 9)).decode()
    text = TEMPLATE.read_text().replace('DATA = ""', f'DATA = "{data}"', 1)
    text = text.replace("SHAPE = (0, 1, 8, 8)", f"SHAPE = {tuple(target.images.shape)}", 1)
    text = text.replace('MODE = "exact"', f'MODE = "{mode}"', 1)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "attack.py").write_text(text)
    return folder / "attack.py"


@pytest.mark.parametrize("mode", MODES)
def test_every_variant_of_the_carried_target_set_is_flagged(tmp_path, mode):
    path = carried_attack(tmp_path / mode, mode)
    problems = data_problems(path.parent)
    assert problems and "literal" in problems[0]
    assert not data_problems(TEMPLATE.parent)  # the empty template itself carries nothing


def test_numbers_in_displays_and_data_files_are_flagged_and_code_is_not(tmp_path):
    target = digits_splits().target
    as_list = f"TARGETS = {target.images[:20].reshape(20, -1).tolist()}\n"  # 1,280 small integers
    assert any("numbers" in p for p in file_problems(tmp_path / "a.py", as_list))
    built_in = sorted((Path(__file__).parents[1] / "toolkit" / "reconbench" / "image" / "attacks").rglob("*.py"))
    assert len(built_in) > 10
    assert {p.name: file_problems(p, p.read_text()) for p in built_in if file_problems(p, p.read_text())} == {}
    (tmp_path / "weights.npy").write_bytes(b"\x93NUMPY")
    assert any("data file" in p for p in data_problems(tmp_path))


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    with listed_reproducer(tmp_path_factory.mktemp("reproducers")) as pair:
        yield pair


def test_a_reproduced_attack_that_carries_the_targets_is_never_ranked(tmp_path_factory, tmp_path, keys):
    """The forger's route of issue 33: evaluate the exact copy, submit, reproduce with a listed
    reproducer's key (the record verifies), validate: refused for the carried data."""
    from reconbench.image.evaluation import evaluate
    from reconbench.reproduction.sign import reproduce_entry
    from reconbench.submissions.submit import submit_result

    board = fresh_board(tmp_path_factory, tmp_path)
    path = carried_attack(tmp_path / "mine", "exact")
    out = evaluate(track_id="digits", attack_spec=f"{path}:Carried", scenario="static/black-box/none",
                   key_path=board.alpha_key, out=tmp_path / "result")
    assert out.result.payload.membership.extraction.members == len(digits_splits().target)
    entry = submit_result(tmp_path / "result", "alpha", root=board.root, key_path=board.alpha_key).entry
    reproduce_entry(entry, key_path=keys[0])
    report = [r for r in board.validate().entries if r.path == entry][0]
    fail = failure(report)
    assert fail.name == "reproduction" and "carries data" in fail.message and report.trust == "failed"


@pytest.mark.parametrize("split", ["holdout", "test"])
def test_one_copied_non_member_among_outputs_is_refused_with_that_reason(tmp_path_factory, tmp_path, split):
    board = fresh_board(tmp_path_factory, tmp_path)
    s = digits_splits()
    rng = np.random.default_rng(0)
    means = np.stack([s.aux_same.images[s.aux_same.labels == c].astype(float).mean(0) for c in range(10)])
    labels = (np.arange(len(s.target)) % 10).astype(np.int64)
    images = np.clip(means[labels] + rng.normal(0, 8, means[labels].shape), 0, 255).round().astype(np.uint8)
    part = getattr(s, split)
    images[7], labels[7] = part.images[3], part.labels[3]
    save_arrays(board.recon, {"images": images, "labels": labels})
    board.resign(lambda p: p["reconstructions"].update(sha256=sha256_file(board.entry / RECONSTRUCTIONS_FILE)))
    fail = failure(board.only())
    assert fail.name == "copies" and "not members" in fail.message and split in fail.message
    assert "indices 7" in fail.message and "carried data" in fail.message
