"""reconbench.core.hub against a real Hub-compatible server over a socket (tests/hubserver.py)."""

import hashlib
import os
import socket
import time
from pathlib import Path

import pytest
from huggingface_hub import constants

from reconbench.core.hub import HubError, download_pinned, download_snapshot, publish_folder
from reconbench.core.io import sha256_file

REPO = "reconbench/target"
DATA = bytes(range(256)) * 64


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def gets(server) -> list[str]:
    return [p for m, p in server.requests if m == "GET" and "/resolve/" in p]


def cache_blobs(repo_type="model", repo_id=REPO) -> list[Path]:
    folder = Path(os.environ["HF_HUB_CACHE"]) / f"{repo_type}s--{repo_id.replace('/', '--')}" / "blobs"
    return [p for p in folder.glob("*") if not p.name.endswith(".lock")] if folder.exists() else []


def test_sha256_file(tmp_path):
    (tmp_path / "f").write_bytes(DATA)
    assert sha256_file(tmp_path / "f") == sha(DATA)


def test_pinned_download(hub_server):
    rev = hub_server.add_file(REPO, "weights/model.bin", DATA)
    path = download_pinned(REPO, "weights/model.bin", revision=rev, sha256=sha(DATA))
    assert path.read_bytes() == DATA
    assert rev in path.parts  # lives in the snapshot of that very commit


def test_dataset_repo_and_older_revision_stays_served(hub_server):
    old = hub_server.add_file(REPO, "x.npy", b"old", repo_type="dataset")
    new = hub_server.add_file(REPO, "x.npy", b"new", repo_type="dataset")
    assert old != new
    assert download_pinned(REPO, "x.npy", revision=old, sha256=sha(b"old"), repo_type="dataset").read_bytes() == b"old"
    assert download_pinned(REPO, "x.npy", revision=new, sha256=sha(b"new"), repo_type="dataset").read_bytes() == b"new"


def test_wrong_hash_raises_and_removes_the_file(hub_server):
    rev = hub_server.add_file(REPO, "model.bin", DATA)
    wrong = "0" * 64
    with pytest.raises(HubError) as err:
        download_pinned(REPO, "model.bin", revision=rev, sha256=wrong)
    msg = str(err.value)
    assert "model.bin" in msg and wrong in msg and sha(DATA) in msg and "\n" not in msg
    assert cache_blobs() == []
    # the next call downloads again (and succeeds with the right hash)
    n = len(gets(hub_server))
    assert download_pinned(REPO, "model.bin", revision=rev, sha256=sha(DATA)).read_bytes() == DATA
    assert len(gets(hub_server)) == n + 1


def test_changed_byte_on_the_server_is_caught(hub_server):
    rev = hub_server.add_file(REPO, "model.bin", DATA)
    hub_server.corrupt(REPO, "model.bin")
    with pytest.raises(HubError, match="sha256 mismatch"):
        download_pinned(REPO, "model.bin", revision=rev, sha256=sha(DATA))
    assert cache_blobs() == []


def test_corrupt_cache_is_fetched_again(hub_server):
    rev = hub_server.add_file(REPO, "model.bin", DATA)
    path = download_pinned(REPO, "model.bin", revision=rev, sha256=sha(DATA))
    blob = Path(os.path.realpath(path))
    blob.chmod(0o644)
    blob.write_bytes(b"tampered")
    assert download_pinned(REPO, "model.bin", revision=rev, sha256=sha(DATA)).read_bytes() == DATA


def test_missing_file(hub_server):
    rev = hub_server.add_file(REPO, "model.bin", DATA)
    with pytest.raises(HubError, match=r"nope\.bin: file not found"):
        download_pinned(REPO, "nope.bin", revision=rev, sha256=sha(DATA))


def test_missing_repo(hub_server):
    with pytest.raises(HubError, match=r"reconbench/absent.*repository not found"):
        download_pinned("reconbench/absent", "model.bin", revision="a" * 40, sha256=sha(DATA))
    with pytest.raises(HubError, match=r"reconbench/absent.*repository not found"):
        download_snapshot("reconbench/absent", revision="a" * 40, files={"model.bin": sha(DATA)})


def test_missing_revision_and_unpinned_revision(hub_server):
    hub_server.add_file(REPO, "model.bin", DATA)
    with pytest.raises(HubError, match="revision not found"):
        download_pinned(REPO, "model.bin", revision="b" * 40, sha256=sha(DATA))
    with pytest.raises(HubError, match="40-hex commit"):
        download_pinned(REPO, "model.bin", revision="main", sha256=sha(DATA))


def test_server_down_fails_fast(hub_server):
    rev = hub_server.add_file(REPO, "model.bin", DATA)
    hub_server.stop()
    for call in (lambda: download_pinned(REPO, "model.bin", revision=rev, sha256=sha(DATA)),
                 lambda: download_snapshot(REPO, revision=rev, files={"model.bin": sha(DATA)})):
        t0 = time.monotonic()
        with pytest.raises(HubError, match="cannot reach the Hub"):
            call()
        assert time.monotonic() - t0 < 10


def test_silent_server_times_out(monkeypatch, hub_server):
    # A socket that accepts connections but never answers.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    url = f"http://127.0.0.1:{silent.getsockname()[1]}"
    try:
        t0 = time.monotonic()
        with pytest.raises(HubError, match="did not answer within 1"):
            download_pinned(REPO, "model.bin", revision="c" * 40, sha256=sha(DATA), endpoint=url, timeout=1)
        assert time.monotonic() - t0 < 5
    finally:
        silent.close()


def test_offline_reuse_from_cache(hub_server, monkeypatch):
    rev = hub_server.add_file(REPO, "model.bin", DATA)
    first = download_pinned(REPO, "model.bin", revision=rev, sha256=sha(DATA))
    snap = download_snapshot(REPO, revision=rev, files={"model.bin": sha(DATA)})
    n = len(hub_server.requests)
    # still "online", server up: no request at all for a cached, matching file
    assert download_pinned(REPO, "model.bin", revision=rev, sha256=sha(DATA)) == first
    assert download_snapshot(REPO, revision=rev, files={"model.bin": sha(DATA)}) == snap
    assert len(hub_server.requests) == n
    hub_server.stop()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # after import: read at call time by reconbench.core.hub
    assert download_pinned(REPO, "model.bin", revision=rev, sha256=sha(DATA)) == first
    assert download_snapshot(REPO, revision=rev, files={"model.bin": sha(DATA)}) == snap
    with pytest.raises(HubError, match="HF_HUB_OFFLINE"):
        download_pinned(REPO, "other.bin", revision=rev, sha256=sha(DATA))


def test_offline_by_default_without_the_server():
    assert os.environ["HF_HUB_OFFLINE"] == "1" and constants.HF_HUB_OFFLINE
    t0 = time.monotonic()
    with pytest.raises(HubError, match="not in the local cache"):
        download_pinned(REPO, "model.bin", revision="d" * 40, sha256=sha(DATA))
    assert time.monotonic() - t0 < 2


def test_snapshot_with_hashes(hub_server):
    files = {"config.json": b"{}", "weights/a.bin": DATA, "unlisted.txt": b"x"}
    rev = hub_server.add_files(REPO, files)
    pins = {"config.json": sha(b"{}"), "weights/a.bin": sha(DATA)}
    folder = download_snapshot(REPO, revision=rev, files=pins)
    assert (folder / "weights/a.bin").read_bytes() == DATA and (folder / "config.json").read_bytes() == b"{}"
    assert not (folder / "unlisted.txt").exists()  # only pinned files are fetched
    whole = download_snapshot(REPO, revision=rev)
    assert (whole / "unlisted.txt").read_bytes() == b"x"


def test_snapshot_bad_hash_and_missing_file(hub_server):
    rev = hub_server.add_files(REPO, {"a.bin": DATA, "b.bin": b"b"})
    with pytest.raises(HubError, match=r"a\.bin: sha256 mismatch"):
        download_snapshot(REPO, revision=rev, files={"a.bin": "f" * 64, "b.bin": sha(b"b")})
    assert download_snapshot(REPO, revision=rev, files={"a.bin": sha(DATA)}).joinpath("a.bin").read_bytes() == DATA
    with pytest.raises(HubError, match=r"c\.bin: file not found"):
        download_snapshot(REPO, revision=rev, files={"c.bin": sha(DATA)})


def test_publish_folder_round_trip(hub_server, tmp_path):
    src = tmp_path / "publish"
    (src / "sub").mkdir(parents=True)
    payload = {"model.safetensors": os.urandom(50_000), "config.json": b'{"arch": "convnet"}',
               "sub/notes.txt": b"hello"}
    for name, data in payload.items():
        (src / name).write_bytes(data)
    rev = publish_folder(src, "reconbench/published", commit_message="publish convnet")
    assert len(rev) == 40 and all(c in "0123456789abcdef" for c in rev)
    for name, data in payload.items():
        got = download_pinned("reconbench/published", name, revision=rev, sha256=sha(data))
        assert got.read_bytes() == data
    # a second publish makes a new immutable revision; the first still serves the old bytes
    (src / "config.json").write_bytes(b"{}")
    rev2 = publish_folder(src, "reconbench/published", commit_message="update config")
    assert rev2 != rev
    got = download_pinned("reconbench/published", "config.json", revision=rev2, sha256=sha(b"{}"))
    assert got.read_bytes() == b"{}"
    assert download_pinned("reconbench/published", "config.json", revision=rev,
                           sha256=sha(payload["config.json"])).read_bytes() == payload["config.json"]


def test_failing_server_is_not_retried(hub_server):
    rev = hub_server.add_file(REPO, "model.bin", DATA)
    hub_server.outage(503)
    for call in (lambda: download_pinned(REPO, "model.bin", revision=rev, sha256=sha(DATA)),
                 lambda: download_snapshot(REPO, revision=rev, files={"model.bin": sha(DATA)})):
        hub_server.requests.clear()
        t0 = time.monotonic()
        with pytest.raises(HubError, match="HTTP 503"):
            call()
        assert time.monotonic() - t0 < 5 and len(hub_server.requests) == 1


def test_invalid_repo_id_is_a_hub_error(hub_server):
    with pytest.raises(HubError, match="invalid request"):
        download_pinned("not a/valid id!", "model.bin", revision="e" * 40, sha256=sha(DATA))


def test_publish_to_a_stopped_server_fails_fast(hub_server, tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "a.bin").write_bytes(DATA)
    hub_server.stop()
    t0 = time.monotonic()
    with pytest.raises(HubError, match="cannot reach the Hub"):
        publish_folder(tmp_path / "m", "reconbench/published", commit_message="x")
    assert time.monotonic() - t0 < 10
