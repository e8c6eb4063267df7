"""ed25519 keys and signatures over the RFC 8785 canonical form of a result payload."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

ALG = "ed25519"


class SigningError(Exception):
    """A key that cannot be read or written, or a signature that does not verify."""


def default_key_path() -> Path:
    base = os.environ.get("RECONBENCH_HOME") or os.path.join(
        os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config"), "reconbench"
    )
    return Path(base) / "keys" / "ed25519.pem"


def public_key_path(private_path: Path) -> Path:
    return Path(str(private_path) + ".pub")


def public_key_b64(key: Ed25519PublicKey) -> str:
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


def key_id(public_b64: str) -> str:
    """A short, stable name for a public key: the first 16 hex digits of sha256(raw key)."""
    return hashlib.sha256(base64.b64decode(public_b64)).hexdigest()[:16]


def generate_key(path: Path) -> tuple[Path, str]:
    """Write a new private key (mode 0600) and its public key beside it; never overwrite."""
    path = Path(path)
    pub_path = public_key_path(path)
    if path.exists() or pub_path.exists():
        raise SigningError(f"{path}: a key already exists; refusing to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    public = public_key_b64(key.public_key())
    pub_path.write_text(f"{ALG} {public}\n", encoding="ascii")
    return path, public


PEM_PRIVATE = b"-----BEGIN PRIVATE KEY-----"


def check_key_file(path: Path) -> None:
    """Before a long run, without loading the key: the file exists, is readable and starts as a
    PEM private key. The key itself is read only to sign, after the attack has ended; a file that
    passes this and still cannot be parsed fails then, with load_private_key's message."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            head = f.read(len(PEM_PRIVATE))
    except FileNotFoundError:
        raise SigningError(f"{path}: key file not found (create one with `recon-submit keygen`)") from None
    except OSError as exc:
        raise SigningError(f"{path}: not a readable PEM private key ({exc})") from None
    if head != PEM_PRIVATE:
        raise SigningError(f"{path}: not a readable PEM private key (it does not start with {PEM_PRIVATE.decode()})")


def load_private_key(path: Path) -> Ed25519PrivateKey:
    path = Path(path)
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except FileNotFoundError:
        raise SigningError(f"{path}: key file not found (create one with `recon-submit keygen`)") from None
    except (ValueError, TypeError, OSError) as exc:
        raise SigningError(f"{path}: not a readable PEM private key ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningError(f"{path}: not an ed25519 key")
    return key


def canonical(payload: dict) -> bytes:
    """RFC 8785 (JCS) canonical JSON: what the signature covers, byte for byte."""
    return rfc8785.dumps(payload)


def sign_payload(payload: dict, key: Ed25519PrivateKey) -> dict[str, str]:
    public = public_key_b64(key.public_key())
    value = base64.b64encode(key.sign(canonical(payload))).decode("ascii")
    return {"alg": ALG, "key_id": key_id(public), "public_key": public, "value": value}


def verify_payload(payload: dict, signature: dict, trusted_keys: list[str] | None = None) -> str:
    """Check the signature; return the key id. With `trusted_keys`, the key must be one of them."""
    if signature.get("alg") != ALG:
        raise SigningError(f"unsupported signature algorithm {signature.get('alg')!r}")
    public = signature.get("public_key", "")
    try:
        key = Ed25519PublicKey.from_public_bytes(base64.b64decode(public, validate=True))
        sig = base64.b64decode(signature.get("value", ""), validate=True)
    except (ValueError, TypeError):
        raise SigningError("the signature block holds a malformed public key or signature") from None
    if signature.get("key_id") != key_id(public):
        raise SigningError("the signature's key_id does not match its public key")
    if trusted_keys is not None and public not in trusted_keys:
        raise SigningError(f"signed by key {key_id(public)}, which is not one of the team's keys")
    try:
        key.verify(sig, canonical(payload))
    except InvalidSignature:
        raise SigningError("signature does not match the payload (the payload was changed after signing)") from None
    return key_id(public)
