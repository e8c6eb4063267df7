"""`submit` (result folder -> submissions/ layout), Hub-referenced reconstructions, and the CLI
commands validate / schema / submit."""

from __future__ import annotations

import datetime
import json
import shutil
import tomllib

import pytest
from typer.testing import CliRunner

from reconbench.cli import app
from reconbench.image.results import RECONSTRUCTIONS_FILE, RESULT_FILE
from reconbench.core.signing import generate_key, load_private_key, sign_payload
from reconbench.submissions import load_team
from reconbench.submissions.submit import HubPin, SubmitError, submit_result
from submission_helpers import base, failure, fresh_board, status

runner = CliRunner()


@pytest.fixture
def board(tmp_path_factory, tmp_path):
    return fresh_board(tmp_path_factory, tmp_path)


def resigned_copy(src, dst, key, **changes):
    """A copy of a result folder whose payload is changed and signed by `key`."""
    shutil.copytree(src, dst)
    data = json.loads((dst / RESULT_FILE).read_text())
    data["payload"].update(changes)
    data["signature"] = sign_payload(data["payload"], load_private_key(key))
    (dst / RESULT_FILE).write_text(json.dumps(data))
    return dst


def test_submit_creates_the_layout_and_the_team(tmp_path_factory, tmp_path):
    b = base(tmp_path_factory)
    readme = tmp_path / "notes.md"
    readme.write_text("# MI-Face\nPaper defaults.\n")
    root = tmp_path / "submissions"
    out = submit_result(b.result_dir, "new-team", root=root, key_path=b.alpha_key, team_name="New team",
                        links=["https://example.org/code"], readme=readme)
    assert out.team_created and not out.key_added
    assert sorted(p.name for p in out.entry.iterdir()) == ["README.md", RECONSTRUCTIONS_FILE, RESULT_FILE]
    team = tomllib.loads((root / "new-team" / "team.toml").read_text())
    assert team["name"] == "New team" and team["links"] == ["https://example.org/code"]
    (listed,) = team["keys"]  # keys carry the date they were added (keys are history)
    assert listed["key"] == json.loads((out.entry / RESULT_FILE).read_text())["signature"]["public_key"]
    assert listed["added"] == datetime.datetime.now(datetime.timezone.utc).date()
    assert load_team(root / "new-team").slug == "new-team"
    with pytest.raises(SubmitError, match="already exists"):
        submit_result(b.result_dir, "new-team", root=root, key_path=b.alpha_key)


def test_submit_refuses_a_key_that_did_not_sign(tmp_path_factory, tmp_path):
    b = base(tmp_path_factory)
    with pytest.raises(SubmitError, match="was signed by key .* submit with the key that signed it"):
        submit_result(b.result_dir, "beta", root=tmp_path / "s", key_path=b.beta_key)
    with pytest.raises(SubmitError, match=r"\[a-z0-9-\]|lower-case"):
        submit_result(b.result_dir, "Bad_Team", root=tmp_path / "s", key_path=b.alpha_key)
    assert not (tmp_path / "s").exists()  # nothing written


def test_adding_a_key_to_an_existing_team_needs_the_flag(board, tmp_path):
    key3, public3 = generate_key(tmp_path / "k3.pem")
    # another seed: the same run again would be refused as a reproduction (test_submissions_rerun.py)
    result = resigned_copy(board.result_dir, tmp_path / "r3", key3, entry_id="digits-mi-face-member3",
                           provenance={**board.payload()["provenance"], "seed": 1,
                                       "command": "recon-submit evaluate --attack mi-face --seed 1"})
    before = (board.root / "alpha" / "team.toml").read_bytes()
    with pytest.raises(SubmitError, match="does not list key .* --add-key"):
        submit_result(result, "alpha", root=board.root, key_path=key3)
    assert (board.root / "alpha" / "team.toml").read_bytes() == before
    assert not (board.root / "alpha" / "digits-mi-face-member3").exists()
    out = submit_result(result, "alpha", root=board.root, key_path=key3, add_key=True)
    assert out.key_added and load_team(board.root / "alpha").keys[-1] == public3
    (report,) = board.validate([out.entry]).entries
    assert status(report, "signature") == "pass"
    assert failure(report).name == "duplicates"  # same reconstructions as alpha's first entry


def test_hub_referenced_reconstructions(hub_server, tmp_path_factory, tmp_path):
    b = base(tmp_path_factory)
    data = (b.result_dir / RECONSTRUCTIONS_FILE).read_bytes()
    rev = hub_server.add_file("alpha/recons", RECONSTRUCTIONS_FILE, data)
    root = tmp_path / "submissions"
    out = submit_result(b.result_dir, "alpha", root=root, key_path=b.alpha_key, hub=HubPin("alpha/recons", rev))
    assert sorted(p.name for p in out.entry.iterdir()) == [RESULT_FILE]
    assert out.result.payload.reconstructions.hub.revision == rev
    from reconbench.submissions import validate_entries

    (report,) = validate_entries(None, root, rescore=False)
    assert report.trust == "signed" and "from the Hub, alpha/recons@" in next(c for c in report.checks if c.name == "reconstructions").message
    # a Hub copy that is not the signed file: refused (the server now serves other bytes at `main`)
    wrong = hub_server.add_file("alpha/other", RECONSTRUCTIONS_FILE, data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(SubmitError, match="sha256 mismatch"):
        submit_result(b.result_dir, "alpha2", root=root, key_path=b.alpha_key, hub=HubPin("alpha/other", wrong))
    # and a local file beside a Hub reference is one copy too many
    shutil.copyfile(b.result_dir / RECONSTRUCTIONS_FILE, out.entry / RECONSTRUCTIONS_FILE)
    (report,) = validate_entries(None, root, rescore=False)
    assert "keep one of the two" in failure(report).message


def test_hub_reference_offline_is_a_clear_failure(hub_server, tmp_path_factory, tmp_path, monkeypatch):
    b = base(tmp_path_factory)
    rev = hub_server.add_file("alpha/recons", RECONSTRUCTIONS_FILE, (b.result_dir / RECONSTRUCTIONS_FILE).read_bytes())
    root = tmp_path / "submissions"
    submit_result(b.result_dir, "alpha", root=root, key_path=b.alpha_key, hub=HubPin("alpha/recons", rev))
    hub_server.stop()
    shutil.rmtree(tmp_path / "hf-home", ignore_errors=True)
    from reconbench.submissions import validate_entries

    (report,) = validate_entries(None, root, rescore=False)
    check = failure(report)
    assert check.name == "reconstructions" and "pinned Hub copy cannot be fetched" in check.message


# ---------------------------------------------------------------- CLI

def test_cli_validate_formats_and_exit_codes(board, tmp_path):
    root = str(board.root)
    ok = runner.invoke(app, ["validate", "--root", root, "--no-rescore", "--format", "json"])
    assert ok.exit_code == 0, ok.output
    data = json.loads(ok.output)
    assert data["ok"] and data["entries"][0]["trust"] == "signed" and data["entries"][0]["team_name"] == "Alpha lab"
    (board.entry / "model.pkl").write_bytes(b"\x80\x04.")
    summary = tmp_path / "summary.md"
    bad = runner.invoke(app, ["validate", "--root", root, "--no-rescore", "--format", "markdown", "--summary", str(summary)])
    assert bad.exit_code == 1
    assert "| entry | trust | first problem |" in bad.output and "**failed**" in bad.output
    assert "model.pkl" in summary.read_text() and "<details open>" in summary.read_text()
    text = runner.invoke(app, ["validate", "--root", root, "--no-rescore"])
    assert text.exit_code == 1 and "FAILED" in text.output and "Traceback" not in text.output


def test_cli_validate_paths_from_a_nul_separated_list(board, tmp_path):
    listing = tmp_path / "changed"
    listing.write_bytes(b"\0".join(str(p).encode() for p in (board.entry / RESULT_FILE, board.root / "beta" / "team.toml")))
    res = runner.invoke(app, ["validate", "--root", str(board.root), "--no-rescore", "--format", "json",
                              "--paths-from", str(listing)])
    data = json.loads(res.output)
    assert res.exit_code == 0 and len(data["entries"]) == 1 and data["other"][0]["team"] == "beta"


def test_markdown_escapes_names_from_submissions(board):
    (board.entry / "<img src=x onerror=alert(1)>|.md").write_text("x")
    res = runner.invoke(app, ["validate", "--root", str(board.root), "--no-rescore", "--format", "markdown"])
    assert "<img" not in res.output and "&#60;img" in res.output


def test_cli_schema(tmp_path):
    res = runner.invoke(app, ["schema"])
    schema = json.loads(res.output)
    assert res.exit_code == 0 and schema["title"] == "ReconBench result file" and "payload" in schema["properties"]
    team = json.loads(runner.invoke(app, ["schema", "--team"]).output)
    assert set(team["properties"]) >= {"name", "links", "contact", "keys"}


def test_cli_submit_prints_next_steps(tmp_path_factory, tmp_path):
    b = base(tmp_path_factory)
    root = tmp_path / "submissions"
    res = runner.invoke(app, ["submit", str(b.result_dir), "--team", "cli-team", "--root", str(root),
                              "--key", str(b.alpha_key), "--name", "CLI team"])
    assert res.exit_code == 0, res.output
    assert "Next steps" in res.output and "git checkout -b submit/" in res.output and "pull request" in res.output
    again = runner.invoke(app, ["submit", str(b.result_dir), "--team", "cli-team", "--root", str(root),
                                "--key", str(b.alpha_key)])
    assert again.exit_code == 1 and "already exists" in again.output
