"""The gtr-t5 embedder against sentence-transformers itself (the reference implementation of
sentence-transformers/gtr-t5-base: Transformer(T5EncoderModel) -> Pooling(mean) -> Dense -> Normalize)."""

import pytest
import torch

from reconbench.text.embedding import EmbeddingError
from reconbench.text.gtr import load_gtr_folder, load_sentence_transformers_gtr, save_gtr_folder
from text_standins import gtr_base_folder, toy_texts


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    torch.set_num_threads(1)
    return gtr_base_folder(tmp_path_factory.mktemp("gtr"), toy_texts(40))


def test_gtr_matches_sentence_transformers_and_survives_a_round_trip(base, tmp_path):
    from sentence_transformers import SentenceTransformer

    texts = toy_texts(12, seed=1) + ["", "  the film   ", "x" * 300]  # empty, padded, truncated
    mine = load_sentence_transformers_gtr(base, max_length=32)
    reference = SentenceTransformer(str(base), device="cpu").encode(texts, convert_to_tensor=True, batch_size=4)
    vectors = mine.encode(texts, batch_size=5)
    assert vectors.shape == (15, 24) and mine.dim == 24
    assert torch.allclose(vectors, reference, atol=1e-6)
    save_gtr_folder(mine, tmp_path / "ours")
    assert torch.allclose(load_gtr_folder(tmp_path / "ours").encode(texts), vectors, atol=1e-6)


def test_gtr_refuses_files_that_do_not_fit(base, tmp_path):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(base, bad)
    (bad / "2_Dense/config.json").write_text('{"in_features": 32, "out_features": 24, "bias": true}')
    with pytest.raises(EmbeddingError, match="no bias and an identity activation"):
        load_sentence_transformers_gtr(bad, max_length=32)
    shutil.copyfile(base / "2_Dense/config.json", bad / "2_Dense/config.json")
    (bad / "model.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(EmbeddingError, match="model.safetensors: not a readable safetensors file"):
        load_sentence_transformers_gtr(bad, max_length=32)
