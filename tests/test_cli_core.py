"""The core CLI commands end to end: evaluate -> signed folder -> verify, and tampering."""

import json

import pytest
from typer.testing import CliRunner

from reconbench.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def result_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("eval") / "entry"
    res = runner.invoke(app, ["evaluate", "--attack", "mi-face", "--set", "iterations=60", "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    assert "signed result" in res.output and "ssim" in res.output
    sandbox = json.loads((out / "result.json").read_text())["payload"]["provenance"]["sandbox"]
    assert f"sandbox: {sandbox}" in res.output  # the summary says where the attack ran, as the result records it
    return out


def _copy(src, dst):
    dst.mkdir()
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


def test_evaluate_writes_signed_result_that_verifies(result_dir):
    payload = json.loads((result_dir / "result.json").read_text())["payload"]
    assert payload["track"] == "digits" and payload["scenario"] == "static/white-box/none"
    assert payload["reconstructions"]["count"] == 500
    assert payload["provenance"]["seed"] == 0 and "evaluate" in payload["provenance"]["command"]
    assert payload["metrics"]["fid"]["status"] == "not_computed"
    res = runner.invoke(app, ["verify", str(result_dir)])
    assert res.exit_code == 0 and "OK" in res.output


def test_verify_rejects_changed_metric(result_dir, tmp_path):
    d = _copy(result_dir, tmp_path / "x")
    doc = json.loads((d / "result.json").read_text())
    doc["payload"]["metrics"]["ssim"]["value"] += 0.001
    (d / "result.json").write_text(json.dumps(doc))
    res = runner.invoke(app, ["verify", str(d)])
    assert res.exit_code != 0 and "payload was changed" in res.output


def test_verify_rejects_any_changed_byte_of_reconstructions(result_dir, tmp_path):
    d = _copy(result_dir, tmp_path / "x")
    data = bytearray((d / "reconstructions.safetensors").read_bytes())
    data[-1] ^= 1
    (d / "reconstructions.safetensors").write_bytes(bytes(data))
    res = runner.invoke(app, ["verify", str(d)])
    assert res.exit_code != 0 and "sha256" in res.output


def test_verify_missing_file_and_malformed_json(result_dir, tmp_path):
    d = _copy(result_dir, tmp_path / "x")
    (d / "reconstructions.safetensors").unlink()
    res = runner.invoke(app, ["verify", str(d)])
    assert res.exit_code != 0 and "not found" in res.output
    (d / "result.json").write_text('{"payload": {')
    res = runner.invoke(app, ["verify", str(d)])
    assert res.exit_code != 0 and "malformed JSON" in res.output


def test_verify_rejects_resigned_by_other_key_only_with_team_keys(result_dir, tmp_path):
    """A valid signature by another key verifies as a signature; the team check is `validate`'s."""
    from reconbench.image.results import verify_result_dir, ResultError

    doc = json.loads((result_dir / "result.json").read_text())
    with pytest.raises(ResultError, match="not one of the team's keys"):
        verify_result_dir(result_dir, trusted_keys=["bm90IHRoZSBrZXk="])
    assert doc["signature"]["alg"] == "ed25519"


def test_evaluate_refuses_existing_output_and_bad_scenario(result_dir):
    res = runner.invoke(app, ["evaluate", "--attack", "mi-face", "--out", str(result_dir), "--quiet"])
    assert res.exit_code != 0 and "already exists" in res.output
    res = runner.invoke(app, ["evaluate", "--attack", "deepinversion", "--scenario", "static/black-box/same", "--quiet"])
    assert res.exit_code != 0 and "needs one of" in res.output
    res = runner.invoke(app, ["evaluate", "--track", "nope", "--quiet"])
    assert res.exit_code != 0 and "unknown track" in res.output


def test_listing_commands():
    for command, expected in (("tracks", "digits"), ("attacks", "deepinversion"), ("metrics", "ssim")):
        res = runner.invoke(app, [command])
        assert res.exit_code == 0 and expected in res.output, res.output


def test_keygen_refuses_overwrite(tmp_path):
    path = tmp_path / "k.pem"
    assert runner.invoke(app, ["keygen", str(path)]).exit_code == 0
    before = path.read_bytes()
    res = runner.invoke(app, ["keygen", str(path)])
    # An existing key is never overwritten: keygen shows its public key instead (issue 15, item 6).
    assert res.exit_code == 0 and "never overwrites" in res.output and path.read_bytes() == before
