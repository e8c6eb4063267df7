"""docs/portability.md states the rebuild bounds that image/models/fashion_rebuild.py applies (issue 47):
the page and the code say the same numbers, and every test it names exists."""

from __future__ import annotations

import re
from pathlib import Path

from reconbench.image.models.fashion_rebuild import BOUNDS

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "portability.md").read_text(encoding="utf-8")


def row(start: str) -> str:
    (line,) = [line for line in PAGE.splitlines() if line.startswith(start)]
    return line


def test_the_page_states_the_bounds_the_code_applies():
    target, evaluator = BOUNDS["target"], BOUNDS["evaluator"]
    line = row("| a Fashion-MNIST target **rebuilt**")
    assert f"within {target.weights_rel_l2:g} relative l2" in line
    assert f"at least {target.test_agreement:.0%}".replace("%", " %") in line
    assert f"accuracy within {target.accuracy_delta:g}" in line
    line = row("| a Fashion-MNIST evaluation classifier **rebuilt**")
    assert evaluator.weights_rel_l2 is None and "no bound on the weights" in line
    assert f"accuracy within {evaluator.accuracy_delta:g}" in line
    assert f"at least {evaluator.test_agreement:.0%}".replace("%", " %") in line


def test_every_file_the_page_names_is_there():
    for path in set(re.findall(r"`((?:tests|benchmarks)/[\w/.]+\.py)`", PAGE)):
        assert (ROOT / path).is_file(), path
    for module in set(re.findall(r"`((?:image|reproduction|core)/[\w/]+\.py)", PAGE)):
        assert (ROOT / "toolkit" / "reconbench" / module).is_file(), module
