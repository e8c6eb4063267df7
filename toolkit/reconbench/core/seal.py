"""Sealed membership: which half of a public pool a sealed track's model trained on, drawn from a secret.

A track whose membership comes from a seed in the public source has public membership: an attack
file can carry the answer. A sealed track draws it from a key held by the board's CI (the GitHub
secret SEAL_KEY; `../shared/secrets/seal.key` stands in for it in this repository) and publishes
only what binds the draw without revealing it:

    seed(group, draw)       = HMAC-SHA256(key, "reconbench-seal/v1/draw/<group>/<draw>")
    nonce(group, draw)      = HMAC-SHA256(key, "reconbench-seal/v1/nonce/<group>/<draw>")
    members                 = per class of the pool, half of its items, chosen by a numpy PCG64
                              generator seeded with the first 16 bytes of seed (a permutation of
                              the class's pool indices; the first half are members)
    commitment              = SHA-256("reconbench-seal/v1" || nonce || pool_sha256 || packbits(members))

The nonce is 256 secret bits, so the commitment says nothing about the members (hiding); SHA-256
makes it infeasible to open it to another membership (binding). When the season ends the key is
revealed (`recon-submit seal reveal`): anyone then recomputes the nonce and the members, checks the
commitment, and recomputes every sealed number the board published (`recon-submit seal verify`).

The sealed numbers CI scores with the key (sealed.json) are CI's word, and a contributor's pull
request could carry a record written by hand. So CI signs each record with an ed25519 key derived
from the season's key (`record_signer`), and the registry pins its public half beside each draw's
commitment: validation without the key checks the signature (core/sealed_records.py).

Pure functions: no torch, no files but the key's. Nothing derived from a key but the commitment and
the record signer's public key is ever written where the public can read it.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import numpy as np

SCHEME = "reconbench-seal/v1"
KEY_BYTES = 32


class SealError(Exception):
    """A seal key that cannot be read, or a commitment that does not open."""


def read_key(path: Path | str) -> bytes:
    """The key in `path`: 32+ bytes written as hex (one line). One clear message naming the file otherwise."""
    path = Path(path)
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise SealError(f"{path}: cannot read the seal key ({type(exc).__name__})") from None
    try:
        key = bytes.fromhex(text)
    except ValueError:
        raise SealError(f"{path}: the seal key must be hex digits on one line") from None
    if len(key) < KEY_BYTES:
        raise SealError(f"{path}: the seal key has {len(key)} bytes, at least {KEY_BYTES} are needed")
    return key


def new_key() -> str:
    """A fresh key as hex (a new season; tests' throwaway keys)."""
    import secrets

    return secrets.token_hex(KEY_BYTES)


def _derive(key: bytes, purpose: str, group: str, draw: int) -> bytes:
    return hmac.new(key, f"{SCHEME}/{purpose}/{group}/{int(draw)}".encode(), hashlib.sha256).digest()


class DrawOpenings:
    """A revealed v1 season without its key: per draw, its seed and nonce (the two HMACs above). Season 2026-s1
    was sealed with the board's key itself, from which every later season's key derives, so its reveal
    publishes these instead of the key (`recon-submit seal reveal`); they open its commitments and nothing
    else. Accepted wherever a v1 key is (draw_members, commitment, open_draw)."""

    def __init__(self, draws: dict[str, tuple[bytes, bytes]]):
        self.draws = dict(draws)  # "<group>/<draw>" -> (seed, nonce)

    @classmethod
    def of(cls, key: bytes, draws: list[tuple[str, int]]) -> "DrawOpenings":
        return cls({f"{g}/{int(d)}": (_derive(key, "draw", g, d), _derive(key, "nonce", g, d)) for g, d in draws})

    def derive(self, purpose: str, group: str, draw: int) -> bytes:
        try:
            seed, nonce = self.draws[f"{group}/{int(draw)}"]
        except KeyError:
            raise SealError(f"sealed track '{group}' draw {draw}: the revealed openings do not include it") from None
        return seed if purpose == "draw" else nonce


def _v1(key, purpose: str, group: str, draw: int) -> bytes:
    return key.derive(purpose, group, draw) if isinstance(key, DrawOpenings) else _derive(key, purpose, group, draw)


def record_signer(key: bytes):
    """The ed25519 key that signs the season's sealed.json records: its 32-byte seed is an HMAC of the
    seal key under its own label, so the public half says nothing about the key or the members."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.from_private_bytes(hmac.new(key, f"{SCHEME}/record-signer".encode(), hashlib.sha256).digest())


def record_signer_public(key: bytes) -> str:
    """The record signer's public key, base64 (what registry/sealed.json pins as seal.record_signer)."""
    from reconbench.core.signing import public_key_b64

    return public_key_b64(record_signer(key).public_key())


def draw_members(key: bytes, group: str, draw: int, labels: np.ndarray) -> np.ndarray:
    """(P,) bool: the members of draw `draw` of sealed track `group`, over a pool with these labels.
    Per class, half of the pool's items (the pool holds an even count of each class)."""
    labels = np.asarray(labels)
    rng = np.random.default_rng(int.from_bytes(_v1(key, "draw", group, draw)[:16], "big"))
    members = np.zeros(len(labels), dtype=bool)
    for c in np.unique(labels):
        where = np.flatnonzero(labels == c)
        if len(where) % 2:
            raise SealError(f"sealed track '{group}': class {int(c)} has {len(where)} pool items, not an even count")
        members[rng.permutation(where)[: len(where) // 2]] = True
    return members


def commitment(key: bytes, group: str, draw: int, pool_sha256: str, members: np.ndarray) -> str:
    """The published commitment to one draw (module docstring)."""
    nonce = _v1(key, "nonce", group, draw)
    bits = np.packbits(np.asarray(members, dtype=bool)).tobytes()
    return hashlib.sha256(SCHEME.encode() + nonce + bytes.fromhex(pool_sha256) + bits).hexdigest()


def open_draw(key: bytes, group: str, draw: int, pool_sha256: str, labels: np.ndarray, published: str) -> np.ndarray:
    """The members of a draw, after checking that `key` opens its published commitment."""
    members = draw_members(key, group, draw, labels)
    if not hmac.compare_digest(commitment(key, group, draw, pool_sha256, members), published):
        raise SealError(f"sealed track '{group}' draw {draw}: this key does not open the published commitment "
                        f"{published[:16]}… (another season's key, or a changed pool)")
    return members


# --- Scheme v2 (issue 43, season 2026-s2 onwards): the pool itself is secret --------------------------------
#
# Season 2026-s1 published each draw's model and its pool (the first 2n images of the sealed block), and the
# model's loss on those 2n images tells its members from its non-members (0.91-0.98 accuracy): that season's
# membership is public. From v2 on:
#
#     season_key(S)           = HMAC-SHA256(master, "reconbench-seal/v2/season/<S>")   revealed at S's end,
#                               the master (the CI secret) never is
#     seed, nonce             = HMAC-SHA256(season_key, "reconbench-seal/v2/{draw,nonce}/<group>/<draw>")
#     pool                    = per class c of the open twin's training set, n_c members then n_c non-members
#                               (the holdout of the gap), drawn without replacement from the block's items
#                               of class c by a PCG64 generator seeded with seed[:16]: from the whole block
#                               (4,860 Fashion images), not its first 2n
#     commitment              = SHA-256("reconbench-seal/v2" || nonce || block_sha256 || indices as >u4
#                               || packbits(members)): it binds which block items form the pool as well as
#                               which of them are members
#     weights_key(group, d)   = HMAC-SHA256(season_key, "reconbench-seal/v2/weights/<group>/<d>"): the
#                               AES-256-GCM key the draw's weight files are kept under (core/sealed_weights.py)
#
# The draw's model encodes its members, so it is never published before the reveal; the board runs the
# contributor's code against it (`recon-submit seal run`).

SCHEME_V2 = "reconbench-seal/v2"


def season_key(master: bytes, season: str) -> bytes:
    """The key of one season, derived from the board's secret: revealing it opens that season only."""
    return hmac.new(master, f"{SCHEME_V2}/season/{season}".encode(), hashlib.sha256).digest()


def _derive_v2(key: bytes, purpose: str, group: str, draw: int) -> bytes:
    return hmac.new(key, f"{SCHEME_V2}/{purpose}/{group}/{int(draw)}".encode(), hashlib.sha256).digest()


def block_draw(key: bytes, group: str, draw: int, block_labels: np.ndarray,
               per_class: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """(indices, members): the draw's pool as sorted indices into the block, and which of them are members.
    Per class c, per_class[c] members and as many non-members, drawn without replacement from the block's
    items of class c (key: the season's key)."""
    block_labels = np.asarray(block_labels)
    rng = np.random.default_rng(int.from_bytes(_derive_v2(key, "draw", group, draw)[:16], "big"))
    chosen, inside = [], []
    for c in sorted(per_class):
        n = int(per_class[c])
        where = np.flatnonzero(block_labels == c)
        if 2 * n > len(where):
            raise SealError(f"sealed track '{group}': class {c} needs {2 * n} block items, the block has {len(where)}")
        picked = rng.permutation(where)[: 2 * n]
        chosen.append(picked)
        inside.append(np.arange(2 * n) < n)
    indices, members = np.concatenate(chosen), np.concatenate(inside)
    order = np.argsort(indices, kind="stable")
    return indices[order].astype(np.int64), members[order]


def commitment_v2(key: bytes, group: str, draw: int, block_sha256: str, indices: np.ndarray,
                  members: np.ndarray) -> str:
    """The published commitment to one v2 draw: its pool's block indices and its membership (see above)."""
    nonce = _derive_v2(key, "nonce", group, draw)
    packed = np.asarray(indices, dtype=">u4").tobytes() + np.packbits(np.asarray(members, dtype=bool)).tobytes()
    return hashlib.sha256(SCHEME_V2.encode() + nonce + bytes.fromhex(block_sha256) + packed).hexdigest()


def open_block_draw(key: bytes, group: str, draw: int, block_sha256: str, block_labels: np.ndarray,
                    per_class: dict[int, int], published: str) -> tuple[np.ndarray, np.ndarray]:
    """block_draw, after checking that the season's `key` opens the published commitment."""
    indices, members = block_draw(key, group, draw, block_labels, per_class)
    if not hmac.compare_digest(commitment_v2(key, group, draw, block_sha256, indices, members), published):
        raise SealError(f"sealed track '{group}' draw {draw}: this key does not open the published commitment "
                        f"{published[:16]}… (another season's key, or a changed block)")
    return indices, members


def weights_key(key: bytes, group: str, draw: int) -> bytes:
    """The AES-256-GCM key of the draw's weight files (key: the season's key)."""
    return _derive_v2(key, "weights", group, draw)
