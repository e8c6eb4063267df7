"""One core, modalities as plug-ins (issue 25, item 1): the core asks reconbench.modalities which
plug-in owns a track, a result or an attack and calls its hooks; it never branches on a modality.

The branch rule reads the code with ast (nothing runs): outside the modality packages, no module
may test whether something is text (is_text_track, isinstance(..., TextResultFile), `.modality ==`).
The board framework (leaderboard/build.py) takes each modality's board from its plug-in
(image/board.py, text/board.py).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from reconbench import modalities
from reconbench.modalities import MODALITIES, Modality, by_name, for_attack, for_result, for_track

PACKAGE = Path(__file__).resolve().parents[1] / "toolkit" / "reconbench"
MODALITY_PACKAGES = ("image", "text")
TEXT_PREDICATES = {"is_text_track", "is_text_zoo_track", "is_text_dataset", "is_text_report", "is_text_raw", "_is_text"}
RESULT_TYPES = {"TextResultFile", "ResultFile"}


def modality_branches(source: str) -> list[str]:
    """What in `source` decides by modality: a text predicate called, an isinstance on a result
    type, or a comparison of a `modality` field (attribute or key) with a string."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in TEXT_PREDICATES:
                found.append(f"line {node.lineno}: {name}()")
            elif name == "isinstance" and len(node.args) == 2:
                kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
                if any(getattr(k, "id", getattr(k, "attr", "")) in RESULT_TYPES for k in kinds):
                    found.append(f"line {node.lineno}: isinstance on a result type")
        elif isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                field = side.attr if isinstance(side, ast.Attribute) else (
                    side.slice.value if isinstance(side, ast.Subscript) and isinstance(side.slice, ast.Constant) else None)
                if field == "modality" or (isinstance(side, ast.Call) and getattr(side.func, "id", "") == "getattr"
                                           and any(isinstance(a, ast.Constant) and a.value == "modality" for a in side.args)):
                    found.append(f"line {node.lineno}: compares a modality")
    return found


def core_modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.split("/")[0] not in MODALITY_PACKAGES and rel != "modalities.py" and "__pycache__" not in rel:
            out[rel] = path
    return out


def test_no_modality_branch_outside_the_modality_packages():
    bad = {rel: found for rel, path in sorted(core_modules().items())
           if (found := modality_branches(path.read_text(encoding="utf-8")))}
    assert not bad, "modality branches outside image/ and text/ (call a hook of reconbench.modalities instead):\n" + \
        "\n".join(f"{rel}: {', '.join(f)}" for rel, f in bad.items())


@pytest.mark.parametrize("source, expected", [
    ("if is_text_track(t): pass", 1),
    ("x = tracks.is_text_track(t)", 1),
    ("if isinstance(r, TextResultFile): pass", 1),
    ("if isinstance(r, (int, results.ResultFile)): pass", 1),
    ("if p.modality == 'text': pass", 1),
    ("if a['modality'] != 'image': pass", 1),
    ("if getattr(p, 'modality', 'image') == 'text': pass", 1),
    ("m = for_result(r).score_run(e, d)", 0),
    ("if isinstance(x, dict) and p.track == 'digits': pass", 0),
])
def test_the_branch_reader_sees_each_kind(source, expected):
    assert len(modality_branches(source)) == expected


def test_every_plugin_provides_every_hook():
    hooks = {name for name in vars(Modality) if not name.startswith("_")} | set(Modality.__annotations__)
    assert {"owns_track", "evaluate", "score_run", "validation_stages", "RERUN_NEEDS_SANDBOX"} <= hooks
    for m in MODALITIES:
        missing = sorted(h for h in hooks if not hasattr(m, h))
        assert not missing, f"{m.__name__} lacks {missing}"
        for h in hooks - set(Modality.__annotations__):  # the keyword-only parameters the core passes
            want = {n for n, p in inspect.signature(getattr(Modality, h)).parameters.items()
                    if p.kind is p.KEYWORD_ONLY}
            got = inspect.signature(getattr(m, h)).parameters
            takes_any = any(p.kind is p.VAR_KEYWORD for p in got.values())
            assert takes_any or want <= set(got), f"{m.__name__}.{h} does not take {sorted(want - set(got))}"
    assert sorted(m.NAME for m in MODALITIES) == ["image", "text"]


def test_ownership_answers_by_asking_each_plugin():
    from reconbench.text.tracks import all_text_tracks
    from reconbench.core.tracks import all_tracks

    assert for_track("digits") is by_name("image")
    text_track = all_text_tracks()[0].id
    assert for_track(text_track) is by_name("text")
    assert not any(by_name("image").owns_track(t.id) for t in all_text_tracks())
    assert not any(by_name("text").owns_track(t.id) for t in all_tracks())
    assert for_attack("vec2text") is by_name("text") and for_attack("mi-face") is by_name("image")
    assert for_attack("my_attack.py:Mine") is by_name("image")  # an attack file: the default plug-in's loader


def test_an_unknown_track_is_explained_by_the_default_plugin():
    from reconbench.core.tracks import TrackError

    assert for_track("digts") is MODALITIES[0]
    with pytest.raises(TrackError, match="digts"):
        for_track("digts").check_track("digts")


def test_results_find_their_plugin():
    from reconbench.text.results import parse_any_result

    examples = sorted((PACKAGE.parents[1] / "submissions").glob("*/*/result.json"))
    seen = {for_result(parse_any_result(p)).NAME for p in examples}
    assert seen == {"image", "text"}, seen
    for p in examples:
        result = parse_any_result(p)
        assert for_result(result).NAME == getattr(result.payload, "modality", "image")


def test_a_third_plugin_is_called_without_touching_the_core(monkeypatch, tmp_path):
    """A stand-in third modality owns one track id: the API's check and evaluate go to it."""
    import types

    import reconbench
    from reconbench.core.signing import generate_key

    calls = []
    third = types.SimpleNamespace(NAME="audio", owns_track=lambda t: t == "speech-n10",
                                  check_track=lambda t: calls.append(("check", t)),
                                  evaluate=lambda attack, track, **run: calls.append(("evaluate", attack, run["command_for"](attack))))
    monkeypatch.setattr(modalities, "MODALITIES", (*MODALITIES, third))
    assert for_track("speech-n10") is third and for_track("digits") is by_name("image")
    key = tmp_path / "key.pem"
    generate_key(key)
    reconbench.evaluate("whisper-inversion", "speech-n10", key=key, seed=3)
    assert calls == [("check", "speech-n10"), ("evaluate", "whisper-inversion",
                      "recon-submit evaluate --track speech-n10 --attack whisper-inversion --seed 3 --device cpu")]


@pytest.mark.parametrize("attack, track_kind, message", [
    ("/tmp/evil.py:Evil", "text", "unknown text attack '/tmp/evil.py:Evil'"),  # a file on a text track: never loaded
    ("../../x.py:Y", "text", "unknown text attack '../../x.py:Y'"),
    ("vec2text", "image", "unknown attack 'vec2text'"),  # a text attack's name does not cross to an image track
])
def test_an_attack_of_the_wrong_modality_is_refused_before_anything_runs(tmp_path, attack, track_kind, message):
    """The plug-in that owns the track decides which attacks it runs: a bring-your-own file on a text
    track, or a text attack's name on an image track, is refused with no result folder written."""
    import reconbench
    from reconbench.core.attack_errors import AttackError
    from reconbench.core.signing import generate_key
    from reconbench.text.tracks import all_text_tracks

    key = tmp_path / "key.pem"
    generate_key(key)
    track = all_text_tracks()[0].id if track_kind == "text" else "digits"
    with pytest.raises(AttackError, match=message.replace(".", r"\.")):
        reconbench.evaluate(attack, track, key=key, out=tmp_path / "out")
    assert not (tmp_path / "out").exists()
