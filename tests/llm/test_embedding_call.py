"""Embedding calls through litellm: failures are one scrubbed line, never a key."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from agentsh.llm import embedding_call as embedding
from agentsh.llm.embedding_call import EmbeddingCallError, embed_texts

KEY = "sk-proj-" + "a1B2c3D4" * 4


def _fake_litellm(error: Exception) -> Any:
    def embedding_call(**_kwargs: Any) -> Any:
        raise error

    return SimpleNamespace(embedding=embedding_call)


def test_a_failed_embedding_call_never_shows_the_api_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    error = RuntimeError(
        f"AuthenticationError: Incorrect API key provided: {KEY}.\n"
        "See https://example.invalid/v1/embeddings?key=AIzaSyA0123456789abcdefghij for help"
    )
    monkeypatch.setattr(embedding, "import_litellm", lambda: _fake_litellm(error))
    with pytest.raises(EmbeddingCallError) as caught:
        embed_texts("openai/text-embedding-3-small", ["hello"])
    message = str(caught.value)
    assert KEY not in message and "AIzaSy" not in message
    assert "[redacted]" in message and "\n" not in message
    assert message.startswith("embedding call to openai/text-embedding-3-small failed")
    assert caught.value.__cause__ is None  # the raw error (with the key) is not chained
