"""The README is a newcomer's page (issue 24): short, every command works in a new shell (make, or a
path into .venv/bin: nothing is activated), its first submission runs a setting no example entry
occupies, and its times are measured ones. .ci/first-hour-walk runs the first submission for real."""

from __future__ import annotations

import inspect
import json
import re
import shlex
from pathlib import Path

from reconbench.image.attacks import DEFAULT_ATTACK

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def sh_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, flags=re.S)


def commands(text: str) -> list[str]:
    return [line.split("#", 1)[0].strip() for block in sh_blocks(text) for line in block.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_a_page_read_in_five_minutes():
    assert len(README.splitlines()) <= 100
    headings = re.findall(r"^## (.+)$", README, flags=re.M)
    assert headings[:3] == ["Two commands", "Your first submission", "Where to go next"]
    assert "make evaluate" in sh_blocks(README)[0] and "make test" in sh_blocks(README)[0]


def test_every_command_works_in_a_new_shell():
    """No `recon-submit ...` that needs an activated venv: make targets, or paths into .venv/bin/."""
    found = commands(README)
    assert found
    for line in found:
        word = shlex.split(line)[0]
        assert word == "make" or word.startswith(".venv/bin/"), line
    for target in {shlex.split(c)[1] for c in found if c.startswith("make ")}:
        assert re.search(rf"^{re.escape(target)}:", (ROOT / "Makefile").read_text(), flags=re.M), target


def example_payloads() -> list[dict]:
    return [json.loads(f.read_text())["payload"] for f in (ROOT / "submissions").glob("*/*/result.json")]


def test_the_first_submission_runs_a_setting_no_example_occupies():
    section = README.split("## Your first submission", 1)[1].split("\n## ", 1)[0]
    (evaluate,) = [c for c in commands(section) if " evaluate" in c]
    argv = shlex.split(evaluate)[2:]
    opts = dict(zip(argv[::2], argv[1::2]))
    track, attack = opts.get("--track", "digits"), opts.get("--attack", DEFAULT_ATTACK)
    seed, budget = int(opts.get("--seed", 0)), opts.get("--budget", "default")
    taken = [p for p in example_payloads() if p["track"] == track and p["attack"]["name"] == attack
             and p["provenance"]["seed"] == seed and p["attack"].get("budget", "default") == budget]
    assert not taken, [p["entry_id"] for p in taken]


def timing(name: str) -> str:
    return re.search(rf"<!-- rb:timing {name} -->(.*?)<!-- /rb:timing -->", README, flags=re.S).group(1)


def test_the_cli_default_is_the_toolkit_s_default_attack():
    """The CLI names the default attack itself (it imports no attack code at start-up)."""
    from reconbench.cli import evaluate

    assert inspect.signature(evaluate).parameters["attack"].default.default == DEFAULT_ATTACK
    assert f"`make evaluate` runs {DEFAULT_ATTACK} on `digits`" in " ".join(README.split()).lower()


def test_the_default_run_s_time_is_the_example_entry_s_own_record():
    """`make evaluate` runs the default attack on digits, default budget, seed 0: the example of that
    run; the main job's time is the benchmark's (issue 37: about a minute), recorded with its machine."""
    (example,) = [p for p in example_payloads() if p["track"] == "digits" and p["attack"]["name"] == DEFAULT_ATTACK
                  and p["scenario"] == "static/white-box/none" and p["provenance"]["seed"] == 0
                  and p["attack"].get("budget") == "default"]
    text = " ".join(timing("default").split())
    prov = example["provenance"]
    assert f"recorded {prov['wall_seconds']:.0f} s of attack time" in text
    system, machine, threads = re.fullmatch(r"(\w+) (\w+), (\d+) CPU threads", prov["hardware"]).groups()
    assert f"on {system} {machine} with {threads} CPU threads" in text
    assert "benchmarks/bench_first_submission.py" in text
    bench = " ".join((ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8").split())
    # issue 37: <= 90 s of attack time on an idle 2-core machine; at one thread that is the attack's CPU time
    wall, cpu = re.search(r"the main job's attack took (\d+) s and used (\d+) CPU-s", text).groups()
    assert int(cpu) <= 90, text
    assert f"evaluate (no options): attack {wall} s as the result records" in bench  # the benchmark's own line
    assert f"attack process {cpu} CPU-s" in bench


def test_the_readme_says_what_the_benchmark_found_of_the_example_s_bytes():
    """Whether `make evaluate` gives the example entry's bytes, at each thread count the benchmark ran
    (issue 37: "made by this very run" had been checked at 1 thread only, where they differ)."""
    bench = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    runs = re.findall(r"machine: .*?threads (\d+),.*?\n.*?\n  example entry of this setting: [\w-]+: (same|other) bytes",
                      bench)
    found = {int(t): kind for t, kind in runs}
    assert {1, 2} <= set(found), found  # the CI machine has 2 cores: 2 threads; and 1
    text = " ".join(timing("default").split())
    if all(kind == "other" for kind in found.values()):
        threads = " and at ".join(str(t) for t in sorted(found))
        assert f"at {threads} threads, gave other bytes than it" in text and "this very run" not in text
    else:
        same = sorted(t for t, kind in found.items() if kind == "same")
        assert all(f"same bytes at {t} threads" in text for t in same), text


def test_the_first_submission_s_times_are_the_benchmark_s():
    text = " ".join(timing("first").split())
    assert "benchmarks/bench_first_submission.py" in text
    bench = " ".join((ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8").split())
    for number in re.findall(r"(\d+) s\b", text):
        assert f"{number} s" in bench, number  # the same run's numbers, recorded with its machine and load


def test_make_install_does_nothing_the_second_time(tmp_path):
    """README: `make install` "does nothing if make evaluate already did" (issue 37): its pip step
    hangs on a stamp in .venv/ newer than pyproject.toml. `make -n` shows what would run, on a stand-in venv."""
    import os
    import subprocess

    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").touch()

    def would_run(target: str) -> str:
        return subprocess.run(["make", "-n", "-C", str(ROOT), target, f"VENV={venv}"], capture_output=True,
                              text=True, check=True, timeout=60).stdout

    assert "pip install -q -e ." in would_run("install")  # the first time
    stamp = venv / ".reconbench-installed"
    stamp.touch()
    assert "pip" not in would_run("install")
    assert "pip" not in would_run("evaluate")
    old = (ROOT / "pyproject.toml").stat().st_mtime - 60
    os.utime(stamp, (old, old))  # pyproject.toml changed since: install again
    assert "pip install -q -e ." in would_run("install")
    assert "pip install -q -e '.[test,cluster]'" in would_run("install-test")


def test_the_walk_reads_the_write_an_attack_guide_as_written():
    """.ci/first-hour-walk saves the guide's attack in the checkout under the name the guide gives and
    runs the guide's own commands (issue 37): what it reads from the page is there."""
    import importlib.util
    from importlib.machinery import SourceFileLoader

    loader = SourceFileLoader("first_hour_walk", str(ROOT / ".ci" / "first-hour-walk"))
    walk = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(walk)
    name, code, lines = walk.guide_attack(ROOT / "site" / "write-an-attack.md")
    assert name == "class_ascent.py" and "class ClassAscent(Attack)" in code
    evaluate, verify = (shlex.split(line) for line in lines)
    assert evaluate[:2] == [".venv/bin/recon-submit", "evaluate"] and "class_ascent.py:ClassAscent" in evaluate
    assert evaluate[evaluate.index("--budget") + 1] == "quick"  # the walk's cost stays small
    assert verify == [".venv/bin/recon-submit", "verify", evaluate[evaluate.index("--out") + 1]]


def test_the_readme_says_how_long_the_test_command_takes_as_measured():
    """Issue 45: `make test` (the README's command) is the default set, at most 10 minutes on 2 cores, with
    a progress line; the README says how long it and `make test-slow` take, from bench_test_split.py's table."""
    text = " ".join(timing("tests").split())
    fast, slow = (float(m) for m in re.search(
        r"`make test` runs the default set in ([\d.]+) minutes .*?`make test-slow` adds the slow set .*?: ([\d.]+) minutes",
        text).groups())
    bench = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    assert re.search(rf"^\| fast \| not slow \| {fast:.1f} \|", bench, re.M), fast
    assert re.search(rf"^\| slow \| slow \| {slow:.1f} \|", bench, re.M), slow
    assert fast <= 10 and "progress line" in text and "ETA" in text
    make = (ROOT / "Makefile").read_text()
    assert re.search(r'^test: install-test\n\t\$\(PYTEST\) -m "not slow"', make, re.M)


def test_the_walk_reads_the_sealed_page_s_try_one_command():
    """.ci/first-hour-walk runs docs/sealed.md's "Try one" command in a new shell (issue 45): it is there,
    runs the toolkit by its path, and names a twin that `--track` takes."""
    import importlib.util
    from importlib.machinery import SourceFileLoader

    from reconbench.core.tracks import get_track

    loader = SourceFileLoader("first_hour_walk", str(ROOT / ".ci" / "first-hour-walk"))
    walk = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(walk)
    (command,) = walk.sealed_steps(ROOT / "docs" / "sealed.md")
    argv = shlex.split(command)
    assert argv[:2] == [".venv/bin/recon-submit", "evaluate"] and argv[argv.index("--draws") + 1] == "1"
    twin = argv[argv.index("--track") + 1]
    assert twin.endswith("-sealed") and get_track(f"{twin}-d0").seal is not None
