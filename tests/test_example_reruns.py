"""Every example entry, re-run with its own recorded command by a new team, is "this reproduces entry X"
to `submit` (before it writes) and to `validate` (issue 37, item 6): never "a forgery", never silence.

Re-running each entry's attack here is far too expensive (minutes to hours of CPU each), so each
test builds what a deterministic re-run of the entry's recorded command would produce today: the
entry's own reconstructions and settings, recorded the way the current toolkit records them (the
attack's code under its current module name, its configuration with every option the attack has
now, a new start time and entry id), signed by a new team's throwaway key. That is the re-run on
the same machine and thread count, where a CPU re-run is bit-identical (docs/architecture.md).
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from reconbench.core.envelope import RESULT_FILE, make_entry_id
from reconbench.core.moved import canonical_code
from reconbench.core.signing import generate_key, load_private_key, public_key_b64, sign_payload
from reconbench.modalities import for_attack
from reconbench.submissions.board import Board
from reconbench.submissions.layout import Unit
from reconbench.submissions.submit import SubmitError, submit_result
from reconbench.submissions.team import new_team, write_team
from reconbench.submissions.validate import run_checks

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(p.parent for p in (REPO / "submissions").glob("*/*/result.json"))
TEAM = "newcomer"
# validate's stages up to the duplicates check; re-scoring and the copy checks are the examples' own tests
STAGES = ("structure", "schema", "identity", "signature", "registry", "reconstructions", "duplicates")


def as_rerun(entry: Path, dest: Path, key) -> Path:
    """The run folder a new team's deterministic re-run of `entry`'s recorded command writes today."""
    shutil.copytree(entry, dest, ignore=shutil.ignore_patterns("README.md", "reproduction.json"))
    doc = json.loads((dest / RESULT_FILE).read_text())
    p, a = doc["payload"], doc["payload"]["attack"]
    if not a["code"].rpartition(":")[0].endswith(".py"):  # a registered attack: today's code and options
        a["code"] = canonical_code(a["code"])
        cls = for_attack(a["name"]).load_attack(a["name"])
        a["config"] = json.loads(json.dumps(cls(budget=a.get("budget") or "default", **a["config"]).config))
    prov = p["provenance"]
    started = datetime.fromisoformat(prov["started"])
    span = datetime.fromisoformat(prov["finished"]) - started
    now = datetime.now(timezone.utc).replace(microsecond=0) - span - timedelta(seconds=1)
    prov["started"], prov["finished"] = (t.isoformat().replace("+00:00", "Z") for t in (now, now + span))
    p["entry_id"] = make_entry_id(p["track"], a["name"], now, p["reconstructions"]["sha256"])
    doc["signature"] = sign_payload(p, key)
    (dest / RESULT_FILE).write_text(json.dumps(doc, indent=2))
    return dest


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory):
    home = tmp_path_factory.mktemp("reruns")
    key_path, _ = generate_key(home / "newcomer.pem")
    return home, key_path, load_private_key(key_path)


@pytest.mark.parametrize("entry", EXAMPLES, ids=lambda p: p.name)
def test_a_rerun_of_every_example_reproduces_it(entry, newcomer, tmp_path):
    home, key_path, key = newcomer
    original = f"{entry.parent.name}/{entry.name}"
    run = as_rerun(entry, tmp_path / "run", key)
    root = tmp_path / "submissions"
    shutil.copytree(entry.parent, root / entry.parent.name, ignore=lambda d, names: [
        n for n in names if Path(d) == entry.parent and n not in ("team.toml", entry.name)])
    with pytest.raises(SubmitError) as err:  # before anything is written
        submit_result(run, TEAM, root=root, key_path=key_path, team_name="Newcomer lab")
    assert str(err.value).startswith(f"this reproduces entry {original}"), str(err.value)
    assert not (root / TEAM).exists()

    staged = root / TEAM / json.loads((run / RESULT_FILE).read_text())["payload"]["entry_id"]
    shutil.copytree(run, staged)  # past submit, by hand: validate says the same
    write_team(root / TEAM, new_team(TEAM, "Newcomer lab", [], None, public_key_b64(key.public_key()),
                                     datetime.now(timezone.utc).date()))
    report = run_checks(Unit(path=staged, team=TEAM, entry_id=staged.name), root, Board(root), rescore=False,
                        stages=STAGES)
    failed = [c for c in report.checks if c.status == "fail"]
    assert [c.name for c in failed] == ["duplicates"], [c.to_dict() for c in report.checks]
    assert failed[0].message.startswith(f"this reproduces entry {original}, already on the board"), failed[0].message
