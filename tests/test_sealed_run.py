"""The board's sealed run (issue 43, item 1): a sealed submission is the attack; the board runs it on every draw
of the twin in the sandbox, scores it with the key and signs one record of numbers; validation checks the
records without the key; after the reveal anyone recomputes them from the board's published output.

Everything uses a throwaway key: a tiny season 2026-s2 (scheme v2: 2 draws of fashion-n100's sealed twin, models
trained in seconds, kept encrypted) in a registry of the test's own (RECONBENCH_REGISTRY), its files in a
temporary folder (image/sealed.sealed_path pointed there).
"""

from __future__ import annotations

import json
import os
import shutil
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from reconbench.core.seal import new_key
from carried_attack import write_carried_attack

ATTACKS = Path(__file__).parent / "attacks"
GROUP = "fashion-n100-sealed-s2"
SEASON = "2026-s2"
DRAWS = 2
FAST = {"iterations": 40}  # mi-face: a few seconds per draw


@pytest.fixture(scope="module")
def season(tmp_path_factory):
    """A throwaway season 2026-s2 of DRAWS draws of fashion-n100-sealed-s2 (v2: pools drawn from the whole sealed
    block, weights encrypted): home, key file, master key, registry file."""
    from reconbench.core.tracks import SEALED_FILE, get_track, registry_path
    from reconbench.image.models.sealed_registry import SEALED, draw_row_v2
    from reconbench.image.models.training import TrainConfig

    home = tmp_path_factory.mktemp("sealed-run")
    key = bytes.fromhex(new_key())
    (home / "seal.key").write_text(key.hex() + "\n")
    fast = TrainConfig(epochs=20, batch_size=64, lr=1e-3, seed=0)
    rows = [draw_row_v2(SEALED["fashion-n100-sealed"], d, DRAWS, key, home / "data", config=fast) for d in range(DRAWS)]
    assert {r["seal"]["group"] for r in rows} == {GROUP} and {r["seal"]["season"] for r in rows} == {SEASON}
    opened = get_track("fashion-n100").model_dump(mode="json", exclude_none=True)
    shipped = json.loads(registry_path().with_name(SEALED_FILE).read_text())["tracks"]
    practice = [t for t in shipped if t["seal"]["group"] == "fashion-n100-sealed"]  # the burned season's twin
    registry = home / "registry.json"
    registry.write_text(json.dumps({"schema_version": 1, "tracks": [opened, *practice, *rows]}))
    return home, home / "seal.key", key, registry


@pytest.fixture
def board(season, monkeypatch, tmp_path):
    """The season's registry in force (its encrypted files in the test's data folder), the sandbox required, and a
    fresh board: submissions root, private out."""
    home, key_file, key, registry = season
    monkeypatch.setenv("RECONBENCH_REGISTRY", str(registry))
    monkeypatch.setenv("RECONBENCH_SANDBOX", "bubblewrap")
    monkeypatch.setattr("reconbench.image.sealed.sealed_path", lambda name: home / "data" / name)
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
    path = _submission(subs, team, run, f'twin = "{GROUP}"\nscenario = "{scenario}"\n\n'
                                        f'[attack]\nfile = "attack.py"\nclass = "{cls}"\n')
    (path.parent / "attack").mkdir()
    (path.parent / "attack" / "attack.py").write_text(code)
    return path


def test_the_board_runs_a_registered_attack_and_an_own_attack_on_every_draw_and_verify_recomputes_them(board, tmp_path):
    """seal -> the board's sealed run -> validate the record -> reveal -> verify from the private output."""
    from reconbench.core.sealed_runs import SealedRun, record_path
    from reconbench.core.tracks import sealed_draws
    from reconbench.submissions.sealed_run import run
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
    # few numbers, rounded to the board's digits: a published number is a channel out of the attack's process
    gap = record.draws[0].membership["ssim"]["gap"]
    assert gap == float(f"{gap:.3g}") and set(record.draws[0].membership["ssim"]) == {"status", "gap", "low", "high", "p"}
    assert set(record.draws[0].metrics) == {"mse", "psnr", "ssim"} and "per_class" not in text and "acc_top1" not in text
    # an own attack folder, run the same way: its record names the source by its hash
    own = run(_own(board["subs"], "lab-a", "own", PEEK.format(files=[], folders=[]), "Peek"), board["key"],
              out=board["out"], root=board["root"], seal_key_path=board["key_file"])
    assert own.record.attack.source_sha256 and all(d.status == "scored" for d in own.record.draws)
    # validation without the key: the board's records pass
    assert [c.ok for c in check_runs(board["root"])] == [True, True], [c.message for c in check_runs(board["root"])]
    # the output travels encrypted under the season's key (CI's artifact): nothing readable in it before the reveal
    from reconbench.core.seal import SealError
    from reconbench.submissions.sealed_run import pack_output, unpack_output

    archive = pack_output(board["out"] / SEASON, board["key"], SEASON, tmp_path / "output.sealed")
    raw = archive.read_bytes()
    assert b"safetensors" not in raw and b"reconstructions" not in raw and board["key"].hex().encode() not in raw
    with pytest.raises(SealError, match="does not open"):
        unpack_output(archive, board["key"], SEASON, tmp_path / "wrong")  # the board's master is not the season key
    # reveal, then anyone opens the output and recomputes the record from it
    reveal(board["key"], SEASON, tmp_path / "reveal.json")
    revealed, season = read_reveal(tmp_path / "reveal.json")
    published = tmp_path / "published"
    unpack_output(archive, revealed, season, published / SEASON)
    _, verified = verify(revealed, season, board["root"], runs_out=published)
    assert all(v.ok for v in verified), [v.message for v in verified if not v.ok]
    assert sum(v.entry.startswith("sealed run") for v in verified) == 2  # both runs recomputed
    assert sum("decrypted" in v.message for v in verified) == DRAWS  # and each draw's weights decrypted and checked
    # an output swapped after the run is caught by its MAC
    out = published / SEASON / "lab-a" / "first"
    shutil.copy(out / draws[0].id / "reconstructions.safetensors", out / draws[1].id / "reconstructions.safetensors")
    _, verified = verify(revealed, season, board["root"], runs_out=published)
    (mine,) = [v for v in verified if v.entry == f"sealed run {SEASON}/lab-a/first"]
    assert not mine.ok and "output_mac" in mine.message


def _record(key: bytes, team: str, run: str, ran_at: str, *, scored: bool = True, signer_key: bytes | None = None) -> dict:
    """A run record as the board writes one (numbers of a knowledge-only output), signed by `signer_key` (the
    season's key, derived from the board's key, by default); the test holds the key, as the board does."""
    from reconbench.core.sealed_records import sign_record
    from reconbench.core.sealed_run_verdict import run_verdict
    from reconbench.core.sealed_runs import DrawOutcome, SealedAttack, SealedRun
    from reconbench.core.tracks import sealed_draws

    gap = {"status": "computed", "gap": 0.001, "low": -0.01, "high": 0.012, "p": 0.4}
    count = {"members": 0, "n_members": 100, "holdout": 0, "n_holdout": 100, "p": 1.0, "expected_members": 0.05,
             "expected_holdout": 0.05}
    draws = [DrawOutcome(track=t.id, model_sha256=t.target_model_sha256, status="scored" if scored else "failed",
                         membership={m: gap for m in ("mse", "psnr", "ssim")} if scored else None,
                         extraction=count if scored else None, reason=None if scored else "3 of 100 carried",
                         output_mac="ab" * 32 if scored else None) for t in sealed_draws(GROUP)]
    verdict = run_verdict([d.model_dump(mode="json") for d in draws])
    record = SealedRun(season=SEASON, twin=GROUP, open_twin="fashion-n100", team=team, run=run,
                       attack=SealedAttack(name="mi-face", scenario="static/white-box/none"), ran_at=ran_at, draws=draws,
                       tier=verdict.tier.word if verdict.tier else None, extracts=verdict.members)
    from reconbench.core.seal import season_key

    return sign_record(record.model_dump(mode="json", by_alias=True, exclude={"signature"}),
                       signer_key or season_key(key, SEASON))


def _put(root: Path, record: dict) -> Path:
    path = root / "sealed-runs" / record["season"] / record["team"] / record["run"] / "record.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2))
    return path


def test_hostile_run_records_fail_validation_and_the_sixth_run_is_refused_before_anything_runs(board):
    """A record written by hand, one with a changed number, one signed by another season's signer, one whose draws
    are relabelled or whose tier its numbers do not give, a stray file: each fails `seal check-runs` (and validate).
    The run limit: five runs of a team on a twin pass, a sixth record fails, and `seal run` refuses a sixth run
    before anything runs."""
    from typer.testing import CliRunner

    from reconbench.cli import app
    from reconbench.core.sealed_records import unsigned
    from reconbench.core.sealed_runs import RUN_LIMIT
    from reconbench.submissions.sealed_run import SealedRunError, run
    from reconbench.submissions.sealed_run_check import check_runs

    key, root = board["key"], board["root"]
    for i in range(RUN_LIMIT):
        _put(root, _record(key, "lab-b", f"run-{i}", f"2026-12-0{i + 1}T00:00:00Z", scored=i % 2 == 0))
    assert all(c.ok for c in check_runs(root)) and len(check_runs(root)) == RUN_LIMIT
    # the sixth run: refused before the attack runs (no private output is even made), by the CLI too
    sub = _submission(board["subs"], "lab-b", "sixth", REGISTERED)
    with pytest.raises(SealedRunError, match=f"used its {RUN_LIMIT} board runs"):
        run(sub, key, out=board["out"], root=root)
    assert not board["out"].exists()
    res = CliRunner().invoke(app, ["seal", "run", str(sub), "--seal-key", str(board["key_file"]), "--out",
                                   str(board["out"]), "--root", str(root)])
    assert res.exit_code == 1 and f"used its {RUN_LIMIT} board runs" in res.output and not board["out"].exists()
    # a sixth record (the board would not have written it): the latest one fails the limit
    sixth = _put(root, _record(key, "lab-b", "late", "2026-12-09T00:00:00Z"))
    assert [c.ok for c in check_runs(root) if c.path == str(sixth)] == [False]
    assert "over the limit" in next(c.message for c in check_runs(root) if c.path == str(sixth))
    shutil.rmtree(sixth.parent)
    good = _record(key, "lab-c", "one", "2026-12-01T00:00:00Z")
    changed = json.loads(json.dumps(good))
    changed["draws"][0]["membership"]["ssim"]["gap"] = 0.3
    relabelled = unsigned(good)
    relabelled["draws"] = relabelled["draws"][::-1]
    from reconbench.core.seal import season_key
    from reconbench.core.sealed_records import sign_record

    claimed = unsigned(good) | {"tier": "extracts", "extracts": 40}
    cases = {
        "by hand": (unsigned(good), "carries no signature"),
        "changed": (changed, "does not verify"),
        "other season": (_record(key, "lab-c", "one", "2026-12-01T00:00:00Z", signer_key=bytes.fromhex(new_key())),
                         "signed by another key"),
        "relabelled": (sign_record(relabelled, season_key(key, SEASON)), "not the twin's"),
        "tier": (sign_record(claimed, season_key(key, SEASON)), "is not what its numbers give"),
        "the board's master": (_record(key, "lab-c", "one", "2026-12-01T00:00:00Z", signer_key=key), "signed by another key"),
    }
    for name, (record, why) in cases.items():
        path = _put(root, record)
        (found,) = [c for c in check_runs(root) if c.path == str(path)]
        assert not found.ok and why in found.message, (name, found.message)
        res = CliRunner().invoke(app, ["seal", "check-runs", "--root", str(root)])
        assert res.exit_code == 1 and why in res.output.replace("\n", ""), name
    path = _put(root, good)
    assert all(c.ok for c in check_runs(root))
    (path.parent / "notes.md").write_text("x")
    assert [c.ok for c in check_runs(root) if "notes.md" in c.path] == [False]


def test_validate_checks_the_run_records_and_the_entry_layout_skips_their_folder(board):
    """The run records live at submissions/sealed-runs/: not a team folder for the entry checks, and `validate`
    checks them (a record written by hand fails it)."""
    from typer.testing import CliRunner

    from reconbench.cli import app
    from reconbench.core.sealed_records import unsigned
    from reconbench.submissions.layout import all_units, discover_entries

    root = board["root"]
    path = _put(root, _record(board["key"], "lab-d", "one", "2026-12-01T00:00:00Z"))
    assert discover_entries(root) == [] and all_units(root).units == []
    res = CliRunner().invoke(app, ["validate", "--root", str(root), "--no-rescore", "--offline"])
    assert res.exit_code == 0, res.output
    path.write_text(json.dumps(unsigned(json.loads(path.read_text()))))
    res = CliRunner().invoke(app, ["validate", "--root", str(root), "--no-rescore", "--offline"])
    assert res.exit_code == 1 and "carries no signature" in res.output.replace("\n", "")
    res = CliRunner().invoke(app, ["validate", "--root", str(root), "--no-rescore", "--offline", str(path)])
    assert res.exit_code == 1 and "carries no signature" in res.output.replace("\n", "") and "no entry" not in res.output


PEEK = '''"""An own attack that tries to read the board's secrets from inside the sandbox (tests/test_sealed_run.py)."""

import os

import torch

from reconbench.image.attacks.base import Attack, AttackError, Reconstruction

FILES = {files!r}
FOLDERS = {folders!r}


def _read(path):
    """Bytes of `path` by Python's open, else by native code (torch.from_file: no audit hook sees it)."""
    try:
        with open(path, "rb") as f:
            return f.read(64)
    except Exception:  # noqa: BLE001 - a refusal is what the board wants
        pass
    try:
        return bytes(torch.from_file(path, size=16, dtype=torch.uint8).tolist())
    except Exception:  # noqa: BLE001
        return b""


class Peek(Attack):
    name, paper, family, scenarios = "peek", "none", "training", ("static/black-box/same",)

    def run(self, knowledge, *, seed, progress):
        if not _read("/attack/attack.py"):  # the probe works: its own source is readable
            raise AttackError("PROBE BROKEN: cannot read its own source")
        leaks = [p for p in FILES if _read(p)]
        for folder in FOLDERS:
            try:
                if os.listdir(folder):
                    leaks.append(folder)
            except Exception:  # noqa: BLE001
                pass
        if leaks:
            raise AttackError("LEAKED " + " ".join(leaks))
        aux = knowledge.aux_data  # knowledge only: means of 8 aux images of a class (a copy of one would be refused)
        x, y = aux.as_float(), torch.from_numpy(aux.labels.copy())
        pick = [(i % knowledge.num_classes, i // knowledge.num_classes) for i in range(knowledge.target_size)]
        images = torch.stack([x[y == c][8 * k:8 * k + 8].mean(0) for c, k in pick])
        return Reconstruction(images, torch.tensor([c for c, _ in pick]))
'''


def test_hostile_own_attack_sees_neither_the_key_nor_the_weights_nor_the_private_output(board):
    """An own attack reads (by Python and by native code) the key file, a copy of it inside the bound site-packages
    (only the run's `hiding` covers a .py name there), the draws' encrypted weight files, the package's sealed folder, the
    test registry, and lists the private output folder and the data folder: it reads nothing, on every draw, and
    the sandbox's mount arguments do not bind the key or the private output."""
    from reconbench.core.tracks import embedded_file, sealed_draws
    from reconbench.pipeline.isolation import parent, sandbox
    from reconbench.submissions.sealed_run import run

    import reconbench

    package = Path(reconbench.__file__).resolve().parent
    # a key file as a .py inside a bound folder, where only hiding() covers it: site-packages, not the package, whose
    # source other tests read while this one runs (a key file there is not Python)
    inside = Path(sysconfig.get_paths()["purelib"]) / f"_test_sealed_run_key_{os.getpid()}.py"
    inside.write_text(board["key"].hex() + "\n")
    try:
        draws = sealed_draws(GROUP)
        encrypted = [t.seal.files["model"].file for t in draws]
        files = [str(board["key_file"]), str(inside), *(str(board["home"] / "data" / f) for f in encrypted),
                 *(str(embedded_file(f)) for f in encrypted),  # the package's sealed folder (the shipped season's files)
                 str(embedded_file("fashion/sealed/fashion-n100-sealed-d0.safetensors")),
                 str(board["home"] / "registry.json"), os.environ["RECONBENCH_REGISTRY"]]
        out = board["out"]
        out.mkdir()
        (out / "earlier-run.txt").write_text("a private output of an earlier run")
        sub = _own(board["subs"], "lab-e", "peek", PEEK.format(files=files, folders=[str(out), str(board["home"] / "data")]), "Peek")
        # the mount arguments, as the run builds them: the key and the private output are covered where bound
        box = sandbox.choose()
        with sandbox.hiding([str(inside), str(out)]):
            args = box.command(["python"], package=package, env={}, secrets=parent._secret_paths())
        assert ["--ro-bind", "/dev/null", str(inside)] == args[args.index(str(inside)) - 2:args.index(str(inside)) + 1]
        assert str(board["key_file"]) not in args and str(board["home"]) not in " ".join(args)
        # the package's data folder (its sealed/ weights among them) is an empty tmpfs in the sandbox
        data = str(package / "data")
        assert args[args.index(data) - 1] == "--tmpfs" and not any(a.startswith(data + "/") for a in args)
        done = run(sub, board["key"], out=out, root=board["root"], seal_key_path=inside)
        errors = {p.name: p.read_text() for p in done.out.glob("*.error.txt")}
        assert errors == {} and all(d.status == "scored" for d in done.record.draws), errors
        assert done.record.attack.source_sha256  # an own attack is named by its source's hash
    finally:
        inside.unlink()


def test_a_failing_own_attack_s_message_is_kept_private(board):
    """The attack's own error text could carry what it saw of the model: the record says only that it failed."""
    from reconbench.submissions.sealed_run import run

    code = PEEK.format(files=["/attack/attack.py"], folders=[])  # reads its own source: "LEAKED /attack/attack.py"
    done = run(_own(board["subs"], "lab-f", "loud", code, "Peek"), board["key"], out=board["out"], root=board["root"])
    assert all(d.status == "failed" for d in done.record.draws) and done.record.tier is None
    assert "LEAKED" not in done.path.read_text() and "AttackError" in done.record.draws[0].reason
    assert "LEAKED" in next(done.out.glob("*.error.txt")).read_text()  # the board's private log has it


def _bad(board, case: str) -> Path:
    """A hostile or broken sealed submission (see test_a_sealed_submission_is_parsed_strictly)."""
    subs = board["subs"]
    good = REGISTERED
    own = f'twin = "{GROUP}"\nscenario = "static/black-box/same"\n\n[attack]\nfile = "attack.py"\nclass = "Peek"\n'
    code = PEEK.format(files=[], folders=[])
    if case == "unknown key":
        return _submission(subs, "lab", "r", "foo = 1\n" + good)
    if case == "team name":
        return _submission(subs, "Lab_A", "r", good)
    if case == "season folder":
        return _submission(subs, "lab", "r", good, season="2026 s2")
    if case == "linked run":
        real = _submission(subs, "lab", "real", good)
        (subs / SEASON / "lab" / "r").symlink_to(real.parent)
        return subs / SEASON / "lab" / "r" / "submission.toml"
    if case == "linked file":
        real = _submission(subs, "lab", "real", good)
        (subs / SEASON / "lab" / "r").mkdir()
        (subs / SEASON / "lab" / "r" / "submission.toml").symlink_to(real)
        return subs / SEASON / "lab" / "r" / "submission.toml"
    if case == "oversize":
        return _submission(subs, "lab", "r", good + "#" * 20_000 + "\n")
    if case == "not utf-8":
        path = _submission(subs, "lab", "r", "")
        path.write_bytes(b'twin = "\xff"\n')
        return path
    if case == "not toml":
        return _submission(subs, "lab", "r", "twin = \n")
    if case == "both attacks":
        return _submission(subs, "lab", "r", good.replace('name = "mi-face"', 'name = "mi-face"\nfile = "a.py"\nclass = "A"'))
    if case == "unknown attack":
        return _submission(subs, "lab", "r", good.replace('"mi-face"', '"mi-face2"'))
    if case == "bad option":
        return _submission(subs, "lab", "r", good.replace("iterations = 40", "iterations = -5"))
    if case == "nested option":
        return _submission(subs, "lab", "r", good + "[options.deep]\nx = 1\n")
    if case == "budget":
        return _submission(subs, "lab", "r", good.replace('"quick"', '"huge"'))
    if case == "seed":
        return _submission(subs, "lab", "r", good.replace("seed = 0", "seed = -1"))
    if case == "scenario":
        return _submission(subs, "lab", "r", good.replace("static/white-box/none", "dynamic/white-box/none"))
    if case == "other season's twin":
        return _submission(subs, "lab", "r", good.replace(GROUP, "fashion-n100-sealed"))
    if case == "burned season":
        return _submission(subs, "lab", "r", good.replace(GROUP, "fashion-n100-sealed"), season="2026-s1")
    if case == "not a twin":
        return _submission(subs, "lab", "r", good.replace(GROUP, "fashion-n100"))
    if case in ("dotdot file", "sub file"):
        path = _submission(subs, "lab", "r", own.replace('"attack.py"', '"../x.py"' if case == "dotdot file" else '"sub/x.py"'))
        (path.parent / "attack").mkdir()
        return path
    path = _submission(subs, "lab", "r", own)
    folder = path.parent / "attack"
    if case == "linked folder":
        (path.parent / "elsewhere").mkdir()
        (path.parent / "elsewhere" / "attack.py").write_text(code)
        folder.symlink_to(path.parent / "elsewhere")
        return path
    folder.mkdir()
    (folder / "attack.py").write_text(code)
    if case == "data file":
        (folder / "pool.bin").write_bytes(b"\0" * 100)
    elif case == "unused file":
        (folder / "stash.py").write_text("DATA = 1\n")
    elif case == "over the cap":  # three imported modules of 100 KiB: over 256 KiB together
        for i in range(3):
            (folder / f"part{i}.py").write_text(f"# {'x' * 100_000}\n")
        (folder / "attack.py").write_text("import part0\nimport part1\nimport part2\n" + code)
    elif case == "no class file":
        (folder / "attack.py").unlink()
        (folder / "other.py").write_text(code)
    return path


BAD = {
    "unknown key": "unknown key 'foo'", "team name": "team folder 'Lab_A' is not a plain name",
    "season folder": "season folder", "linked run": "is a link", "linked file": "not a regular file",
    "oversize": "over the 16,384-byte cap", "not utf-8": "not UTF-8", "not toml": "not valid TOML",
    "both attacks": "[attack] takes", "unknown attack": "is not a registered attack", "bad option": "attack 'mi-face'",
    "nested option": "a number, a string", "budget": "budget 'huge'", "seed": "seed must be", "scenario": "not a cell",
    "other season's twin": "is of season 2026-s1", "burned season": "season 2026-s1 is burned",
    "not a twin": "is not a sealed twin", "dotdot file": "attack.file '../x.py'", "sub file": "attack.file 'sub/x.py'",
    "linked folder": "is not a folder (links are refused)", "data file": "only .py files",
    "unused file": "does not import", "over the cap": "cap on all its files together", "no class file": "is not in attack/",
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_sealed_submission_is_parsed_strictly_one_message_naming_the_file(board, case):
    from reconbench.submissions.sealed_submission import SealedSubmissionError, parse

    path = _bad(board, case)
    with pytest.raises(SealedSubmissionError) as caught:
        parse(path)
    message = str(caught.value)
    assert message.startswith(str(path)) and BAD[case] in message and "\n" not in message, message


def test_seal_run_refuses_a_bad_submission_in_one_line_before_anything_runs(board):
    from typer.testing import CliRunner

    from reconbench.cli import app

    path = _bad(board, "unknown key")
    res = CliRunner().invoke(app, ["seal", "run", str(path), "--seal-key", str(board["key_file"]), "--out",
                                   str(board["out"]), "--root", str(board["root"])])
    assert res.exit_code == 1 and "unknown key 'foo'" in res.output and not board["out"].exists()
    assert not (board["root"] / "sealed-runs").exists()
    # validate.yml's keyless step: the paths a pull request changes (an attack file names its submission)
    good = _own(board["subs"], "lab", "own", PEEK.format(files=[], folders=[]), "Peek")
    listing = board["home"].parent / "changed.bin"
    listing.write_bytes(b"\0".join(str(p).encode() for p in (good.parent / "attack" / "attack.py", path, "README.md")))
    res = CliRunner().invoke(app, ["seal", "check", "--paths-from", str(listing)])
    assert res.exit_code == 1 and f"OK   {good}" in res.output.replace("\n", "") and "unknown key 'foo'" in res.output
    res = CliRunner().invoke(app, ["seal", "check", str(good)])
    assert res.exit_code == 0, res.output


def test_hostile_loss_pick_over_carried_block_images_fails_by_counts_only_and_gets_no_verdict(board):
    """Issue 43: an attack that carries public images of the sealed block (what 256 KiB holds) and returns those the
    model fits best. Its picks that are not members copy public images that are not members: the copy rule with the
    key fails every draw, the record says how many, never which, and the run gets no verdict."""
    import re

    from reconbench.image.data.fashion_splits import sealed_block
    from reconbench.submissions.sealed_run import run

    block = sealed_block("fashion-mnist")
    pick = np.random.default_rng(0).choice(len(block.labels), 300, replace=False)
    path = _submission(board["subs"], "lab-g", "pick", f'twin = "{GROUP}"\nscenario = "static/black-box/same"\n\n'
                                                       '[attack]\nfile = "carried.py"\nclass = "LossPick"\n')
    write_carried_attack(path.parent / "attack", block.images[pick], block.labels[pick])
    done = run(path, board["key"], out=board["out"], root=board["root"])
    record = done.record
    assert record.tier is None and record.extracts is None
    for d in record.draws:
        assert d.status == "failed" and d.membership is None and d.extraction is None and d.output_mac is None
        assert re.fullmatch(r"\d+ of 100 reconstructions are within the extraction threshold of public images that are "
                            r"not members of this draw, and of no member: carried data \(which ones is not said\)", d.reason)
    # the copies' count is in the record; which outputs were refused (or matched) is nowhere in it
    def int_lists(value):  # any list of integers (output or pool positions) anywhere in the record
        if isinstance(value, dict):
            return [x for v in value.values() for x in int_lists(v)]
        if isinstance(value, list):
            return ([value] if value and all(isinstance(v, int) for v in value) else []) + [x for v in value for x in int_lists(v)]
        return []

    assert int_lists(json.loads(done.path.read_text())) == []
    from reconbench.submissions.sealed_run_check import check_runs

    assert all(c.ok for c in check_runs(board["root"]))  # a failed run is a valid record, with no verdict


def test_the_twin_page_lists_the_board_s_runs_by_name_decided_ones_with_a_verdict_and_never_a_forged_one(board):
    """Item 4: one row per decided run (team, attack, tier word, relabelling p, gap with interval), runs with a draw
    not scored listed apart with no verdict, a record that fails validation not shown, no rank anywhere."""
    import markdown

    from reconbench.core.sealed_records import unsigned
    from reconbench.core.tracks import sealed_draws
    from reconbench.leaderboard.pages import Pages
    from reconbench.leaderboard.sealed import twin_pages
    from reconbench.leaderboard.sealed_runs_view import use_root

    key, root = board["key"], board["root"]
    _put(root, _record(key, "zeta", "one", "2026-12-01T00:00:00Z"))
    _put(root, _record(key, "alpha", "one", "2026-12-02T00:00:00Z"))
    _put(root, _record(key, "mid", "held", "2026-12-03T00:00:00Z", scored=False))
    forged = _record(key, "forger", "one", "2026-12-04T00:00:00Z")
    forged["tier"], forged["extracts"] = "extracts", 40
    _put(root, unsigned(forged))
    from reconbench.submissions.sealed_run_check import check_runs

    assert [c.ok for c in check_runs(root)] == [True, False, True, True], [c.message for c in check_runs(root)]
    use_root(root)
    try:
        (page,) = [p for p in twin_pages(sealed_draws(GROUP), [], {}) if p["path"] == f"leaderboards/{GROUP}.md"]
    finally:
        use_root(None)
    runs = page["sealed"]["runs"]
    assert [(r["team"], r["verdict"]) for r in runs["decided"]] == [("alpha", "no evidence"), ("zeta", "no evidence")]
    assert [r["team"] for r in runs["undecided"]] == ["mid"] and "failed (3 of 100 carried)" in runs["undecided"][0]["why"]
    rendered = Pages()
    rendered.page(page["path"], "sealed_group.md.j2", sealed=page["sealed"], draws=page["draws"])
    body = rendered.markdown[page["path"]].split("\n---\n", 1)[1]
    html = markdown.markdown(body, extensions=["tables", "attr_list", "admonition"])
    assert "<th>relabelling p</th>" in html and "<th>why no verdict</th>" in html and "|---|" not in html
    assert "forger" not in html and "extracts 40" not in html
    assert "<th>#</th>" not in html and "<th>rank</th>" not in html.lower() and "runs are not ranked" in html
    assert html.index(">alpha<") < html.index(">zeta<")
    gap = runs["decided"][0]["gap"]
    assert gap.low is not None and f"{gap.mean:+.4f} [{gap.low:+.4f}, {gap.high:+.4f}]" in html
