"""Bad input of every kind gives a clear message for its entry (never a traceback), and the other
entries are still checked. Ends with hypothesis property tests over arbitrary JSON and bytes."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from submission_helpers import failure, fresh_board


@pytest.fixture
def board(tmp_path_factory, tmp_path):
    return fresh_board(tmp_path_factory, tmp_path)


def no_internal_errors(report):
    for r in report.entries:
        for c in r.checks:
            assert "internal error" not in c.message, c


def edit_json(board, edit):
    data = json.loads(board.result_json.read_text())
    edit(data)
    board.result_json.write_text(json.dumps(data))


# ---------------------------------------------------------------- result.json

@pytest.mark.parametrize("content, expected", [
    (b"\xff\xfe\x00garbage\x80", "cannot be read as UTF-8"),
    (b"[]", "valid dictionary"),
    (b'{"payload": 1, "signature": 2, "x": 3}', "result.json"),
    (b"[" * 100_000, "malformed JSON"),
    (b"", "malformed JSON"),
])
def test_unparseable_result_json(board, content, expected):
    board.result_json.write_bytes(content)
    check = failure(board.only())
    assert check.name == "schema" and expected in check.message and "result.json" in check.message


@pytest.mark.parametrize("edit, expected", [
    (lambda d: d["payload"]["metrics"]["mse"].update(coverage=1.5), "less than or equal to 1"),
    (lambda d: d["payload"]["metrics"]["mse"].update(value=-0.1), "outside its range"),
    (lambda d: d["payload"]["metrics"].update(accuracy={"status": "computed", "value": 1.0}), "unknown metric"),
    (lambda d: d["payload"].update(surprise=1), "Extra inputs are not permitted"),
    (lambda d: d["payload"]["provenance"].update(seed="zero"), "seed"),
    (lambda d: d["payload"].update(scenario="static/grey-box/none"), "scenario"),
])
def test_schema_violations(board, edit, expected):
    edit_json(board, edit)
    check = failure(board.only())
    assert check.name == "schema" and expected in check.message


def test_nan_is_refused(board):
    board.result_json.write_text(board.result_json.read_text().replace('"wall_seconds": ', '"wall_seconds": NaN, "x":', 1))
    check = failure(board.only())
    assert check.name == "schema" and "NaN is not allowed" in check.message


def test_folder_name_must_be_the_entry_id(board):
    renamed = board.entry.with_name("digits-other-name")
    os.rename(board.entry, renamed)
    (report,) = board.validate().entries[:1]
    assert "payload.entry_id is" in failure(report).message


def test_integer_without_a_canonical_form(board):
    edit_json(board, lambda d: d["payload"]["provenance"].update(seed=2**70))
    check = failure(board.only())
    assert check.name == "signature" and "RFC 8785" in check.message


# ---------------------------------------------------------------- team.toml

@pytest.mark.parametrize("toml, expected", [
    (b"\x00\x01binary\xff", "not UTF-8"),
    (b"name = ", "malformed TOML"),
    (b'name = "A"\nkeys = "abc"', "keys"),
    (b'[[keys]]\nname = "x"', "keys"),
    (b'name = {a = 1}\nkeys = []', "name"),
    (b'slug = "other"\nname = "A"\nkeys = []', "the slug is the folder name"),
    ('name = "Alpha\u202elab"\nkeys = ["%s"]', "bidi"),
    ('name = "Ame\u0301lie"\nkeys = ["%s"]', "NFC"),
    ('name = "A"\nlinks = ["http://insecure.example"]\nkeys = ["%s"]', "https://"),
    (b'name = "A"\nkeys = ["AAAA"]', "32 bytes"),
    (b'name = "A"\nkeys = []', "at least 1"),
])
def test_bad_team_toml(board, toml, expected):
    team_file = board.root / "alpha" / "team.toml"
    if isinstance(toml, str):
        key = json.loads(board.result_json.read_text())["signature"]["public_key"]
        toml = (toml % key).encode() if "%s" in toml else toml.encode()
    team_file.write_bytes(toml)
    check = failure(board.only())
    assert check.name == "schema" and "team.toml" in check.message and expected in check.message


def test_team_without_entries_is_checked_and_others_still_pass(board):
    (board.root / "beta" / "team.toml").write_text("keys = 3")
    report = board.validate()
    by_team = {r.team: r for r in report.entries}
    assert by_team["beta"].entry_id == "" and "team.toml" in failure(by_team["beta"]).message
    assert by_team["alpha"].trust == "signed" and not report.ok


# ---------------------------------------------------------------- names and files

@pytest.mark.parametrize("name", ["\u0430lpha", "Alpha", "\ufb01le", "al\u202epha", "alpha-", "a" * 41, "al.pha"])
def test_team_folder_names_are_ascii_slugs(board, name):
    shutil.copytree(board.root / "alpha", board.root / name)
    report = [r for r in board.validate().entries if r.team == name][0]
    check = failure(report)
    assert check.name == "structure" and "[a-z0-9-]" in check.message
    assert check.message.isascii() and "\u202e" not in check.message  # shown escaped, never rendered


def test_unicode_trick_in_a_file_name(board):
    (board.entry / "README\u202edm.json").write_text("{}")
    check = failure(board.only())
    assert "README\\u202edm.json: unexpected file" in check.message


@pytest.mark.parametrize("make, expected", [
    (lambda e: os.mkfifo(e / "result.fifo"), "not a regular file"),
    (lambda e: (e / ".DS_Store").write_bytes(b"x"), "hidden file"),
    (lambda e: (e / "extra").mkdir(), "sub-folders are not allowed"),
    (lambda e: (e / "notes.txt").write_text("x"), "file type not allowed"),
    (lambda e: (e / "other.json").write_text("{}"), "unexpected file"),
    (lambda e: os.truncate(e / "result.json", 2 * 1024**3), "over the 1,000,000-byte cap"),
    (lambda e: (e / "README.md").write_bytes(b"x" * (64 * 1024 + 1)), "over the 65,536-byte cap"),
    (lambda e: os.unlink(e / "result.json"), "result.json: missing"),
])
def test_bad_files_in_an_entry(board, make, expected):
    make(board.entry)
    check = failure(board.only())
    assert check.name == "structure" and expected in check.message


def test_readme_with_bidi_override(board):
    (board.entry / "README.md").write_text("Method: see \u202e the code")
    check = failure(board.only())
    assert check.name == "schema" and "README.md" in check.message and "u202e" in check.message


def test_readme_is_reported(board):
    (board.entry / "README.md").write_text("# Method\nMI-Face, paper defaults.\n")
    assert board.only().readme.startswith("# Method")


def test_stray_files_at_root_and_team_level(board):
    (board.root / "README.md").write_text("# Submissions\n")  # allowed
    (board.root / "weights.pkl").write_bytes(b"\x80\x04K\x01.")
    (board.root / "alpha" / "notes.md").write_text("x")
    report = board.validate()
    stray = [r for r in report.entries if r.path.name == "weights.pkl"][0]
    assert "'.pkl' files can hold pickles" in failure(stray).message
    assert "content is a pickle" in " ".join(failure(stray).details)
    assert "alpha/notes.md: unexpected file" in failure(board.only()).message
    assert not any(r.path.name == "README.md" for r in report.entries)


def test_root_that_is_a_symlink(board, tmp_path):
    link = tmp_path / "linked-root"
    link.symlink_to(board.root)
    report = __import__("reconbench.submissions", fromlist=["validate_board"]).validate_board(None, link)
    assert not report.ok and "is a symbolic link" in report.entries[0].checks[0].message


def test_missing_or_empty_root(tmp_path):
    from reconbench.submissions import discover_entries, validate_board

    assert validate_board(None, tmp_path / "nope").ok and discover_entries(tmp_path / "nope") == []
    (tmp_path / "empty").mkdir()
    assert validate_board(None, tmp_path / "empty").entries == []


# ---------------------------------------------------------------- path selection

def test_paths_map_to_their_entries(board):
    other = board.root / "alpha" / "digits-second"
    shutil.copytree(board.entry, other)
    select = lambda *p: [(r.team, r.entry_id) for r in board.validate(list(p)).entries]  # noqa: E731
    assert select(board.entry / "result.json") == [("alpha", board.entry.name)]
    assert select(board.root / "alpha" / "team.toml") == [("alpha", board.entry.name), ("alpha", "digits-second")]
    assert select(board.root / "beta" / "team.toml") == [("beta", "")]
    report = board.validate([board.root / "alpha" / "gone-entry" / "result.json"])
    assert report.entries == [] and report.removed and report.ok


# ---------------------------------------------------------------- property tests

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def pristine(board):
    saved = {p: p.read_bytes() for p in (board.result_json, board.recon, board.root / "alpha" / "team.toml")}

    def restore():
        for path, data in saved.items():
            path.write_bytes(data)
        (board.entry / "README.md").unlink(missing_ok=True)

    return board, restore


@SETTINGS
@given(data=st.binary(max_size=2000), target=st.sampled_from(["result.json", "reconstructions.safetensors",
                                                              "team.toml", "README.md"]))
def test_arbitrary_bytes_never_raise(pristine, data, target):
    board, restore = pristine
    restore()
    path = board.root / "alpha" / target if target == "team.toml" else board.entry / target
    path.write_bytes(data)
    report = board.validate()
    no_internal_errors(report)
    if target != "README.md":
        assert board.only().trust == "failed"


@SETTINGS
@given(value=JSON)
def test_arbitrary_json_never_raises(pristine, value):
    board, restore = pristine
    restore()
    board.result_json.write_text(json.dumps(value))
    report = board.validate()
    no_internal_errors(report)
    assert board.only().trust == "failed"


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))


@SETTINGS
@given(data=st.data())
def test_resigned_mutations_never_raise(pristine, data):
    """Deeper: replace any part of the real payload with arbitrary JSON and sign it again, so the
    mutation gets past the signature and reaches the registry and reconstruction checks."""
    board, restore = pristine
    restore()
    payload = board.payload()
    where = data.draw(st.sampled_from(list(_paths(payload))[1:]))
    value = data.draw(JSON)

    def mutate(p):
        node = p
        for key in where[:-1]:
            node = node[key]
        node[where[-1]] = value

    try:
        board.resign(mutate)
    except ValueError:  # no RFC 8785 form (an integer beyond 2^53): keep it unsigned
        edit_json(board, lambda d: mutate(d["payload"]))
    report = board.validate()
    no_internal_errors(report)
    assert board.only().trust in ("failed", "signed")
