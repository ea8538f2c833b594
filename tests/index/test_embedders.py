"""Embedders: the fake used by ranker tests, the registry, and the shipped MiniLM model."""

from __future__ import annotations

import fnmatch
import shutil
import socket
import tomllib
from pathlib import Path

import numpy as np
import pytest

from cartograph.errors import ModelIntegrityError, RetrievalError
from cartograph.index.embedders import (
    Embedder,
    FakeEmbedder,
    embedder_names,
    get_embedder,
)
from cartograph.index.embedders.minilm import (
    MINILM_DIM,
    MINILM_MODEL_ID,
    MODEL_DIR,
    MiniLMEmbedder,
    verify_model_files,
)


def _cos(embedder: Embedder, a: str, b: str) -> float:
    va, vb = embedder.embed([a, b])
    return float(va @ vb)


def test_fake_embedder_is_deterministic_across_instances() -> None:
    texts = ["Search the web", "create a GitHub issue"]
    np.testing.assert_array_equal(FakeEmbedder().embed(texts), FakeEmbedder().embed(texts))


def test_fake_embedder_rows_are_unit_float32_even_for_empty_text() -> None:
    vectors = FakeEmbedder().embed(["", "!!!", "hello world", "x " * 500])
    assert vectors.dtype == np.float32
    assert vectors.shape == (4, 1024)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)


def test_fake_embedder_texts_sharing_words_are_closer_than_unrelated_ones() -> None:
    fake = FakeEmbedder()
    shared = _cos(fake, "read a file from disk", "read the file contents")
    unrelated = _cos(fake, "read a file from disk", "send slack message")
    assert shared > 0.4
    assert shared > unrelated + 0.3


def test_fake_embedder_ignores_case_and_punctuation() -> None:
    fake = FakeEmbedder()
    assert _cos(fake, "Git Branch!", "git branch") == pytest.approx(1.0)


def test_fake_embedder_on_no_texts_returns_empty_matrix() -> None:
    assert FakeEmbedder(32).embed([]).shape == (0, 32)


def test_fake_embedder_model_id_names_its_dimension() -> None:
    assert FakeEmbedder().model_id == "fake-hash-v1"
    assert FakeEmbedder(64).model_id != FakeEmbedder().model_id
    assert FakeEmbedder(64).dim == 64


def test_fake_embedder_satisfies_the_embedder_protocol() -> None:
    assert isinstance(FakeEmbedder(), Embedder)


def test_get_embedder_returns_one_shared_instance_per_name() -> None:
    assert get_embedder("fake") is get_embedder("fake")
    assert isinstance(get_embedder("fake"), FakeEmbedder)


def test_get_embedder_rejects_unknown_names_with_a_code() -> None:
    with pytest.raises(RetrievalError) as info:
        get_embedder("word2vec")
    assert info.value.code == "unknown_embedder"


def test_embedder_names_lists_the_default_and_fake() -> None:
    assert {"fake", "minilm"} <= set(embedder_names())


# --- the shipped MiniLM model -------------------------------------------------

WEATHER = "get the current weather forecast"
WEATHER_PARAPHRASE = "what will the weather be tomorrow"
UNRELATED = "delete a git branch"


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    embedder = MiniLMEmbedder()
    embedder.load()
    return embedder


def _copy_model(tmp_path: Path) -> Path:
    target = tmp_path / "minilm"
    target.mkdir()
    for name in ("model.onnx", "tokenizer.json", "SHA256SUMS"):
        shutil.copyfile(MODEL_DIR / name, target / name)
    return target


def test_minilm_loads_and_embeds_offline_without_touching_the_network(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    vectors = MiniLMEmbedder().embed([WEATHER])
    assert vectors.shape == (1, MINILM_DIM)
    assert vectors.dtype == np.float32


def test_minilm_is_the_default_embedder() -> None:
    assert get_embedder().model_id == MINILM_MODEL_ID
    assert get_embedder().dim == 384


def test_minilm_paraphrases_score_far_above_unrelated_texts(minilm: MiniLMEmbedder) -> None:
    paraphrase = _cos(minilm, WEATHER, WEATHER_PARAPHRASE)
    assert paraphrase > 0.5
    assert paraphrase > _cos(minilm, WEATHER, UNRELATED) + 0.4
    assert paraphrase > _cos(minilm, WEATHER_PARAPHRASE, UNRELATED) + 0.4


def test_minilm_rows_are_unit_length(minilm: MiniLMEmbedder) -> None:
    vectors = minilm.embed([WEATHER, "", "x " * 1000, "東京の天気"])
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_minilm_batch_and_single_embeddings_agree(minilm: MiniLMEmbedder) -> None:
    texts = [WEATHER, "", UNRELATED, "a much longer sentence " * 20, WEATHER_PARAPHRASE]
    batch = minilm.embed(texts)
    single = np.stack([minilm.embed([text])[0] for text in texts])
    np.testing.assert_allclose(batch, single, atol=1e-6)


def test_minilm_one_and_two_intra_op_threads_give_exactly_the_same_vectors(
    minilm: MiniLMEmbedder,
) -> None:
    texts = [WEATHER, "", UNRELATED, "a much longer sentence " * 20, "東京の天気"]
    np.testing.assert_array_equal(minilm.embed(texts), MiniLMEmbedder(threads=1).embed(texts))


def test_minilm_batched_runs_stay_close_and_use_their_own_cache_key() -> None:
    texts = [WEATHER, UNRELATED, "a much longer sentence " * 20]
    batched = MiniLMEmbedder(batch_size=8)
    cosines = np.sum(batched.embed(texts) * get_embedder().embed(texts), axis=1)
    assert cosines.min() > 0.97
    assert batched.model_id != MINILM_MODEL_ID


def test_minilm_empty_input_returns_empty_matrix_without_loading(tmp_path: Path) -> None:
    # A folder with no model in it: loading would fail, so nothing was loaded.
    assert MiniLMEmbedder(tmp_path).embed([]).shape == (0, MINILM_DIM)


def test_minilm_truncates_long_text_instead_of_failing(minilm: MiniLMEmbedder) -> None:
    long_text = "weather forecast " * 2000
    np.testing.assert_allclose(
        minilm.embed([long_text]), minilm.embed([long_text + " tail"]), atol=1e-6
    )


@pytest.mark.parametrize("name", ["model.onnx", "tokenizer.json"])
def test_tampered_model_file_is_refused_at_load_naming_the_file(tmp_path: Path, name: str) -> None:
    folder = _copy_model(tmp_path)
    data = bytearray((folder / name).read_bytes())
    data[len(data) // 2] ^= 0x01
    (folder / name).write_bytes(bytes(data))
    with pytest.raises(ModelIntegrityError) as info:
        MiniLMEmbedder(folder).embed([WEATHER])
    assert info.value.code == "model_integrity"
    assert info.value.details["file"] == name


def test_missing_checksum_file_is_refused_at_load(tmp_path: Path) -> None:
    folder = _copy_model(tmp_path)
    (folder / "SHA256SUMS").unlink()
    with pytest.raises(ModelIntegrityError) as info:
        verify_model_files(folder)
    assert info.value.details["file"] == "SHA256SUMS"


def test_checksum_file_that_omits_the_model_is_refused(tmp_path: Path) -> None:
    folder = _copy_model(tmp_path)
    sums = folder / "SHA256SUMS"
    kept = [line for line in sums.read_text().splitlines() if "model.onnx" not in line]
    sums.write_text("\n".join(kept) + "\n")
    with pytest.raises(ModelIntegrityError) as info:
        verify_model_files(folder)
    assert info.value.details["file"] == "model.onnx"


def test_shipped_model_files_match_their_pins() -> None:
    verify_model_files(MODEL_DIR)


def test_every_shipped_model_file_is_declared_as_package_data() -> None:
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["cartograph"]
    shipped = [p for p in MODEL_DIR.iterdir() if p.is_file() and p.suffix not in {".py", ".pyc"}]
    assert {"model.onnx", "tokenizer.json", "SHA256SUMS"} <= {p.name for p in shipped}
    for path in shipped:
        relative = path.relative_to(MODEL_DIR.parents[2]).as_posix()
        assert any(
            fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(path.name, pattern.split("/")[-1])
            for pattern in patterns
        ), f"{relative} would be missing from a non-editable install"


def test_minilm_span_pooling_keeps_the_whole_text_vector_and_unit_rows(
    minilm: MiniLMEmbedder,
) -> None:
    task = f"{WEATHER} and then {UNRELATED}"
    step = task.index(UNRELATED)
    rows = minilm.embed_spans(task, [(0, len(WEATHER)), (step, len(task))])
    np.testing.assert_allclose(rows[0], minilm.embed([task])[0], atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-5)
    assert (
        rows[1] @ minilm.embed([WEATHER_PARAPHRASE])[0]
        > rows[2] @ minilm.embed([WEATHER_PARAPHRASE])[0]
    )
