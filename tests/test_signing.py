"""Keys, canonical JSON and signatures."""

import os
import stat

import pytest

from reconbench.core.signing import SigningError, canonical, generate_key, load_private_key, sign_payload, verify_payload


def test_keygen_mode_0600_and_refuses_overwrite(tmp_path):
    path, public = generate_key(tmp_path / "k.pem")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert (tmp_path / "k.pem.pub").read_text().startswith("ed25519 ")
    with pytest.raises(SigningError, match="refusing to overwrite"):
        generate_key(path)


def test_canonical_form_is_rfc8785():
    assert canonical({"b": 1, "a": [1.0, "é"]}) == '{"a":[1,"é"],"b":1}'.encode()


def test_sign_verify_and_tamper(tmp_path):
    key = load_private_key(generate_key(tmp_path / "k.pem")[0])
    payload = {"metric": 0.25, "name": "x"}
    sig = sign_payload(payload, key)
    assert verify_payload(payload, sig) == sig["key_id"]
    with pytest.raises(SigningError, match="payload was changed"):
        verify_payload({**payload, "metric": 0.2500001}, sig)
    with pytest.raises(SigningError, match="not one of the team's keys"):
        verify_payload(payload, sig, trusted_keys=["AAAA"])


def test_other_key_cannot_pass_as_the_signer(tmp_path):
    a = load_private_key(generate_key(tmp_path / "a.pem")[0])
    b = load_private_key(generate_key(tmp_path / "b.pem")[0])
    sig_a, sig_b = sign_payload({"x": 1}, a), sign_payload({"x": 1}, b)
    forged = {**sig_a, "value": sig_b["value"]}
    with pytest.raises(SigningError):
        verify_payload({"x": 1}, forged)


def test_unreadable_key_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key")
    with pytest.raises(SigningError, match="bad.pem"):
        load_private_key(bad)
