"""A small Hub-compatible HTTP server for tests (stdlib only, 127.0.0.1, random port).

It answers the endpoints huggingface_hub 2.4 calls for hf_hub_download, snapshot_download,
create_repo and upload_folder/create_commit. Every commit is immutable and named by a git-like
sha1 of its content; `main` points to the newest. The preupload endpoint answers "regular" for
every file, so uploads always come inline (base64 in the NDJSON commit body): no LFS, no Xet.

On disk, under `root/<type>s/<owner>/<name>/`:
  objects/<git blob sha1>     file contents (corrupt() flips a byte here, in place)
  commits/<commit sha>.json   {"parent", "message", "files": {path: blob sha1}}
  refs/main                   commit sha
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

TYPES = {"models": "model", "datasets": "dataset", "spaces": "space"}
PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}
_SHA = re.compile(r"[0-9a-f]{40}")
_REPO_ID = re.compile(r"[\w.-]+/[\w.-]+")


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class HubError404(Exception):
    def __init__(self, code: str, message: str, commit: str | None = None):
        super().__init__(message)
        self.code, self.commit = code, commit


class HubStore:
    """Repos on disk; all writes go through one lock (the server is threaded)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.lock = threading.Lock()

    def repo_dir(self, repo_type: str, repo_id: str) -> Path:
        if not _REPO_ID.fullmatch(repo_id) or ".." in repo_id:  # ids become paths: stay inside root
            raise HubError404("RepoNotFound", f"Repository {repo_id} not found")
        return self.root / f"{repo_type}s" / repo_id

    def exists(self, repo_type: str, repo_id: str) -> bool:
        return (self.repo_dir(repo_type, repo_id) / "refs" / "main").is_file()

    def create(self, repo_type: str, repo_id: str) -> bool:
        """Create with an empty initial commit (as the Hub does); False if it already exists."""
        with self.lock:
            if self.exists(repo_type, repo_id):
                return False
            self._commit(repo_type, repo_id, {}, [], "initial commit", parent=None)
            return True

    def resolve(self, repo_type: str, repo_id: str, revision: str) -> str:
        d = self.repo_dir(repo_type, repo_id)
        if not self.exists(repo_type, repo_id):
            raise HubError404("RepoNotFound", f"Repository {repo_id} not found")
        ref = d / "refs" / revision
        if re.fullmatch(r"[\w.-]+", revision) and ref.is_file():
            return ref.read_text().strip()
        if _SHA.fullmatch(revision) and (d / "commits" / f"{revision}.json").is_file():
            return revision
        raise HubError404("RevisionNotFound", f"Invalid rev id: {revision}")

    def files(self, repo_type: str, repo_id: str, commit: str) -> dict[str, str]:
        meta = self.repo_dir(repo_type, repo_id) / "commits" / f"{commit}.json"
        return json.loads(meta.read_text())["files"]

    def blob(self, repo_type: str, repo_id: str, oid: str) -> Path:
        return self.repo_dir(repo_type, repo_id) / "objects" / oid

    def commit(self, repo_type, repo_id, adds: dict[str, bytes], deletes, message, revision="main") -> str:
        with self.lock:
            parent = self.resolve(repo_type, repo_id, revision)
            return self._commit(repo_type, repo_id, adds, deletes, message, parent)

    def _commit(self, repo_type, repo_id, adds, deletes, message, parent) -> str:
        d = self.repo_dir(repo_type, repo_id)
        files = dict(self.files(repo_type, repo_id, parent)) if parent else {}
        for path in deletes:  # a file, or a folder given with a trailing "/"
            files = {p: o for p, o in files.items() if p != path and not p.startswith(path.rstrip("/") + "/")}
        (d / "objects").mkdir(parents=True, exist_ok=True)
        for path, data in adds.items():
            oid = git_blob_sha1(data)
            if not (d / "objects" / oid).exists():
                (d / "objects" / oid).write_bytes(data)
            files[path] = oid
        # git-like: the name is the sha1 of what the commit holds (tree, parent, message).
        body = json.dumps({"parent": parent, "message": message, "files": dict(sorted(files.items()))})
        sha = hashlib.sha1(b"commit %d\0" % len(body) + body.encode()).hexdigest()
        (d / "commits").mkdir(exist_ok=True)
        (d / "commits" / f"{sha}.json").write_text(body)
        (d / "refs").mkdir(exist_ok=True)
        (d / "refs" / "main").write_text(sha)
        return sha


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"
    protocol_version = "HTTP/1.0"  # one request per connection: nothing pooled survives stop()

    def log_message(self, *args):  # keep pytest output clean
        pass

    # ---- plumbing
    def _send(self, status: int, body: bytes = b"", headers: dict | None = None, ctype="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, obj, status=200, headers=None):
        self._send(status, json.dumps(obj).encode(), headers)

    def _error(self, e: HubError404):
        headers = {"X-Error-Code": e.code, "X-Error-Message": str(e)}
        if e.commit:
            headers["X-Repo-Commit"] = e.commit
        self._json({"error": str(e)}, 404, headers)

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while (size := int(self.rfile.readline().strip() or b"0", 16)) > 0:
                out += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
            return out
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _dispatch(self):
        url = urlsplit(self.path)
        self.server.requests.append((self.command, url.path))
        if self.server.outage:  # simulate a Hub that is up but failing (e.g. 503)
            return self._json({"error": "outage"}, self.server.outage)
        store = self.server.store
        try:
            if url.path.startswith("/api/"):
                self._api(store, url.path[len("/api/"):], parse_qs(url.query))
            elif "/resolve/" in url.path and self.command in ("GET", "HEAD"):
                self._resolve(store, url.path.lstrip("/"))
            else:
                self._json({"error": "not found"}, 404)
        except HubError404 as e:
            self._error(e)

    do_GET = do_HEAD = do_POST = _dispatch

    # ---- /{prefix}{repo_id}/resolve/{rev}/{path}
    def _resolve(self, store: HubStore, path: str):
        left, _, right = path.partition("/resolve/")
        repo_type = "model"
        for plural, singular in TYPES.items():
            if left.startswith(plural + "/"):
                repo_type, left = singular, left[len(plural) + 1:]
        rev, _, filename = right.partition("/")
        repo_id, rev, filename = unquote(left), unquote(rev), unquote(filename)
        commit = store.resolve(repo_type, repo_id, rev)
        oid = store.files(repo_type, repo_id, commit).get(filename)
        if oid is None:
            raise HubError404("EntryNotFound", f"{filename} does not exist at {rev}", commit)
        data = store.blob(repo_type, repo_id, oid).read_bytes()
        self._send(200, data, {"X-Repo-Commit": commit, "ETag": f'"{oid}"'}, "application/octet-stream")

    # ---- /api/...
    def _api(self, store: HubStore, rest: str, query: dict):
        if rest == "repos/create" and self.command == "POST":
            p = json.loads(self._body())
            repo_type = p.get("type") or "model"
            repo_id = f"{p['organization'] or 'user'}/{p['name']}"
            url = f"{self.server.url}/{PREFIX[repo_type]}{repo_id}"
            if not store.create(repo_type, repo_id):
                return self._json({"error": "You already created this repo", "url": url}, 409)
            return self._json({"url": url, "name": repo_id})
        if rest == "validate-yaml" and self.command == "POST":
            self._body()
            return self._json({"errors": [], "warnings": []})
        plural, _, rest = rest.partition("/")
        if plural not in TYPES:
            return self._json({"error": "not found"}, 404)
        repo_type = TYPES[plural]
        parts = [unquote(s) for s in rest.split("/")]
        repo_id, action, args = "/".join(parts[:2]), (parts[2:3] or ["info"])[0], parts[3:]
        if action == "info":
            action, args = "revision", ["main"]
        if not args:
            return self._json({"error": "not found"}, 404)
        commit = store.resolve(repo_type, repo_id, args[0])
        if action == "revision" and self.command == "GET":
            files = store.files(repo_type, repo_id, commit)
            return self._json({"id": repo_id, "sha": commit, "private": False,
                               "siblings": [{"rfilename": f} for f in files]})
        if action == "tree" and self.command == "GET":
            return self._json(self._tree(store, repo_type, repo_id, commit, "/".join(args[1:]), query))
        if action == "preupload" and self.command == "POST":
            files = store.files(repo_type, repo_id, commit)
            asked = json.loads(self._body())["files"]
            return self._json({"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False,
                                          "oid": files.get(f["path"])} for f in asked]})
        if action == "commit" and self.command == "POST":
            return self._commit(store, repo_type, repo_id, args[0])
        self._json({"error": "not found"}, 404)

    def _tree(self, store, repo_type, repo_id, commit, folder, query):
        recursive = query.get("recursive", ["False"])[0].lower() in ("1", "true")
        base = folder.strip("/") + "/" if folder.strip("/") else ""
        out, dirs = [], set()
        for path, oid in sorted(store.files(repo_type, repo_id, commit).items()):
            if not path.startswith(base):
                continue
            sub = path[len(base):]
            if "/" in sub and not recursive:
                dirs.add(base + sub.split("/")[0])
                continue
            size = store.blob(repo_type, repo_id, oid).stat().st_size
            out.append({"type": "file", "oid": oid, "size": size, "path": path})
        if base and not out and not dirs:
            raise HubError404("EntryNotFound", f"{folder} does not exist", commit)
        return [{"type": "directory", "oid": "0" * 40, "path": d} for d in sorted(dirs)] + out

    def _commit(self, store, repo_type, repo_id, revision):
        lines = [json.loads(line) for line in self._body().splitlines() if line.strip()]
        header = next(x["value"] for x in lines if x["key"] == "header")
        adds, deletes = {}, []
        for x in lines:
            v = x["value"]
            if x["key"] == "file":
                adds[v["path"]] = base64.b64decode(v["content"])
            elif x["key"] in ("deletedFile", "deletedFolder"):
                deletes.append(v["path"] + ("/" if x["key"] == "deletedFolder" else ""))
            elif x["key"] != "header":  # lfsFile etc.: never asked for, see preupload
                return self._json({"error": f"unsupported operation {x['key']}"}, 400)
        sha = store.commit(repo_type, repo_id, adds, deletes, header["summary"], revision)
        url = f"{self.server.url}/{PREFIX[repo_type]}{repo_id}/commit/{sha}"
        self._json({"commitUrl": url, "commitOid": sha, "pullRequestUrl": None, "success": True})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    store: HubStore
    url: str
    requests: list
    outage: int = 0


class HubServer:
    """What tests get: `.url`, `.add_file(s)`, `.corrupt`, `.outage`, `.stop`, `.requests` [(method, path)]."""

    def __init__(self, root: str | Path):
        self.store = HubStore(Path(root))
        self._srv = _Server(("127.0.0.1", 0), _Handler)
        self._srv.store, self._srv.requests = self.store, []
        self.url = self._srv.url = f"http://127.0.0.1:{self._srv.server_address[1]}"
        self._thread = threading.Thread(target=self._srv.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        self._stopped = False

    @property
    def requests(self) -> list[tuple[str, str]]:
        return self._srv.requests

    def add_files(self, repo_id: str, files: dict[str, bytes], *, repo_type: str = "model",
                  message: str = "add files") -> str:
        """Commit files (creating the repo if needed); returns the new commit sha."""
        self.store.create(repo_type, repo_id)
        return self.store.commit(repo_type, repo_id, files, [], message)

    def add_file(self, repo_id: str, path: str, data: bytes, *, repo_type: str = "model") -> str:
        return self.add_files(repo_id, {path: data}, repo_type=repo_type, message=f"add {path}")

    def corrupt(self, repo_id: str, path: str, *, repo_type: str = "model", revision: str = "main") -> None:
        """Flip one byte of a served file in place; its ETag and size stay as committed."""
        commit = self.store.resolve(repo_type, repo_id, revision)
        blob = self.store.blob(repo_type, repo_id, self.store.files(repo_type, repo_id, commit)[path])
        data = bytearray(blob.read_bytes())
        data[len(data) // 2] ^= 0xFF
        blob.write_bytes(bytes(data))

    def outage(self, status: int = 503) -> None:
        """Answer every request with this HTTP status from now on (0 to recover)."""
        self._srv.outage = status

    def stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            self._srv.shutdown()
            self._srv.server_close()
            self._thread.join(timeout=5)


def point_huggingface_hub_at(monkeypatch, *, endpoint: str, offline: bool, home: Path, token: str | None = None):
    """Set the HF_* environment AND huggingface_hub.constants, which copies it at import time."""
    from huggingface_hub import constants

    home = Path(home)
    env = {"HF_ENDPOINT": endpoint, "HF_HUB_OFFLINE": "1" if offline else "0", "HF_HOME": str(home),
           "HF_HUB_CACHE": str(home / "hub"), "HF_HUB_DISABLE_TELEMETRY": "1",
           "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    for k in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(k, raising=False)
    if token:
        monkeypatch.setenv("HF_TOKEN", token)
    template = endpoint + "/{repo_id}/resolve/{revision}/{filename}"
    patches = {"ENDPOINT": endpoint, "HUGGINGFACE_CO_URL_TEMPLATE": template,
               "HF_HUB_OFFLINE": offline, "HF_HOME": str(home), "HF_HUB_CACHE": str(home / "hub"),
               "HF_TOKEN_PATH": str(home / "token"), "HF_STORED_TOKENS_PATH": str(home / "stored_tokens"),
               "HF_HUB_DISABLE_TELEMETRY": True, "HF_HUB_DISABLE_PROGRESS_BARS": True}
    for k, v in patches.items():
        monkeypatch.setattr(constants, k, v)


@contextlib.contextmanager
def serving(tmp_path: Path, monkeypatch):
    """Start a server on a fresh root and point huggingface_hub at it, online, with a fresh cache."""
    server = HubServer(tmp_path / "hub-server")
    point_huggingface_hub_at(monkeypatch, endpoint=server.url, offline=False, home=tmp_path / "hf-home",
                             token="hf_" + "x" * 34)
    try:
        yield server
    finally:
        server.stop()
