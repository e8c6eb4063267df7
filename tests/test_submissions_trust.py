"""Forged and hostile ENTRIES of issue 23, item 5: what a contributor who holds a team key (or gets
hold of a genuine record) can sign, and how each is refused or held. All start from the one real
MI-Face entry of submission_helpers; records are scored from that entry's own run (no re-run), so
the module stays cheap. Seed groups of near-copies: tests/test_submissions_hostile.py; records whose
metrics or reported queries contradict the claim: tests/test_reproduce.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from reconbench.core.attack_source import folder_sha256
from reconbench.reproduction.record import RECORD_FILE, write_record
from reconbench.reproduction.rerun import ReproduceError, load_entry, score_run
from reconbench.reproduction.sign import reproduce_entry, sign_record
from reconbench.core.signing import load_private_key
from submission_helpers import failure, fresh_board, listed_reproducer, recorded, status


@pytest.fixture(scope="module")
def reproducer(tmp_path_factory):
    with listed_reproducer(tmp_path_factory.mktemp("reproducers")) as pair:
        yield pair


@pytest.fixture
def board(tmp_path_factory, tmp_path, reproducer):
    b = fresh_board(tmp_path_factory, tmp_path)
    b.reproducer_key, b.stranger_key = reproducer
    return b


def record_of(board, entry=None):
    """A genuine record for `entry`, scored from the entry's own evaluate output (bit-identical to a re-run here)."""
    return score_run(load_entry(entry or board.entry), board.result_dir)


def twin(board, name, key=None, team="alpha", invert=False):
    """A second entry of the same run under another id (another team's when `team` says so); with
    `invert`, its images are inverted and its seed is another, so that it is neither a duplicate nor a
    re-run of the first (submissions/reproduces.py) and reaches the reproduction check."""
    from safetensors.numpy import save_file

    from reconbench.core.io import sha256_file
    from reconbench.image.results import load_reconstructions

    folder = board.root / team / name
    shutil.copytree(board.entry, folder)
    if invert:
        images, labels = load_reconstructions(folder / "reconstructions.safetensors")
        save_file({"images": 255 - images, "labels": labels}, str(folder / "reconstructions.safetensors"))

    def edit(p):
        p.update(entry_id=name)
        p["reconstructions"]["sha256"] = sha256_file(folder / "reconstructions.safetensors")
        if invert:
            p["provenance"]["seed"] += 1
            recorded(p)

    board.resign(edit, key=key, entry=folder)
    return folder


def report_of(board, entry):
    return next(r for r in board.validate().entries if r.path == entry)


# ---------------------------------------------------------------- records

def test_a_genuine_record_lifts_its_own_entry(board):
    write_record(board.entry / RECORD_FILE, sign_record(record_of(board), load_private_key(board.reproducer_key)))
    assert board.only().trust == "reproduced"


def test_a_record_borrowed_from_another_entry_fails_the_borrower(board):
    """A genuine record of entry A copied beside entry B (same run, same numbers, another id)."""
    write_record(board.entry / RECORD_FILE, sign_record(record_of(board), load_private_key(board.reproducer_key)))
    other = twin(board, "digits-mi-face-borrowed", invert=True)
    reports = {r.path: r for r in board.validate().entries if r.entry_id}
    assert reports[board.entry].trust == "reproduced"  # the lender is untouched
    check = failure(reports[other])
    assert check.name == "reproduction" and "for another entry" in check.message


def test_a_record_borrowed_by_another_team_fails(board):
    write_record(board.entry / RECORD_FILE, sign_record(record_of(board), load_private_key(board.reproducer_key)))
    theirs = twin(board, "digits-theirs", key=board.beta_key, team="beta", invert=True)
    check = failure(report_of(board, theirs))
    assert check.name == "reproduction" and "for another entry" in check.message


@pytest.mark.parametrize("signer", ["stranger", "team"])
def test_a_record_signed_by_a_key_the_maintainers_do_not_list_fails(board, signer):
    """Signed by an unknown key, or by the submitting team's own key (listed in its team.toml, not as a reproducer)."""
    key = board.stranger_key if signer == "stranger" else board.alpha_key
    write_record(board.entry / RECORD_FILE, sign_record(record_of(board), load_private_key(key)))
    check = failure(board.only())
    assert check.name == "reproduction" and "not a reproducer key listed by the maintainers" in check.message


def test_a_record_whose_verdict_was_flipped_to_reproduced_lifts_nothing(board):
    """A not-reproduced record (the run did not match) re-signed by a listed key with verdict "reproduced"."""
    board.resign(lambda p: p["metrics"]["ssim"].update(value=p["metrics"]["ssim"]["value"] + 0.2))  # an inflated claim
    honest = record_of(board)
    assert honest.verdict == "not-reproduced" and any("ssim" in p for p in honest.problems)
    flipped = honest.model_copy(update={"verdict": "reproduced", "problems": []})
    write_record(board.entry / RECORD_FILE, sign_record(flipped, load_private_key(board.reproducer_key)))
    report = board.only()
    check = next(c for c in report.checks if c.name == "reproduction")
    assert report.trust != "reproduced" and "contradict the claim" in check.message and "ssim" in check.message


# ---------------------------------------------------------------- registered name, other code

def _registered_name_with_edited_source(board):
    """The registered MI-Face name and code reference, with an attack/ folder holding an edited copy of
    the toolkit's mi_face.py, its hash signed: what the page would have shown as the registered attack."""
    import reconbench.image.attacks.mi_face as mi_face

    source = board.entry / "attack"
    source.mkdir()
    text = open(mi_face.__file__, encoding="utf-8").read()
    (source / "mi_face.py").write_text(text.replace('Field(5000', 'Field(50000', 1) + "\n# edited\n")
    board.resign(lambda p: p["attack"].update(source_sha256=folder_sha256(source)))


def test_a_registered_name_with_an_edited_source_is_refused(board):
    _registered_name_with_edited_source(board)
    check = failure(board.only())
    assert check.name == "registry" and "needs a name of its own" in check.message and "attack/ source" in check.message
    with pytest.raises(ReproduceError, match="registered, but the entry signs an attack/ source"):
        load_entry(board.entry)


def test_an_unedited_copy_of_the_registered_source_is_refused_too(board):
    """Same rule whatever the bytes: a registered name runs the toolkit's code, never a shipped copy."""
    import reconbench.image.attacks.mi_face as mi_face

    source = board.entry / "attack"
    source.mkdir()
    shutil.copy(mi_face.__file__, source / "mi_face.py")
    board.resign(lambda p: p["attack"].update(source_sha256=folder_sha256(source)))
    assert failure(board.only()).name == "registry"


# ---------------------------------------------------------------- claimed queries

def test_claimed_queries_over_the_budget_fail_and_a_surrogate_count_too(board):
    board.resign(lambda p: p["provenance"].update(queries=10**9))
    check = failure(board.only())
    assert check.name == "registry" and "more than track 'digits' allows" in check.message


def test_claimed_queries_that_the_re_run_did_not_make_are_not_reproduced(board, tmp_path):
    """A white-box entry that claims 7 queries: the re-run (which counted none) disagrees, so the record
    is not-reproduced, and validation of a record that says otherwise lifts nothing."""
    board.resign(lambda p: p["provenance"].update(queries=7))
    rec = record_of(board)
    assert rec.verdict == "not-reproduced" and any("provenance.queries" in p for p in rec.problems)
    forged = rec.model_copy(update={"verdict": "reproduced", "problems": []})
    write_record(board.entry / RECORD_FILE, sign_record(forged, load_private_key(board.reproducer_key)))
    # validation refuses the claim itself before any record is read (a white-box cell makes no queries)
    check = failure(board.only())
    assert check.name == "registry" and "provenance.queries is 7 in the white-box cell" in check.message


def test_reproduce_refuses_to_sign_with_a_key_the_maintainers_do_not_list(board):
    with pytest.raises(Exception, match="not a reproducer key"):
        reproduce_entry(board.entry, from_run=board.result_dir, key_path=board.alpha_key)


def test_the_honest_entry_passes_every_check_here(board):
    report = board.only()
    assert report.trust == "signed" and status(report, "registry") == "pass"
    assert "source_sha256" not in json.loads(board.result_json.read_text())["payload"]["attack"]  # a registered attack signs none


# ---------------------------------------------------------------- look-alike identities

@pytest.mark.parametrize("a, b", [
    ("reconbench-baselines", "reconbench-base1ines"),  # the digit 1 for an l
    ("oslo-lab", "0sl0-lab"),  # the digit 0 for an o
    ("ReconBench baselines", "reconbench-baselines"),  # a display name against a slug: case, space, hyphen
    ("ReconBench baselines", "R\u0435conB\u0435nch baselines"),  # Cyrillic ie for e
    ("ReconBench baselines", "ReconBench\u00a0baselines"),  # a no-break space
    ("ReconBench", "\U0001d411\U0001d41e\U0001d41c\U0001d428\U0001d427\U0001d401\U0001d41e\U0001d427\U0001d41c\U0001d421"),  # math bold
    ("ReconBench", "\uff32\uff45\uff43\uff4f\uff4e\uff22\uff45\uff4e\uff43\uff48"),  # fullwidth
    ("Recon lab", "R\u00e9con lab"),  # an accent
    ("alpha", "aIpha"),  # capital I for l
    ("modern lab", "rnodern lab"),  # rn for m
    ("Alpha lab", "\u0391lpha lab"),  # Greek capital alpha
])
def test_confusable_names_have_one_key(a, b):
    from reconbench.submissions.identity import confusable

    assert confusable(a, b) and confusable(b, a)


@pytest.mark.parametrize("a, b", [("alpha", "beta"), ("Alpha lab", "Beta group"), ("team-a", "team-b"),
                                  ("reconbench-baselines", "reconbench-baseline"), ("lab 1", "lab 2")])
def test_different_names_do_not_clash(a, b):
    from reconbench.submissions.identity import confusable

    assert not confusable(a, b)


def test_the_confusables_table_is_unicodes_and_every_row_is_one_identity():
    """The shipped table is parsed from Unicode's file (known TR39 rows present), and for every row whose
    source is stable under NFD (the form TR39 looks characters up in), source and prototype share a key:
    the keys apply the whole table, whatever the order of folding. A partial or corrupted table fails."""
    import unicodedata

    from reconbench.submissions.identity import TABLE, _table, confusable, parse_confusables_txt

    raw = json.loads(TABLE.read_text(encoding="utf-8"))
    assert "Version:" in raw["_source"] and "Unicode" in raw["_source"]
    assert raw["0031"] == "006C" and raw["0030"] == "004F" and raw["0430"] == "0061" and raw["006D"] == "0072 006E"
    rows = [(s, p) for s, p in _table().items() if unicodedata.normalize("NFD", s) == s]
    assert len(rows) > 5000
    assert [(hex(ord(s)), p) for s, p in rows if not confusable(s, p)] == []
    sample = "# confusables.txt\n# Version: 99.0.0\n0031 ;\t006C ;\tMA\t# ( 1 → l ) DIGIT ONE → LATIN SMALL LETTER L\n"
    assert parse_confusables_txt(sample) == {"_source": "Unicode confusables.txt (UTS #39): confusables.txt; Version: 99.0.0",
                                             "0031": "006C"}
    with pytest.raises(ValueError):
        parse_confusables_txt("not the file\n")


def _team(board, slug, name, with_entry=False):
    from reconbench.submissions.team import Team, write_team

    public = (board.beta_key.parent / "beta.pem.pub").read_text().split()[-1]
    write_team(board.root / slug, Team(slug=slug, name=name, keys=[public]))
    return board.root / slug


def _team_report(board, slug):
    return next(r for r in board.validate().entries if r.team == slug and not r.entry_id)


@pytest.mark.parametrize("slug, name, expected", [
    ("a1pha", "Someone else", "slug 'a1pha' looks like the slug 'alpha'"),
    ("gamma", "ALPHA LAB", "looks like the display name 'Alpha lab'"),
    ("gamma", "\u0391lpha lab", "looks like the display name 'Alpha lab'"),
    ("gamma", "alpha", "looks like the slug 'alpha'"),
    ("gamma", "ReconBench maintainers", "reserved by the maintainers"),
    ("rec0nbench-ci", "Gamma", "a reproducer's name"),
], ids=["digit-1-slug", "case-name", "greek-name", "name-as-slug", "maintainers-name", "reproducer-name"])
def test_a_look_alike_team_fails_and_the_original_stands(board, tmp_path, slug, name, expected):
    from submission_helpers import git

    (tmp_path / "maintainers").mkdir(exist_ok=True)
    (tmp_path / "maintainers" / "identities.toml").write_text('reserved = ["ReconBench maintainers"]\n')
    reproducers = tmp_path / "maintainers" / "reproducers.toml"
    reproducers.write_text('[[reproducer]]\nname = "reconbench-ci"\nkey = "6K0SXxDJyAGvX1YrnK4328LEudrBsqDRJ30R3cdMrvM="\n')
    import reconbench.submissions.checks.reproduction as repro

    git(board.root, "init", "-q")
    git(board.root, "add", "-A")
    git(board.root, "commit", "-q", "-m", "the board")
    _team(board, slug, name)
    git(board.root, "add", "-A")
    git(board.root, "commit", "-q", "-m", "a newcomer", "--date", "2000-01-01T00:00:00")  # backdating changes nothing
    old = repro.REPRODUCERS
    repro.REPRODUCERS = reproducers
    try:
        report = board.validate()
    finally:
        repro.REPRODUCERS = old
    newcomer = next(r for r in report.entries if r.team == slug and not r.entry_id)
    check = next(c for c in newcomer.checks if c.status == "fail")
    assert newcomer.trust == "failed" and check.name == "identity" and expected in check.message, check.message
    assert next(r for r in report.entries if r.path == board.entry).trust == "signed"  # alpha keeps its identity
    assert not report.ok


def test_an_honest_new_team_passes_the_identity_check(board):
    _team(board, "gamma", "Gamma lab")
    report = _team_report(board, "gamma")
    assert report.trust == "signed" and status(report, "identity") == "pass"


def test_the_maintainers_team_keeps_its_identity_against_a_digit_one_slug_with_its_display_name(tmp_path):
    """The issue's case: a slug with the digit 1 for an l, and the maintainers' display name, after them."""
    from submission_helpers import git

    from reconbench.submissions import validate_board
    from reconbench.submissions.team import Team, load_team, write_team

    repo_team = Path(__file__).resolve().parents[1] / "submissions" / "reconbench-baselines"
    root = tmp_path / "submissions"
    (root / "reconbench-baselines").mkdir(parents=True)
    shutil.copy(repo_team / "team.toml", root / "reconbench-baselines" / "team.toml")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the maintainers' team")
    real = load_team(root / "reconbench-baselines")
    write_team(root / "reconbench-base1ines", Team(slug="reconbench-base1ines", name=real.name, keys=[real.keys[0]]))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a look-alike")
    reports = {r.team: r for r in validate_board(None, root, rescore=False).entries}
    assert reports["reconbench-baselines"].trust == "signed"
    check = next(c for c in reports["reconbench-base1ines"].checks if c.status == "fail")
    assert check.name == "identity" and "looks like the slug 'reconbench-baselines'" in check.message
    assert "looks like the display name 'ReconBench baselines'" in " ".join(check.details)
