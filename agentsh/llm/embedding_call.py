"""Embedding calls through litellm, for a search index configured with a provider model.

The memory index (``agentsh.memory.embeddings``) may not import litellm itself (only
``agentsh/llm`` does), so it calls :func:`embed_texts` here. litellm is imported lazily through
:func:`agentsh.llm.env.import_litellm` (offline price list, quiet logs), or, in a front end whose
model calls run in the model worker, the worker makes the call; either way the call is
synchronous and meant for a background thread. Failures become :class:`EmbeddingCallError`
with a message a person can act on, scrubbed of API keys like every model error (it reaches
the status line, the memory pane and ``agentsh memory reindex``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentsh.errors import AgentshError
from agentsh.llm.client import scrub
from agentsh.llm.env import import_litellm

_DETAIL_CHARS = 400


class EmbeddingCallError(AgentshError, RuntimeError):
    """The provider's embedding call failed (no key, unknown model, network, bad answer)."""


def embed_texts(
    model: str,
    texts: Sequence[str],
    *,
    api_base: str | None = None,
    timeout_s: float = 60.0,
) -> list[list[float]]:
    """One embedding per text, in order, from ``model`` (a litellm model string)."""
    if not texts:
        return []
    from agentsh.llm import remote

    if remote.in_use():  # a front end: the model worker makes the call
        return remote.embed_texts(model, texts, api_base=api_base, timeout_s=timeout_s)
    litellm = import_litellm()
    kwargs: dict[str, Any] = {"model": model, "input": list(texts), "timeout": timeout_s}
    if api_base:
        kwargs["api_base"] = api_base
    try:
        response = litellm.embedding(**kwargs)
    except Exception as exc:  # noqa: BLE001 - litellm raises many unrelated types
        # Provider errors can quote the key or a URL carrying it (?key=...): scrub, one line.
        detail = " ".join(str(exc).split())[:_DETAIL_CHARS]
        raise EmbeddingCallError(f"embedding call to {model} failed: {scrub(detail)}") from None
    data = getattr(response, "data", None)
    if data is None and isinstance(response, dict):
        data = response.get("data")
    if not isinstance(data, list) or len(data) != len(texts):
        raise EmbeddingCallError(
            f"embedding call to {model} returned {len(data or [])} vectors for {len(texts)} texts"
        )
    ordered: list[list[float]] = [[] for _ in texts]
    for position, item in enumerate(data):
        index = _field(item, "index", position)
        vector = _field(item, "embedding", None)
        if not isinstance(vector, list) or not isinstance(index, int) or index >= len(texts):
            raise EmbeddingCallError(f"embedding call to {model} returned a malformed vector")
        ordered[index] = [float(x) for x in vector]
    if any(not v for v in ordered):
        raise EmbeddingCallError(f"embedding call to {model} left some texts without a vector")
    return ordered


def _field(item: Any, name: str, default: Any) -> Any:
    if isinstance(item, dict):
        return item.get(name, default)
    return getattr(item, name, default)
