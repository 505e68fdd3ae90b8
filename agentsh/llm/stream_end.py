"""The end of a litellm stream without litellm rebuilding the whole reply first.

When a provider's stream ends, litellm's stream wrapper rebuilds the complete response from
every chunk it kept (``stream_chunk_builder``, in a thread) before it hands over the final usage
chunk. That rebuild walks each chunk's pydantic fields several times: for a 2,000-chunk reply it
costs 0.25-0.35 s of CPU and, on a loaded machine where the thread fights the event loop for
the GIL, 0.7-1.9 s before the stream's last item arrives, so the turn ends that much late. The
rebuilt reply only feeds litellm's own logging callbacks and cache (agentsh uses neither); the
one thing agentsh takes from it is the usage.

:func:`skip_rebuild` replaces that step on one stream: when the provider reported its token
counts (agentsh always asks for them: ``stream_options.include_usage``), the usage is built by
the same ``stream_chunk_builder`` from the few chunks that bear on it (the first, the ones that
carry usage, the ones that carry the finish reason), so the figures are exactly litellm's. When
the provider reported none (some local servers, proxies that drop ``stream_options``), litellm
would count the tokens of the whole request and reply itself, after the rebuild: 0.4-1 s
after the last chunk of a 2,000-chunk reply. The caller's ``count`` gives those counts instead
(agentsh counts the reply it already assembled and the request it sent, with the same
tokenizer files), and the :class:`StreamEnd` it gets back says they are estimated: either way
the figures are agentsh's or litellm's count, never the provider's, and now they say so. A
provider that reported one count and not the other keeps litellm's full rebuild. A litellm
whose stream wrapper no longer has these members is left alone: slower, never wrong.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

# The stream wrapper's member that rebuilds the reply at the end (litellm's
# CustomStreamWrapper; tests/llm/test_stream_end.py pins that it still exists).
HOOK = "_async_build_complete_streaming_response"


#: the request's and the reply's tokens as the caller counts them (prompt, completion), or
#: None when the caller has nothing to count (litellm's own end of stream then decides)
Count = Callable[[], tuple[int, int] | None]


@dataclass(slots=True)
class StreamEnd:
    """What the end of one stream did: ``estimated`` when the usage litellm hands over is the
    caller's count (the provider reported none), not the provider's."""

    estimated: bool = False


def skip_rebuild(
    response: Any, litellm: ModuleType, count: Count | None = None
) -> StreamEnd | None:
    """Make ``response`` (what ``litellm.acompletion(stream=True)`` returned) build its final
    usage from the usage-bearing chunks only when the provider reported the counts, and from
    ``count`` when it reported none. Returns the stream's :class:`StreamEnd` when the hook was
    installed, else None."""
    full = getattr(response, HOOK, None)
    if not callable(full) or not isinstance(getattr(response, "chunks", None), list):
        return None
    end = StreamEnd()

    async def rebuild() -> Any:
        few = usage_chunks(response.chunks)
        reported = _reported(few) if few is not None else (False, False)
        if reported == (False, False) and count is not None:
            try:
                counted = count()
            except Exception:  # noqa: BLE001 - litellm's own path decides what a failure gives
                counted = None
            if counted is None:
                return await full()
            return _counted(litellm, response, counted, end)
        if few is None or reported != (True, True):
            return await full()
        try:
            return litellm.stream_chunk_builder(
                chunks=few,
                messages=getattr(response, "messages", None),
                logging_obj=getattr(response, "logging_obj", None),
                count_prompt_tokens=getattr(response, "count_prompt_tokens", None),
            )
        except Exception:  # noqa: BLE001 - litellm's own path decides what a failure gives
            return await full()

    hook: Callable[[], Awaitable[Any]] = rebuild
    setattr(response, HOOK, hook)
    return end


def _counted(litellm: ModuleType, response: Any, counted: tuple[int, int], end: StreamEnd) -> Any:
    """The complete response litellm's end of stream reads its usage from, with the caller's
    counts: a bare one (no choices), as only the usage is read from it."""
    prompt, completion = counted
    usage = litellm.Usage(
        prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
    )
    built = litellm.ModelResponse(model=getattr(response, "model", None), usage=usage)
    end.estimated = True
    return built


def usage_chunks(chunks: list[Any]) -> list[Any] | None:
    """The chunks the usage is computed from: the first (it names the provider), every one
    that carries usage, every one that carries a finish reason; None when none carries usage."""
    if not chunks:
        return None
    kept: list[Any] = [chunks[0]]
    found = _usage_of(chunks[0]) is not None
    for chunk in chunks[1:]:
        if _usage_of(chunk) is not None:
            kept.append(chunk)
            found = True
        elif _finished(chunk):
            kept.append(chunk)
    return kept if found else None


_FIELDS: dict[type, bool] = {}  # chunk type -> whether usage is one of its declared fields


def _usage_of(chunk: Any) -> Any:
    """``chunk.usage`` or None. litellm's stream chunk keeps usage among pydantic's extra
    fields, and reading a missing one through ``getattr`` costs a raised AttributeError: for
    2,000 chunks at load, 50-100 ms of the very delay this module removes."""
    extra = getattr(chunk, "__pydantic_extra__", None)
    if isinstance(extra, dict):
        kind = type(chunk)
        declared = _FIELDS.get(kind)
        if declared is None:
            declared = _FIELDS[kind] = "usage" in getattr(kind, "model_fields", {"usage": None})
        if not declared:
            return extra.get("usage")
    return getattr(chunk, "usage", None)


def _finished(chunk: Any) -> bool:
    choices = getattr(chunk, "choices", None)
    if not choices:
        return False
    return getattr(choices[0], "finish_reason", None) is not None


def _reported(chunks: list[Any]) -> tuple[bool, bool]:
    """Whether litellm reads the prompt and the completion counts from ``chunks`` (both: it
    counts nothing from the text, which the kept chunks do not hold): litellm's own reading,
    with its provider quirks (Anthropic's placeholder count, Ollama's zeros). An unknown
    litellm says (True, False): its full rebuild decides."""
    try:
        from litellm.litellm_core_utils.streaming_chunk_builder_utils import ChunkProcessor

        per_chunk = ChunkProcessor(list(chunks), None)._calculate_usage_per_chunk(chunks=chunks)
    except Exception:  # noqa: BLE001 - unknown to this litellm: the full rebuild decides
        return True, False
    return per_chunk["prompt_tokens"] is not None, per_chunk["completion_tokens"] is not None
