"""What validation may reuse from an earlier run: near-duplicate features and the costly checks'
outcomes, as files keyed by content hashes (JSON and safetensors: data the toolkit reads, never
unpickled).

- Features (nearindex.Features: the uint8 pixels and the projected structure vectors) of a
  reconstruction file, keyed by its sha256 and the feature code
  (FEATURE_VERSION, the source of nearcopy.py and nearindex.py, numpy/torch versions).
- The near-duplicate search's answer for an entry (which earlier entry it copies, if any), keyed by
  its reconstructions' sha256, the thresholds, the feature code and the ordered list of the earlier
  entries it is compared with (their reconstructions' sha256 and whether each file is readable): the
  same board gives the same answer, and any change to the board is another key (near_key).
- Check outcomes of the stages that only depend on the entry's own content (rescore, copies,
  nearcopies: CACHED_STAGES), keyed by the sha256 of the signed payload (which pins the
  reconstructions' sha256, the track, the scenario and every claimed number), the toolkit's source
  and registry (toolkit_key), the library versions, the re-score switch, the device and which
  backbone weights are present. Failed outcomes are not stored (they are rare and their messages
  name paths). Every other check (structure, schema, signature, registry, reconstructions,
  duplicates, reproduction) runs every time: they read the board, the team keys, the git history
  and the records, and cost milliseconds.

The cache is an optimisation, never evidence. Every file carries an HMAC-SHA256 of its key and
content under a secret the submitter cannot hold ($RECONBENCH_VALIDATION_CACHE_KEY: in CI a secret of
main's own jobs, in tests a throwaway): a file planted in the cache folder, in a commit or a
restored cache, with a digest anyone can recompute, fails it and is recomputed. Where no secret is
set (a pull request's job, a contributor's machine) the secret is this machine's own: a random key
made on first use beside the signing key (<config>/validation-cache.key, mode 0600), outside any
checkout and hidden from the attack's sandbox. It makes `make site` after `validate` re-score
nothing on the machine that validated, and it authenticates nothing anywhere else: a restored or
committed file made under another key fails and is re-derived. An attack run without the sandbox
(RECONBENCH_SANDBOX=none: no boundary, and its warning says so) can read that file and plant records under
it, which this machine's own validate would reuse; the jobs that publish verdicts set CI's secret, under
which such a record fails (tests/test_validation_cache.py). A stale file cannot be found either (its key changes with
whatever it depends on), so a tampered, truncated or stale cache costs time, never a verdict.
The cache lives outside the checkout ($RECONBENCH_CACHE/validation, default
$XDG_CACHE_HOME/reconbench/validation): validate_board ignores one inside the folder it validates.
`recon-submit validate --no-cache` ignores it entirely.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from reconbench.core.cache import cache_root
from reconbench.core.io import atomic_path
from reconbench.core.signing import default_key_path

CACHED_STAGES = ("rescore", "copies", "nearcopies")
CACHE_ENV = "RECONBENCH_VALIDATION_CACHE"  # "0": no cache (the full re-validation)
KEY_ENV = "RECONBENCH_VALIDATION_CACHE_KEY"  # the HMAC secret; unset: this machine's own (local_secret)
FORMAT = "reconbench-validation-cache-2"  # 2: HMAC digests (1: plain sha256, which anyone can recompute)


def key_from_env() -> bytes | None:
    """CI's secret where the environment sets one, else this machine's own (None if it cannot be made)."""
    secret = os.environ.get(KEY_ENV, "")
    return secret.encode() if secret.strip() else local_secret()


def local_secret_path() -> Path:
    return default_key_path().parent.parent / "validation-cache.key"  # <config>/reconbench/, beside keys/


def local_secret() -> bytes | None:
    """This machine's cache secret: 32 random bytes made on first use, readable by its owner only.
    None where the config folder cannot be written (the cache is then inert, never wrong)."""
    path = local_secret_path()
    try:
        if not path.is_file():
            with atomic_path(path) as tmp:
                tmp.write_text(secrets.token_hex(32), encoding="ascii")
                os.chmod(tmp, 0o600)
        value = path.read_text(encoding="ascii").strip()
    except OSError:
        return None
    return value.encode() if len(value) == 64 else None


def enabled_by_env() -> bool:
    return os.environ.get(CACHE_ENV, "1").strip().lower() not in {"0", "false", "no", "off"}


def _library_versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for name in ("torch", "numpy", "scikit-learn", "safetensors", "pydantic"):
        try:
            out.append(f"{name}={version(name)}")
        except PackageNotFoundError:
            out.append(f"{name}=none")
    return ";".join(out)


def _hash_files(paths: list[Path], base: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(paths):
        h.update(str(path.relative_to(base)).encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def keyed_files(package: Path) -> list[Path]:
    """The files a validation outcome may depend on: every .py, registry .json and embedded .safetensors
    of the package. Not the site's page templates (.j2, read by jinja in the page rendering only, never by
    a check): editing a page must not make the next `make site` re-score the whole board (issue 45)."""
    return [p for p in package.rglob("*") if p.is_file() and p.suffix in (".py", ".json", ".safetensors")
            and "__pycache__" not in p.parts]


@lru_cache(maxsize=1)
def toolkit_key() -> str:
    """The toolkit's source (every .py), its registry and embedded files, and the libraries' versions.
    Any change to the code re-validates: safe, and a full run is what the nightly job does anyway."""
    package = Path(__file__).resolve().parents[1]
    files = keyed_files(package)
    from reconbench._version import __version__

    return hashlib.sha256(f"{__version__}|{_hash_files(files, package)}|{_library_versions()}".encode()).hexdigest()


@lru_cache(maxsize=1)
def feature_key() -> str:
    from reconbench.submissions import nearcopy, nearindex

    here = Path(nearindex.__file__).resolve().parent
    code = _hash_files([Path(nearcopy.__file__).resolve(), Path(nearindex.__file__).resolve()], here)
    return hashlib.sha256(f"{nearindex.FEATURE_VERSION}|{code}|{_library_versions()}".encode()).hexdigest()


def _digest(secret: bytes, key: str, body: bytes) -> str:
    return hmac.new(secret, FORMAT.encode() + b"\0" + key.encode() + b"\0" + body, hashlib.sha256).hexdigest()


def _same(digest, expected: str) -> bool:
    return isinstance(digest, str) and hmac.compare_digest(digest, expected)


def _hex64(value: str) -> bool:
    return len(value) == 64 and all(c in "0123456789abcdef" for c in value)


@dataclass
class ValidationCache:
    """One folder (default: <cache root>/validation) holding features/ and checks/, authenticated by
    `secret` (default: $RECONBENCH_VALIDATION_CACHE_KEY, else this machine's own). Without a secret
    it is inert: every load misses and every store is dropped."""

    root: Path
    secret: bytes | None = None

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        if self.secret is None:
            self.secret = key_from_env()

    @classmethod
    def default(cls) -> "ValidationCache":
        return cls(cache_root() / "validation")

    @property
    def usable(self) -> bool:
        return bool(self.secret)

    # ------------------------------------------------------------ features
    def _feature_path(self, sha256: str) -> Path:
        return self.root / "features" / feature_key()[:16] / sha256[:2] / f"{sha256}.safetensors"

    def load_features(self, sha256: str):
        from safetensors import SafetensorError, safe_open

        from reconbench.submissions.nearindex import Features

        if not _hex64(sha256) or not self.usable:
            return None
        path = self._feature_path(sha256)
        try:
            with safe_open(str(path), framework="numpy") as f:
                meta = f.metadata() or {}
                pixel, struct = f.get_tensor("pixel"), f.get_tensor("struct")
        except (OSError, SafetensorError, KeyError, ValueError):
            return None
        key = f"{feature_key()}|{sha256}"
        if meta.get("key") != key or pixel.dtype != np.uint8 or struct.dtype != np.float16 \
                or pixel.ndim != 2 or struct.ndim != 3 or len(pixel) != len(struct):
            return None
        if not _same(meta.get("digest"), _digest(self.secret, key, pixel.tobytes() + struct.tobytes())):
            return None
        return Features(pixel, struct)

    def store_features(self, sha256: str, features) -> None:
        from safetensors.numpy import save_file

        if not _hex64(sha256) or not self.usable:
            return
        key = f"{feature_key()}|{sha256}"
        pixel, struct = np.ascontiguousarray(features.pixel), np.ascontiguousarray(features.struct)
        meta = {"key": key, "digest": _digest(self.secret, key, pixel.tobytes() + struct.tobytes())}
        try:
            with atomic_path(self._feature_path(sha256)) as tmp:
                save_file({"pixel": pixel, "struct": struct}, str(tmp), metadata=meta)
        except OSError:
            pass  # a read-only or full cache only costs time

    # ------------------------------------------------------------ records (JSON)
    def _record_path(self, kind: str, key: str) -> Path:
        return self.root / kind / key[:2] / f"{key}.json"

    def load_record(self, kind: str, key: str) -> dict | None:
        """A JSON record stored under `key` (kind "checks" or "near"), or None if absent or not intact."""
        if not self.usable:
            return None
        path = self._record_path(kind, key)
        try:
            if path.stat().st_size > 4_000_000:
                return None
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            return None
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("key") != key:
            return None
        record = data.get("record")
        if not isinstance(record, dict) or not _same(data.get("digest"), _digest(self.secret, key, _canonical(record))):
            return None
        return record

    def store_record(self, kind: str, key: str, record: dict) -> None:
        if not self.usable:
            return
        try:
            data = {"format": FORMAT, "key": key, "digest": _digest(self.secret, key, _canonical(record)), "record": record}
        except (TypeError, ValueError):  # not plain JSON data: not kept
            return
        try:
            with atomic_path(self._record_path(kind, key)) as tmp:
                tmp.write_text(json.dumps(data, ensure_ascii=True, sort_keys=True), encoding="utf-8")
        except OSError:
            pass

    def load_checks(self, key: str) -> dict | None:
        return self.load_record("checks", key)

    def store_checks(self, key: str, record: dict) -> None:
        self.store_record("checks", key, record)


def _canonical(record: dict) -> bytes:
    return json.dumps(record, ensure_ascii=True, sort_keys=True, separators=(",", ":")).encode()


def checks_key(payload_sha256: str, *, rescore: bool, device: str, weights_dir) -> str:
    """What the cached stages' outcome depends on, beyond the payload: see the module docstring."""
    from reconbench.image.metrics.weights import all_pinned, candidate_paths, weights_cache_dir

    weights = ",".join(f"{s.key}:{s.sha256[:16]}:{int(any(p.is_file() for p in candidate_paths(s, weights_dir)))}"
                       for s in all_pinned())
    parts = [FORMAT, payload_sha256, toolkit_key(), f"rescore={int(rescore)}", f"device={device}",
             f"weights_dir={weights_dir}", f"weights_cache={weights_cache_dir()}", weights, _override_registries()]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()


def _override_registries() -> str:
    """A registry file set in the environment replaces the packaged one: its content is part of the key."""
    out = []
    for env in ("RECONBENCH_REGISTRY", "RECONBENCH_TEXT_REGISTRY"):
        path = os.environ.get(env)
        if path:
            try:
                out.append(f"{env}={hashlib.sha256(Path(path).read_bytes()).hexdigest()}")
            except OSError:
                out.append(f"{env}=unreadable:{path}")
    return ";".join(out)


def near_key(mine_sha256: str, earlier: list[tuple[str, bool]], thresholds, share: float) -> str:
    """Key of a near-duplicate answer: see the module docstring (earlier: (sha256, readable) in order)."""
    h = hashlib.sha256()
    h.update("|".join([FORMAT, "near", feature_key(), json.dumps(thresholds.to_dict(), sort_keys=True), repr(share),
                       mine_sha256]).encode())
    for sha, readable in earlier:
        h.update(b"\0" + sha.encode() + (b"1" if readable else b"0"))
    return h.hexdigest()
