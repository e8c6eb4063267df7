"""Pinned, hash-checked downloads from the Hugging Face Hub, and publishing (thin layer over huggingface_hub).

Every download is pinned to a commit sha and checked against a sha256 before it is used. A file
already in the cache at that commit is checked and returned with no network call at all, so the
toolkit works offline once the cache is filled.

huggingface_hub copies HF_ENDPOINT / HF_HUB_OFFLINE / HF_HOME into `huggingface_hub.constants`
at import time; we read the environment at call time and pass `endpoint=` and `cache_dir=`
explicitly, so changing the environment after import still takes effect.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
from pathlib import Path

import httpx2
from huggingface_hub import HfApi, constants, get_hf_file_metadata, hf_hub_download, hf_hub_url, snapshot_download
from huggingface_hub.errors import (
    EntryNotFoundError,
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from reconbench.core.io import sha256_file

__all__ = ["HubError", "download_pinned", "download_snapshot", "resolve_commit", "download_at_commit",
           "create_repo", "upload_folder", "publish_folder"]

# Seconds to wait for the Hub to answer one request. We make a single, retry-free metadata call
# before handing over to huggingface_hub, whose own retries would take ~23 s on a dead server.
DEFAULT_TIMEOUT_S = 10.0
_COMMIT = re.compile(r"[0-9a-f]{40}")
_SHA256 = re.compile(r"[0-9a-f]{64}")


class HubError(Exception):
    """A Hub download or upload failed; the message names the repo, the file and the problem."""


# ---------------------------------------------------------------- settings, read at call time

def _endpoint(endpoint: str | None) -> str:
    return (endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def _cache_dir(cache_dir: str | Path | None) -> str:
    if cache_dir is not None:
        return str(cache_dir)
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return os.path.join(os.environ["HF_HOME"], "hub")
    return constants.HF_HUB_CACHE


def _offline() -> bool:
    # Either says offline => offline (huggingface_hub itself blocks requests when its constant is set).
    env = os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "ON", "YES", "TRUE"}
    return env or constants.is_offline_mode()


def _where(repo_id: str, repo_type: str, revision: str | None, filename: str | None = None) -> str:
    at = f"@{revision}" if revision else ""
    return f"{repo_type} {repo_id}{at}" + (f": {filename}" if filename else "")


@contextlib.contextmanager
def _hub_errors(where: str, endpoint: str, timeout: float | None = None):
    """Turn huggingface_hub / network failures into one-line HubErrors."""
    try:
        yield
    except HubError:
        raise
    except GatedRepoError:
        raise HubError(f"{where}: access denied (gated repository)") from None
    except RepositoryNotFoundError:
        raise HubError(f"{where}: repository not found on {endpoint} (or no access)") from None
    except RevisionNotFoundError:
        raise HubError(f"{where}: revision not found on {endpoint}") from None
    except (LocalEntryNotFoundError, OfflineModeIsEnabled):
        raise HubError(f"{where}: not in the local cache, and the Hub is offline or unreachable") from None
    except EntryNotFoundError:
        raise HubError(f"{where}: file not found in the repository at that revision") from None
    except HfHubHTTPError as e:
        status = e.response.status_code if e.response is not None else "?"
        raise HubError(f"{where}: Hub answered HTTP {status} ({endpoint})") from None
    except httpx2.TimeoutException:
        raise HubError(f"{where}: Hub at {endpoint} did not answer within {timeout} s") from None
    except (httpx2.HTTPError, ConnectionError) as e:
        raise HubError(f"{where}: cannot reach the Hub at {endpoint} ({_first_line(e)})") from None
    except ValueError as e:  # HFValidationError (bad repo id), bad repo type, ...
        raise HubError(f"{where}: invalid request ({_first_line(e)})") from None
    except OSError as e:  # FileMetadataError, size "consistency check", cache not writable, ...
        raise HubError(f"{where}: download failed ({_first_line(e)})") from None


def _first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}"


def _check_pins(where: str, revision: str, hashes: dict[str, str]) -> dict[str, str]:
    if not _COMMIT.fullmatch(revision or ""):
        raise HubError(f"{where}: revision must be a full 40-hex commit sha, got {revision!r}")
    out = {}
    for name, digest in hashes.items():
        if not _SHA256.fullmatch((digest or "").lower()):
            raise HubError(f"{where}: {name}: expected sha256 must be 64 hex characters, got {digest!r}")
        out[name] = digest.lower()
    return out


def _purge(path: Path) -> None:
    """Drop a cached file so the next call fetches it again: the snapshot symlink, the blob it points
    to, and whatever that blob links to in turn (a shared blob store); a plain copy without symlinks."""
    p = Path(path)
    for _ in range(8):  # a short chain of links; never loop forever
        nxt = p.parent / os.readlink(p) if p.is_symlink() else None
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
        if nxt is None:
            break
        p = nxt


def _verify(path: Path, expected: str, where: str) -> None:
    """Raise HubError (after purging the file from the cache) when its sha256 is not the pinned one."""
    actual = sha256_file(path)
    if actual != expected:
        _purge(path)
        raise HubError(f"{where}: sha256 mismatch, expected {expected}, got {actual}; removed from the cache")


# ---------------------------------------------------------------- downloads

def download_pinned(repo_id: str, filename: str, *, revision: str, sha256: str, repo_type: str = "model",
                    cache_dir: str | Path | None = None, endpoint: str | None = None,
                    token: str | bool | None = None, timeout: float = DEFAULT_TIMEOUT_S) -> Path:
    """Local path of `filename` at commit `revision` of a Hub repo, checked against `sha256`.

    A cached copy that matches is returned without any network call; a cached copy that does not
    match is removed and fetched again. Raises HubError on any failure.
    """
    where = _where(repo_id, repo_type, revision, filename)
    expected = _check_pins(where, revision, {filename: sha256})[filename]
    endpoint, cache_dir = _endpoint(endpoint), _cache_dir(cache_dir)
    kw = dict(repo_id=repo_id, filename=filename, revision=revision, repo_type=repo_type,
              cache_dir=cache_dir, endpoint=endpoint, token=token)

    with _hub_errors(where, endpoint), contextlib.suppress(LocalEntryNotFoundError, FileNotFoundError):
        cached = Path(hf_hub_download(**kw, local_files_only=True))
        if sha256_file(cached) == expected:
            return cached
        _purge(cached)  # corrupted cache: fetch it again below
    if _offline():
        raise HubError(f"{where}: not in the local cache (or corrupt there), and HF_HUB_OFFLINE is set")

    with _hub_errors(where, endpoint, timeout):
        # One HEAD, no retries: a dead or missing server/repo/file fails here, fast.
        get_hf_file_metadata(hf_hub_url(repo_id, filename, repo_type=repo_type, revision=revision,
                                        endpoint=endpoint), token=token, timeout=timeout, endpoint=endpoint)
        path = Path(hf_hub_download(**kw, etag_timeout=timeout))
    _verify(path, expected, where)
    return path


def download_snapshot(repo_id: str, *, revision: str, files: dict[str, str] | None = None,
                      repo_type: str = "model", cache_dir: str | Path | None = None,
                      endpoint: str | None = None, token: str | bool | None = None,
                      timeout: float = DEFAULT_TIMEOUT_S) -> Path:
    """Local folder of a repo at commit `revision`.

    `files` maps filename -> sha256: when given, only those files are fetched and each is
    checked (nothing unchecked is fetched); when None, the whole snapshot is fetched, pinned by
    revision only. Cached, matching snapshots are returned without any network call.
    """
    where = _where(repo_id, repo_type, revision)
    expected = _check_pins(where, revision, files or {})
    endpoint, cache_dir = _endpoint(endpoint), _cache_dir(cache_dir)
    kw = dict(repo_id=repo_id, revision=revision, repo_type=repo_type, cache_dir=cache_dir,
              endpoint=endpoint, token=token,
              allow_patterns=[glob.escape(f) for f in expected] if files is not None else None)

    def all_ok(folder: Path) -> bool:
        return all((folder / f).is_file() and sha256_file(folder / f) == h for f, h in expected.items())

    with _hub_errors(where, endpoint), contextlib.suppress(LocalEntryNotFoundError, FileNotFoundError):
        folder = Path(snapshot_download(**kw, local_files_only=True))
        if all_ok(folder):
            return folder
        for f, h in expected.items():  # drop the bad ones, keep the good ones
            if (folder / f).exists() and sha256_file(folder / f) != h:
                _purge(folder / f)
    if _offline():
        raise HubError(f"{where}: snapshot not complete in the local cache, and HF_HUB_OFFLINE is set")

    with _hub_errors(where, endpoint, timeout):
        # One GET, no retries (listing the tree would retry for ~23 s on a dead server).
        HfApi(endpoint=endpoint).repo_info(repo_id, repo_type=repo_type, revision=revision, token=token,
                                           timeout=timeout)
        folder = Path(snapshot_download(**kw, etag_timeout=timeout))
    for f, h in expected.items():
        if not (folder / f).is_file():
            raise HubError(f"{_where(repo_id, repo_type, revision, f)}: file not found in the snapshot")
        _verify(folder / f, h, _where(repo_id, repo_type, revision, f))
    return folder


def resolve_commit(repo_id: str, *, revision: str = "main", repo_type: str = "model",
                   endpoint: str | None = None, token: str | bool | None = None,
                   timeout: float = DEFAULT_TIMEOUT_S) -> str:
    """The commit sha a branch or tag points to now (a full sha is returned as it is, offline)."""
    if _COMMIT.fullmatch(revision):
        return revision
    where, endpoint = _where(repo_id, repo_type, revision), _endpoint(endpoint)
    if _offline():
        raise HubError(f"{where}: resolving a branch to a commit needs the Hub, and HF_HUB_OFFLINE is set")
    with _hub_errors(where, endpoint, timeout):
        sha = HfApi(endpoint=endpoint).repo_info(repo_id, repo_type=repo_type, revision=revision, token=token,
                                                 timeout=timeout).sha
    if not _COMMIT.fullmatch(sha or ""):
        raise HubError(f"{where}: the Hub did not name a commit for this revision")
    return sha


def download_at_commit(repo_id: str, filename: str, *, revision: str, sha256: str | None = None,
                       repo_type: str = "model", **kw) -> tuple[Path, str]:
    """(path, sha256) of a file at a commit. With `sha256` this is download_pinned. Without, the file is
    pinned by the commit only and its sha256 is returned for the caller to record (a maintainer's
    first fetch of a public source; everything that later reads it pins the hash)."""
    if sha256 is not None:
        path = download_pinned(repo_id, filename, revision=revision, sha256=sha256, repo_type=repo_type, **kw)
        return path, sha256.lower()
    where = _where(repo_id, repo_type, revision, filename)
    _check_pins(where, revision, {})
    endpoint, cache_dir = _endpoint(kw.get("endpoint")), _cache_dir(kw.get("cache_dir"))
    timeout = kw.get("timeout", DEFAULT_TIMEOUT_S)
    with _hub_errors(where, endpoint, timeout):
        path = Path(hf_hub_download(repo_id=repo_id, filename=filename, revision=revision, repo_type=repo_type,
                                    cache_dir=cache_dir, endpoint=endpoint, token=kw.get("token"),
                                    etag_timeout=timeout))
    return path, sha256_file(path)


# ---------------------------------------------------------------- publishing

def create_repo(repo_id: str, *, repo_type: str = "model", token: str | None = None, private: bool = False,
                exist_ok: bool = True, endpoint: str | None = None) -> str:
    """Create a Hub repo (fine if it exists); returns its URL."""
    endpoint = _endpoint(endpoint)
    with _hub_errors(_where(repo_id, repo_type, None), endpoint):
        return str(HfApi(endpoint=endpoint, token=token).create_repo(
            repo_id, repo_type=repo_type, private=private, exist_ok=exist_ok))


def upload_folder(folder: str | Path, repo_id: str, *, repo_type: str = "model", token: str | None = None,
                  commit_message: str, revision: str | None = None, endpoint: str | None = None) -> str:
    """Upload a folder's files to an existing repo in one go; returns the new commit sha."""
    endpoint = _endpoint(endpoint)
    with _hub_errors(_where(repo_id, repo_type, revision), endpoint):
        info = HfApi(endpoint=endpoint, token=token).upload_folder(
            repo_id=repo_id, folder_path=str(folder), repo_type=repo_type, revision=revision,
            commit_message=commit_message)
    return info.oid


def publish_folder(folder: str | Path, repo_id: str, *, repo_type: str = "model", token: str | None = None,
                   commit_message: str, endpoint: str | None = None) -> str:
    """Create the repo if needed and upload `folder`; returns the commit sha to pin in the registry."""
    if not Path(folder).is_dir():
        raise HubError(f"{_where(repo_id, repo_type, None)}: {folder} is not a folder")
    create_repo(repo_id, repo_type=repo_type, token=token, endpoint=endpoint)
    return upload_folder(folder, repo_id, repo_type=repo_type, token=token, commit_message=commit_message,
                         endpoint=endpoint)
