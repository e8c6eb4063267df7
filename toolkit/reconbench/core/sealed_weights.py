"""A sealed draw's weight files, kept encrypted at rest (issue 43: the model encodes its members).

    file  = MAGIC || nonce (12 random bytes) || AES-256-GCM(weights_key, nonce, plaintext, aad=label)

`weights_key` is core/seal.weights_key(season key, group, draw); `label` names what the file is
("<track id>/model", "<track id>/gradients", ...), so a file swapped for another draw's or another
role's fails to open. GCM authenticates: a changed byte, a wrong key or a wrong label is one
SealError naming the file, never garbage weights. The plaintext is opened in memory only
(`open_file`): the board's sealed job hands the model to the attack's cell, and no decrypted file is
written where the attack or the repository could see it. After the season's reveal anyone derives
the key and opens the files (`recon-submit seal verify`). `cryptography`'s AESGCM does the work.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from pathlib import Path

from reconbench.core.seal import SealError

MAGIC = b"RECONBENCH-SEALED-1\n"
NONCE_BYTES = 12


def seal_bytes(plain: bytes, key: bytes, label: str) -> bytes:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    nonce = os.urandom(NONCE_BYTES)
    return MAGIC + nonce + AESGCM(key).encrypt(nonce, plain, label.encode())


def open_bytes(sealed: bytes, key: bytes, label: str, where: str = "sealed file") -> bytes:
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    if not sealed.startswith(MAGIC) or len(sealed) < len(MAGIC) + NONCE_BYTES + 16:
        raise SealError(f"{where}: not a sealed weight file (it does not start with {MAGIC[:-1].decode()})")
    nonce = sealed[len(MAGIC):len(MAGIC) + NONCE_BYTES]
    try:
        return AESGCM(key).decrypt(nonce, sealed[len(MAGIC) + NONCE_BYTES:], label.encode())
    except InvalidTag:
        raise SealError(f"{where}: this key does not open it as '{label}' (another season's or draw's key, "
                        "another file's label, or changed bytes)") from None


def seal_file(src: Path, dst: Path, key: bytes, label: str) -> None:
    """Encrypt the file `src` into `dst` (written atomically)."""
    from reconbench.core.io import atomic_path

    sealed = seal_bytes(Path(src).read_bytes(), key, label)
    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(Path(dst)) as tmp:
        tmp.write_bytes(sealed)


def open_file(path: Path, key: bytes, label: str) -> bytes:
    """The plaintext of a sealed file, in memory."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SealError(f"{path}: cannot read the sealed weight file ({type(exc).__name__})") from None
    return open_bytes(data, key, label, str(path))


# The board's sealed job opens a v2 draw's files with the key in hand; the loaders (image/track_files.py,
# image/sealed.py) read it from here rather than through every signature between the job and them. Outside
# `opening`, a v2 draw cannot be loaded: one message says that only the board's sealed run opens it.
_OPENED = contextvars.ContextVar("reconbench_sealed_master_key", default=None)


@contextlib.contextmanager
def opening(master_key: bytes):
    """Within this block, v2 draws open with the board's key (the master: each season's key is derived)."""
    token = _OPENED.set(master_key)
    try:
        yield
    finally:
        _OPENED.reset(token)


def current_key() -> bytes | None:
    """The board's key while `opening` is in effect, else None."""
    return _OPENED.get()


# After a season's reveal its key is public, but the master (the CI secret) never is: `seal verify` opens
# the season's draws with the season key alone.
_SEASONS = contextvars.ContextVar("reconbench_sealed_season_keys", default=None)


@contextlib.contextmanager
def opening_season(season: str, key: bytes):
    """Within this block, the draws of `season` open with that season's key (core/seal.season_key)."""
    token = _SEASONS.set({**(_SEASONS.get() or {}), season: key})
    try:
        yield
    finally:
        _SEASONS.reset(token)


def season_key_in_context(season: str) -> bytes | None:
    """The key of `season` in effect: a revealed season key (`opening_season`), else derived from the board's
    master key (`opening`), else None (outside the board's sealed run: the draw stays sealed)."""
    from reconbench.core.seal import season_key

    given = (_SEASONS.get() or {}).get(season)
    if given is not None:
        return given
    master = _OPENED.get()
    return None if master is None else season_key(master, season)


def label(track_id: str, role: str) -> str:
    """The AES-GCM label of a draw's file: "<track id>/<role>" (role: model, gradients, updated_model)."""
    return f"{track_id}/{role}"
