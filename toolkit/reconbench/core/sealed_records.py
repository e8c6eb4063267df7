"""sealed.json records, signed by the season's record signer (core/seal.record_signer).

A sealed track's membership gap and extraction count need the board's key, so only CI computes them,
and the board built without the key (the site, a contributor's validate) shows the record CI wrote.
A record in a pull request is the contributor's file, though: unsigned, it would be published as CI's
numbers. So CI signs each record, and validation without the key accepts one only under the
signature of the public key the registry pins for its draw (seal.record_signer). After the season's
reveal the key is public, the signature proves nothing any more, and `recon-submit seal verify`
recomputes every record instead.
"""

from __future__ import annotations

import base64

SIGNATURE = "signature"


def unsigned(record: dict) -> dict:
    """The record's numbers and what they are for, without its signature."""
    return {k: v for k, v in record.items() if k != SIGNATURE}


def sign_record(record: dict, key: bytes) -> dict:
    """`record` with CI's signature over its canonical form (what validate --seal-key --write-sealed writes)."""
    from reconbench.core.seal import record_signer
    from reconbench.core.signing import sign_payload

    return unsigned(record) | {SIGNATURE: sign_payload(unsigned(record), record_signer(key))}


def signature_problem(record: dict, signer: str | None) -> str | None:
    """Why `record` is not signed by `signer` (the registry's base64 public key), or None when it is."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from reconbench.core.signing import canonical

    if not signer:
        return "the registry pins no record signer for this draw, so no record of it can be checked"
    signature = record.get(SIGNATURE)
    if not isinstance(signature, dict):
        return "it carries no signature (CI signs every record it writes)"
    if signature.get("public_key") != signer:
        return "it is signed by another key than the draw's record signer pinned in the registry"
    try:
        Ed25519PublicKey.from_public_bytes(base64.b64decode(signer)).verify(
            base64.b64decode(str(signature.get("value", "")), validate=True), canonical(unsigned(record)))
    except (InvalidSignature, ValueError, TypeError):
        return "its signature does not verify: the record was changed after CI signed it"
    return None
