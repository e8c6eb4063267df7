"""Typed attack options and budget presets (issue 15 item 3, issue 10 item 6)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reconbench.image.attacks import ATTACKS, AttackError, load_attack
from reconbench.core.attack_options import BUDGETS, check_declaration, resolve_options
from reconbench.cli import app
from reconbench.core.signing import generate_key

runner = CliRunner()
TOOLKIT = str(Path(__file__).resolve().parents[1] / "toolkit")


def _cli(*args: str) -> subprocess.CompletedProcess:
    """The real console entry point in a subprocess (what a user's shell runs)."""
    env = {**os.environ, "PYTHONPATH": TOOLKIT + os.pathsep + os.environ.get("PYTHONPATH", ""), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "reconbench.cli", *args], capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.parametrize("setting, expected", [
    ("iterations=abc", "option 'iterations' expects int ≥ 1, got 'abc'"),
    ("iterations=-5", "option 'iterations' expects int ≥ 1, got -5"),
    ("iterations=1.5", "option 'iterations' expects int ≥ 1, got 1.5"),
    ("init=bogus", "option 'init' expects 'zeros' | 'uniform', got 'bogus'"),
    ("step_size=NaN", "option 'step_size' expects float > 0, got nan"),
    ("iterashuns=3", "has no option(s) iterashuns (valid options: iterations, patience, cost_threshold, step_size, init, per_class)"),
])
def test_bad_option_is_one_line_before_the_run(setting, expected, tmp_path):
    generate_key(tmp_path / "k.pem")  # a usable key: the option is what is wrong
    res = runner.invoke(app, ["evaluate", "--attack", "mi-face", "--set", setting, "--out", str(tmp_path / "o"),
                              "--quiet", "--key", str(tmp_path / "k.pem")])
    assert res.exit_code == 1
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], res.output
    assert not (tmp_path / "o").exists()


def test_console_entry_point_error_is_one_line_on_stderr(tmp_path):
    generate_key(tmp_path / "k.pem")
    proc = _cli("evaluate", "--attack", "mi-face", "--set", "iterations=abc", "--out", str(tmp_path / "o"), "--quiet",
                "--key", str(tmp_path / "k.pem"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr + proc.stdout
    assert proc.stderr.strip().splitlines() == ["error: attack 'mi-face': option 'iterations' expects int ≥ 1, got 'abc'"]


def test_unknown_budget_and_missing_preset_are_one_line(tmp_path):
    res = runner.invoke(app, ["evaluate", "--attack", "mi-face", "--budget", "huge", "--out", str(tmp_path / "o")])
    assert res.exit_code == 1 and "unknown budget 'huge' (choose one of: quick, default, paper)" in res.output
    legacy = tmp_path / "old.py"
    legacy.write_text(_LEGACY)
    res = runner.invoke(app, ["evaluate", "--attack", f"{legacy}:Old", "--budget", "quick", "--out", str(tmp_path / "o")])
    assert res.exit_code == 1 and "declares no 'quick' budget preset (it has: default)" in res.output


def test_every_attack_declares_typed_options_and_both_presets():
    for name, cls in ATTACKS.items():
        check_declaration(cls)
        assert set(cls.presets) == {"quick", "paper"}, name
        for field in cls.Options.model_fields.values():
            assert field.description, (name, field)
        # presets only change budgets: the paper preset never lowers one below the default's
        default, quick = resolve_options(cls, "default"), resolve_options(cls, "quick")
        assert quick != default, name


def test_defaults_unchanged_by_the_conversion():
    """Today's defaults, as they were in the `defaults` dicts before the typed options."""
    assert ATTACKS["mi-face"]().config == {"iterations": 5000, "patience": 100, "cost_threshold": 0.99, "step_size": 0.1,
                                          "init": "zeros", "per_class": 1}
    assert ATTACKS["deepinversion"]().config == {"iterations": 2000, "lr": 0.05, "bn_weight": 10.0, "tv_weight": 2.5e-5,
                                                "l2_weight": 0.0, "jitter": 1, "batch_size": 256}
    assert ATTACKS["updates-leak"]().config["shadow_updates"] == "auto"
    assert ATTACKS["bias-rec"]().config["lr"] == "auto"


def test_overrides_apply_on_top_of_the_preset():
    cfg = ATTACKS["updates-leak"](budget="quick", epochs=3).config
    assert cfg["shadow_updates"] == 200 and cfg["epochs"] == 3
    paper = ATTACKS["updates-leak"](budget="paper").config
    assert paper["shadow_updates"] == 10000 and paper["hidden"] == 2048
    assert ATTACKS["deepdream"](lr=1).config["lr"] == 1.0  # an int is a valid float
    with pytest.raises(AttackError, match="option 'double' expects bool, got 1"):
        ATTACKS["bias-rec"](double=1)
    with pytest.raises(AttackError, match="option 'batch_size' expects int ≥ 1, got '256'"):
        ATTACKS["deepdream"](batch_size="256")


_LEGACY = (
    "import torch\n"
    "from reconbench.image.attacks.base import Attack, Reconstruction\n"
    "class Old(Attack):\n"
    "    name='old'; paper='none'; family='optimization'; scenarios=('static/white-box/none',)\n"
    "    defaults = {'iterations': 3, 'lr': 0.5, 'mode': 'a', 'flag': False, 'extra': None}\n"
    "    def run(self, knowledge, *, seed, progress):\n"
    "        v = 0.25 if self.config['flag'] else 0.5\n"
    "        return Reconstruction(torch.full((1, *knowledge.input_shape), v), torch.tensor([0]))\n"
)


def test_old_style_defaults_keep_working_typed_from_their_values(tmp_path):
    file = tmp_path / "old.py"
    file.write_text(_LEGACY)
    cls = load_attack(f"{file}:Old")
    assert cls(iterations=7, lr=1, flag=True, extra="x").config == {"iterations": 7, "lr": 1.0, "mode": "a", "flag": True, "extra": "x"}
    with pytest.raises(AttackError, match="option 'iterations' expects int, got 1.5"):
        cls(iterations=1.5)
    with pytest.raises(AttackError, match=r"no option\(s\) nope \(valid options: iterations, lr, mode, flag, extra\)"):
        cls(nope=1)


def test_old_style_non_scalar_default_and_reserved_name_are_clear(tmp_path):
    file = tmp_path / "bad.py"
    file.write_text(
        "from pydantic import Field\n"
        "from reconbench.image.attacks.base import Attack, AttackOptions\n"
        "class Listy(Attack):\n"
        "    name='listy'; paper='none'; family='optimization'; scenarios=('static/white-box/none',)\n"
        "    defaults = {'sizes': [1, 2]}\n"
        "    def run(self, knowledge, *, seed, progress): pass\n"
        "class Budgety(Attack):\n"
        "    name='budgety'; paper='none'; family='optimization'; scenarios=('static/white-box/none',)\n"
        "    class Options(AttackOptions):\n"
        "        budget: int = 3\n"
        "    def run(self, knowledge, *, seed, progress): pass\n"
        "class BadPreset(Attack):\n"
        "    name='badpreset'; paper='none'; family='optimization'; scenarios=('static/white-box/none',)\n"
        "    class Options(AttackOptions):\n"
        "        steps: int = Field(3, ge=1)\n"
        "    presets = {'quick': {'steps': 0}}\n"
        "    def run(self, knowledge, *, seed, progress): pass\n"
    )
    with pytest.raises(AttackError, match="default of option 'sizes' is list, not a scalar"):
        load_attack(f"{file}:Listy")
    with pytest.raises(AttackError, match="option name 'budget' is reserved"):
        load_attack(f"{file}:Budgety")
    with pytest.raises(AttackError, match="preset 'quick' of attack 'badpreset': option 'steps' expects int ≥ 1, got 0"):
        load_attack(f"{file}:BadPreset")


def test_attacks_name_shows_options_types_ranges_and_presets():
    proc = _cli("attacks", "updates-leak")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for needle in ("shadow_updates", "int ≥ 1 | 'auto'", "float > 0", "--numOfPoints", "quick", "paper",
                   "shadow_updates=10000", "kmeans_restarts=10"):
        assert needle in out, needle
    proc = _cli("attacks", "nope")
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1 and "unknown attack 'nope'" in proc.stderr


def test_result_records_budget_and_parsed_values(tmp_path):
    out = tmp_path / "entry"
    res = runner.invoke(app, ["evaluate", "--attack", "mi-face", "--budget", "quick", "--set", "step_size=1",
                              "--set", "patience=20", "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    attack = json.loads((out / "result.json").read_text())["payload"]["attack"]
    assert attack["budget"] == "quick"
    assert attack["config"] == {"iterations": 500, "patience": 20, "cost_threshold": 0.99, "step_size": 1.0,
                                "init": "zeros", "per_class": 1}
    assert isinstance(attack["config"]["step_size"], float)
    cmd = json.loads((out / "result.json").read_text())["payload"]["provenance"]["command"]
    assert "--budget quick" in cmd
    assert runner.invoke(app, ["verify", str(out)]).exit_code == 0


def test_budgets_are_the_three_named():
    assert BUDGETS == ("quick", "default", "paper")
