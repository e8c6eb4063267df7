"""Hostile attacks on the channel between the attack's process and the evaluator (a red-team pass
after issue 36): what the evaluator prints of the attack's text, what it records of the attack's
declaration and configuration, and an evaluator left waiting on a message. Attacks:
tests/attacks/channels.py; each case starts one sandboxed attack process with small limits.
Runs where bubblewrap is installed on Linux; RECONBENCH_SANDBOX=bubblewrap (.ci/run) makes a missing
one a failure.
"""

from __future__ import annotations

import io
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from reconbench.core import untrusted
from reconbench.image.attacks import AttackError, Progress
from reconbench.image.evaluation import attack_run
from reconbench.pipeline.isolation import parent

from test_sandbox_limits import SMALL, _reports, _sandbox_required, needs_bwrap, track  # noqa: F401 (fixtures)

ATTACKS = Path(__file__).parent / "attacks"


def _run(track, attack: str, config: dict | None = None, limits=SMALL, progress=None):
    return attack_run(track, f"{ATTACKS / 'channels.py'}:{attack}", None, config=config or {}, seed=0,
                      device=torch.device("cpu"), progress=progress or Progress(), limits=limits)


def _inert(text: str) -> None:
    """Nothing in `text` that a terminal or a CI runner acts on."""
    assert not any(c in text for c in "\x1b\x07\u202e"), repr(text)
    assert not any(untrusted.COMMAND.match(line) for line in text.splitlines()), text


# --- text the evaluator prints -----------------------------------------------------------------------

@needs_bwrap
def test_the_attacks_text_reaches_the_terminal_and_the_ci_log_as_text(track, capfd):
    """Its output, a progress bar's description and its error message: every channel through which
    the attack's text is printed escapes control characters and neutralises workflow commands."""
    token = uuid.uuid4().hex
    lines: list[str] = []

    class Lines:  # the CLI's progress without a terminal: the description starts a line of its own
        def __init__(self, description, total):
            lines.append(description)

        def __enter__(self):
            return lambda steps=1: None

        def __exit__(self, *exc):
            return False

    with pytest.raises(AttackError) as caught:
        _run(track, "Says", {"token": token}, progress=Progress(Lines))
    message = str(caught.value)
    # the one-line message is the exception's first line (the rest is in the traceback, --debug)
    assert "\n" not in message and message.endswith(f"RuntimeError: {token}"), message
    assert f"\nattack| ::error::forged-{token}" in str(caught.value.__cause__)  # inert there: no workflow command
    _inert(message)
    assert len(lines) == 1 and lines[0].startswith(f"{token}\\n::error::forged-{token}\\n"), lines
    _inert(lines[0])
    err = capfd.readouterr().err
    shown = [line for line in err.splitlines() if token in line]
    assert shown[0] == token and shown[1] == f"attack| ::error::forged-{token}", shown  # stdout, line by line
    assert "\\x1b[2J" in shown[2]
    _inert(err)
    _inert(str(caught.value.__cause__))  # the traceback --debug shows


def test_a_progress_description_is_not_markup_on_a_terminal(monkeypatch):
    """rich reads markup in a progress bar's text: an attack's `[/]` broke the run with rich's
    MarkupError, `[link=...]` put its hyperlink on the user's terminal."""
    from rich.console import Console

    from reconbench.core import console

    out = io.StringIO()
    monkeypatch.setattr(console, "err_console", Console(file=out, force_terminal=True, width=200))
    with console.rich_task("[link=https://example.invalid]x[/link] [/]", 2) as advance:
        advance(1)
    assert "[link=https://example.invalid]x[/link] [/]" in out.getvalue()
    assert "\x1b]8;" not in out.getvalue()  # no hyperlink escape


def test_untrusted_text_is_one_inert_line_or_inert_lines():
    text = "a\nb\r\x1b[31m\x9b\u202e\u2066\tc"
    assert untrusted.line(text) == "a\\nb\\r\\x1b[31m\\x9b\\u202e\\u2066\tc"  # a tab is kept
    assert untrusted.line("::error::x") == "attack| ::error::x" and untrusted.line("  ##[group]") == "attack|   ##[group]"
    assert untrusted.line("é ✓ a :: b") == "é ✓ a :: b"
    assert untrusted.lines("Traceback\n::error::x\n  \x1b[2J") == "Traceback\nattack| ::error::x\n  \\x1b[2J"


# --- what the evaluator records -------------------------------------------------------------------

@needs_bwrap
def test_a_process_that_declares_a_built_in_attacks_name_is_refused(track):
    """The child's own class check is the attack's code: the evaluator checks the declaration again."""
    with pytest.raises(AttackError, match=r"its process declared: name 'mi-face' is taken by the built-in attack "
                                          r"reconbench\.image\.attacks\.mi_face:MIFace"):
        _run(track, "Declares")


def test_a_declaration_is_checked_by_the_class_rules_and_free_of_control_characters():
    good = {"name": "mine", "paper": "A, B 2024", "family": "training", "version": "1", "code": "x.py:X",
            "scenarios": ["static/black-box/same"]}
    assert parent._declared(good, "x.py:X").name == "mine"
    for change, message in (({"name": "Mine Attack"}, "must match"), ({"family": "magic"}, "must be one of"),
                            ({"name": "deepdream"}, "is taken by the built-in"),
                            ({"scenarios": ["static/x/same\n::error::y"]}, r"'x' is not one of"),
                            ({"paper": "A\x1b[2J"}, "without control characters"),
                            ({"version": "1\n::error::x"}, "without control characters")):
        with pytest.raises(AttackError, match=message) as caught:
            parent._declared({**good, **change}, "x.py:X")
        _inert(str(caught.value))
        assert "\n" not in str(caught.value)
    assert parent._declared({**good, "name": "deepdream", "code": "reconbench.image.attacks.deepdream:DeepDream"},
                            "deepdream").name == "deepdream"  # the registered attack itself
    # before a declaration the spec names the attack; reproduce builds it from an entry's signed class name
    assert parent.AttackProcess("a.py:X\n::error::y\x1b[2J", {})._name() == "a.py:X\\n::error::y\\x1b[2J"


@needs_bwrap
def test_a_configuration_no_result_can_record_is_refused_in_one_line_before_scoring(track):
    with pytest.raises(AttackError, match=r"its process reported a configuration that a result cannot record "
                                          r"\(option 'nested'\)") as caught:
        _run(track, "Reports")
    assert "\n" not in str(caught.value)
    assert parent._reported_config({"a": 1, "b": "x", "c": None}, "n") == {"a": 1, "b": "x", "c": None}
    with pytest.raises(AttackError, match="cannot record: at most 200 options"):
        parent._reported_config({f"k{i}": i for i in range(201)}, "n")


@needs_bwrap
def test_a_query_whose_view_is_not_a_name_is_refused_and_the_run_goes_on(track, capfd):
    run = _run(track, "Asks")
    (report,) = _reports(capfd.readouterr().err)
    assert [a["op"] for a in report["answers"]] == ["refused", "refused"], report
    assert run.knowledge.query.queries == 0


# --- an evaluator left waiting -------------------------------------------------------------------

@needs_bwrap
@pytest.mark.parametrize("case", ["partial", "unread", "closed"])
def test_a_half_sent_message_or_an_unread_answer_cannot_outlast_the_wall_limit(track, capfd, case):
    """The evaluator blocked reading a message the attack never finishes, or writing an answer it never
    reads: the limits are watched on a thread of their own, which ends the tree and with it the wait."""
    limits = replace(SMALL, wall=15)  # the attack starts (torch, its view) and stalls well within it
    t0 = time.monotonic()
    with pytest.raises(AttackError, match=r"the wall-time limit of 15s was hit") as caught:
        _run(track, "Stalls", {"case": case}, limits=limits)
    assert time.monotonic() - t0 < 60, "waited for the attack's 600 s sleep"
    assert "\n" not in str(caught.value)
    assert _reports(capfd.readouterr().err) == [{"stalling": case}]


@pytest.mark.parametrize("value, said", [(float("inf"), "Infinity is not JSON"), (float("nan"), "NaN is not JSON"),
                                         (10 ** 30, "integer of 31 digits")])
def test_an_option_the_protocol_cannot_carry_is_refused_before_the_attack_starts(track, value, said):
    """`--set x=1e999` (or an entry's config) reached the attack's process, whose strict reading of
    the start message failed: reported as an internal error of the toolkit."""
    with pytest.raises(AttackError, match=rf"option x=\S+ cannot be passed to its process \({said}\)"):
        _run(track, "Says", {"x": value})


def test_progress_bars_past_the_shown_cap_are_followed_but_not_drawn():
    """Starting and ending bars at the allowed message rate wrote two lines each to the evaluator's log,
    and kept each bar until the run ended, for as long as the attack ran."""
    import contextlib

    drawn = []

    @contextlib.contextmanager
    def task(description, total):
        drawn.append(description)
        yield lambda steps=1: None

    process = parent.AttackProcess("x.py:X", {})
    bars: dict = {}
    with contextlib.ExitStack() as stack:
        for i in range(parent.MAX_BARS_SHOWN + 100):
            for event in ("start", "advance", "end"):
                process._progress(Progress(task), bars, stack, {"op": "progress", "event": event, "id": i, "steps": 1,
                                                                "total": 1, "description": f"bar {i}"})
        assert len(drawn) == parent.MAX_BARS_SHOWN and bars == {}
        assert len(stack._exit_callbacks) == parent.MAX_BARS_SHOWN


@needs_bwrap
@pytest.mark.parametrize("case, message", [("report", r"the attack 'interrupts' failed at .*KeyboardInterrupt"),
                                           ("exit", r"its process exited \(code 130\) without a result")])
def test_an_attack_cannot_forge_the_users_interrupt(track, case, message):
    """A KeyboardInterrupt the attack reports, or its exit code 130, was raised here as the user's Ctrl-C:
    the command said "interrupted", and a sweep stopped every other job."""
    with pytest.raises(AttackError, match=message):
        _run(track, "Interrupts", {"case": case})


@needs_bwrap
def test_listing_a_files_options_runs_it_in_the_sandbox_not_here(tmp_path, monkeypatch):
    """`recon-submit attacks file.py:Class` imported the file in the caller's process: a reviewer looking
    at an entry's options ran its module's code outside the sandbox, with their rights."""
    from reconbench.cli.commands.attack_info import attack_details

    marker = tmp_path / "ran-here"
    monkeypatch.setenv("RECONBENCH_ATTACK_MARKER", str(marker))
    (tmp_path / "listed.py").write_text(
        "import os\nimport torch\nfrom reconbench.image.attacks.base import Attack\n"
        "try:\n    open(os.environ['RECONBENCH_ATTACK_MARKER'], 'w').write('module code ran')\nexcept OSError:\n    pass\n"
        "class Listed(Attack):\n    name, family, scenarios = 'listed', 'training', ('static/black-box/same',)\n"
        "    paper = 'A\\n::error::forged\\x1b[2J'\n    defaults = {'steps': 3}\n"
        "    def run(self, knowledge, *, seed, progress):\n        raise RuntimeError\n")
    info = attack_details(f"{tmp_path / 'listed.py'}:Listed")
    assert not marker.exists()
    assert info["name"] == "listed" and info["paper"] == "A\\n::error::forged\\x1b[2J"
    assert [(o["name"], o["default"]) for o in info["options"]] == [("steps", 3)] and info["presets"] == {"default": {"steps": 3}}
