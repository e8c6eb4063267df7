"""Pinned backbone download (metrics/download.py) against a real HTTP server on 127.0.0.1.

The server serves stand-in .pth files (torch zip checkpoints of seeded random weights) under the
official file names, as a mirror would; the pins are replaced only through the test seam
(monkeypatching weights._PINNED). Each failure must give one clear error and leave nothing in
the cache; a second fetch after success makes no request; with the stand-ins in the cache the
default `recon-submit evaluate` reports FID, LPIPS and PRDC, and without them it names what is
missing and the command that fetches it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import http.server
import io
import json
import socket
import threading
import time

import pytest
import torch
from typer.testing import CliRunner

from reconbench.cli import app
from reconbench.image.metrics import weights
from reconbench.image.metrics.download import WeightsError, fetch
from reconbench.image.metrics.inception import standin_inception_state_dict
from reconbench.image.metrics.lpips_metric import standin_alexnet_state_dict

runner = CliRunner()


class Mirror(http.server.ThreadingHTTPServer):
    """files: name -> bytes; mode: name -> ok | short | cut | 404; requests: paths asked for."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), MirrorHandler)
        self.files: dict[str, bytes] = {}
        self.mode: dict[str, str] = {}
        self.requests: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/mirror"


class MirrorHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):
        name = self.path.removeprefix("/mirror/")
        self.server.requests.append(name)
        data, mode = self.server.files.get(name), self.server.mode.get(name, "ok")
        if data is None or mode == "404":
            self.send_error(404)
            return
        if mode == "short":
            data = data[:-100]  # a consistent but truncated response
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if mode == "cut":  # the server stops mid-file: half the bytes, then the connection closes
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(data)


def checkpoint_bytes(state: dict) -> bytes:
    buf = io.BytesIO()
    torch.save(state, buf)  # the official files' format: a torch zip checkpoint
    return buf.getvalue()


def pin(monkeypatch, key: str, data: bytes) -> weights.WeightSpec:
    """The test seam: pin the stand-in's size and sha256 under the official file name."""
    spec = dataclasses.replace(weights.pinned(key), size=len(data), sha256=hashlib.sha256(data).hexdigest())
    monkeypatch.setitem(weights._PINNED, key, spec)
    return spec


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    monkeypatch.setenv("RECONBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))  # no torch hub copy gets in the way
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    server = Mirror()
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    monkeypatch.setenv(weights.MIRROR_ENV, server.url)
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def small_checkpoint():
    return checkpoint_bytes({"features.0.weight": torch.randn(64, 3, 11, 11, generator=torch.Generator().manual_seed(0))})


def cache_files(tmp_path):
    folder = tmp_path / "cache" / "weights"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_fetch_checks_converts_and_second_fetch_makes_no_request(mirror, tmp_path, monkeypatch, small_checkpoint):
    spec = pin(monkeypatch, "alexnet", small_checkpoint)
    mirror.files[spec.filename] = small_checkpoint
    path, downloaded = fetch(spec)
    assert downloaded and mirror.requests == [spec.filename]
    assert cache_files(tmp_path) == [spec.safetensors_name]  # the .pth is gone, no temporary left
    assert weights.conversion_source(path) == spec.sha256
    loaded = weights.load_weights(spec)
    assert loaded.path == path and loaded.sha256 == spec.sha256
    expected = torch.load(io.BytesIO(small_checkpoint), weights_only=True)
    assert torch.equal(loaded.state_dict["features.0.weight"], expected["features.0.weight"])
    again, downloaded = fetch(spec)
    assert (again, downloaded) == (path, False) and mirror.requests == [spec.filename]  # no second request


@pytest.mark.parametrize("fault, message", [
    ("wrong-byte", "is not the pinned"),
    ("short", "bytes, the pin is"),
    ("cut", "transfer broken off"),
    ("404", "HTTP 404"),
    ("too-long", "more than the pinned"),
])
def test_each_fault_gives_one_error_and_leaves_nothing(mirror, tmp_path, monkeypatch, small_checkpoint, fault, message):
    spec = pin(monkeypatch, "alexnet", small_checkpoint)
    data = bytearray(small_checkpoint)
    if fault == "wrong-byte":
        data[len(data) // 2] ^= 1
    if fault == "too-long":
        data += b"\0" * 10
    mirror.files[spec.filename] = bytes(data)
    mirror.mode[spec.filename] = fault if fault in ("short", "cut", "404") else "ok"
    with pytest.raises(WeightsError) as err:
        fetch(spec, timeout=5)
    text = str(err.value)
    assert message in text and spec.filename in text and "\n" not in text
    assert cache_files(tmp_path) == []
    assert weights.load_weights(spec) is None


def test_dead_server_fails_within_a_second(tmp_path, monkeypatch, small_checkpoint):
    monkeypatch.setenv("RECONBENCH_CACHE", str(tmp_path / "cache"))
    with socket.socket() as s:  # a port that was just free: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = pin(monkeypatch, "alexnet", small_checkpoint)
    start = time.perf_counter()
    with pytest.raises(WeightsError, match="cannot connect"):
        fetch(spec, mirror=f"http://127.0.0.1:{port}")
    assert time.perf_counter() - start < 1.5
    assert cache_files(tmp_path) == []


def test_pinned_pickle_with_code_is_still_refused(mirror, tmp_path, monkeypatch):
    """Even a file whose digest the pin names is opened with weights_only=True: a pickle that would
    run code is refused, and nothing stays in the cache."""

    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    data = checkpoint_bytes({"x": Evil()})
    spec = pin(monkeypatch, "alexnet", data)
    mirror.files[spec.filename] = data
    with pytest.raises(WeightsError, match="not a torch checkpoint"):
        fetch(spec)
    assert cache_files(tmp_path) == []


def test_conversion_of_other_weights_is_never_used(mirror, tmp_path, monkeypatch, small_checkpoint):
    spec = pin(monkeypatch, "alexnet", small_checkpoint)
    mirror.files[spec.filename] = small_checkpoint
    fetch(spec)
    monkeypatch.setitem(weights._PINNED, "alexnet", dataclasses.replace(spec, sha256="0" * 64))  # the real pin moves on
    with pytest.warns(UserWarning, match="not converted from the pinned"):
        assert weights.load_weights(weights.pinned("alexnet")) is None


def test_cli_fetch_status_and_offline(mirror, tmp_path, monkeypatch, small_checkpoint):
    for key in ("inception", "alexnet"):
        spec = pin(monkeypatch, key, small_checkpoint + key.encode())  # two distinct files
        mirror.files[spec.filename] = small_checkpoint + key.encode()
    mirror.mode[weights.pinned("inception").filename] = "404"
    res = runner.invoke(app, ["weights", "fetch", "--quiet"])
    assert res.exit_code == 1 and "HTTP 404" in res.output and "Traceback" not in res.output
    assert cache_files(tmp_path) == []
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    res = runner.invoke(app, ["weights", "fetch", "--quiet"])
    assert res.exit_code == 1 and "HF_HUB_OFFLINE=1" in res.output and len(mirror.requests) == 1


def standin_files():
    """Real-architecture stand-ins: the whole FID Inception (float16, to halve the file) and
    AlexNet's feature layers (all LPIPS reads)."""
    inception = {k: v.half() if v.is_floating_point() else v for k, v in standin_inception_state_dict(0).items()}
    alexnet = {k: v for k, v in standin_alexnet_state_dict(0).items() if k.startswith("features.")}
    return {"inception": checkpoint_bytes(inception), "alexnet": checkpoint_bytes(alexnet)}


def test_default_evaluate_reports_fid_lpips_prdc_with_weights_and_names_them_without(mirror, tmp_path, monkeypatch, signing_key):
    args = ["evaluate", "--track", "digits-binary-mlp", "--attack", "mi-face", "--set", "iterations=5",
            "--key", str(signing_key), "--quiet"]
    files = standin_files()
    for key, data in files.items():
        mirror.files[pin(monkeypatch, key, data).filename] = data
    res = runner.invoke(app, [*args, "--offline", "--out", str(tmp_path / "offline")])
    assert res.exit_code == 0, res.output
    metrics = json.loads((tmp_path / "offline" / "result.json").read_text())["payload"]["metrics"]
    for name, key in [("fid", "inception"), ("prdc_recall", "inception"), ("lpips", "alexnet")]:
        note = metrics[name]["note"]
        assert metrics[name]["status"] == "not_computed" and weights.pinned(key).filename in note
        assert "`recon-submit weights fetch`" in note
    assert "recon-submit weights fetch" in res.output and mirror.requests == []  # --offline: no request

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # --offline set it for the rest of the (test) process
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "online")])  # first need: fetched from the mirror
    assert res.exit_code == 0, res.output
    assert sorted(mirror.requests) == sorted(weights.pinned(k).filename for k in files)
    payload = json.loads((tmp_path / "online" / "result.json").read_text())["payload"]
    for name in ("fid", "lpips", "prdc_precision", "prdc_recall", "prdc_density", "prdc_coverage"):
        assert payload["metrics"][name]["status"] == "computed", (name, payload["metrics"][name])
        assert payload["metrics"][name]["note"] is None  # pinned files, not caller-supplied weights
    assert cache_files(tmp_path) == sorted(weights.pinned(k).safetensors_name for k in files)
    res = runner.invoke(app, ["weights", "status"])
    assert res.exit_code == 0 and res.output.count("present") == 2 and weights.pinned("alexnet").sha256 in res.output


@pytest.mark.parametrize("workflow", ["validate.yml", "site.yml"])
def test_workflows_restore_the_weights_keyed_on_the_pins_and_fetch_on_a_miss(workflow):
    import yaml
    from pathlib import Path

    steps = yaml.safe_load((Path(__file__).parents[1] / ".github" / "workflows" / workflow).read_text())["jobs"]
    steps = next(job for job in steps.values() if any("weights" in s.get("name", "") for s in job["steps"]))["steps"]
    names = [s.get("id") for s in steps]
    pins, cache, fetch_step = steps[names.index("pins")], steps[names.index("weights")], steps[names.index("weights") + 1]
    assert "weights status --cache-key" in pins["run"]
    assert cache["uses"].startswith("actions/cache@") and cache["with"]["key"] == "${{ steps.pins.outputs.key }}"
    assert fetch_step["if"] == "steps.weights.outputs.cache-hit != 'true'" and "weights fetch" in fetch_step["run"]
    key = weights.cache_key()  # the key names every pinned digest
    assert all(spec.sha256[:16] in key for spec in weights.all_pinned())
    # re-scoring and the site build come after the weights are in place
    later = " ".join(s.get("run", "") for s in steps[names.index("weights") + 2:])
    assert "mkdocs build" in later


def test_a_failed_download_on_first_need_is_tried_once_per_process(mirror, tmp_path, monkeypatch, small_checkpoint):
    from reconbench.image.metrics import score
    from reconbench.image.metrics.testdata import digits

    spec = pin(monkeypatch, "alexnet", small_checkpoint + b"once")
    mirror.files[spec.filename] = small_checkpoint + b"once"
    mirror.mode[spec.filename] = "404"
    x, y = digits()
    for _ in range(2):  # e.g. validate re-scoring several entries
        report = score(x[:5], y[:5], x[:5], y[:5], fid=False)
        note = report.metrics["lpips"].note
        assert report.metrics["lpips"].status == "not_computed" and "HTTP 404" in note and "weights fetch" in note
    assert mirror.requests == [spec.filename]
