"""The end of a stream: litellm does not rebuild the whole reply when the provider reported its
usage (the rebuild walks every chunk and held the turn's end 0.7-1.9 s after a 2,000-chunk
reply), and the usage recorded is exactly what litellm's full rebuild gives; when the provider
reported none, agentsh counts it (as litellm's rebuild would have, 0.4-1 s later) and marks it
estimated."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentsh.llm import client as client_module
from agentsh.llm import stream_end
from agentsh.llm.client import Completion, LLMClient
from agentsh.llm.env import import_litellm
from agentsh.values import Usage
from tests.fakes.anthropic import PromptCache
from tests.fakes.fixtures import make_llm_client
from tests.fakes.server import Reply, ScriptedServer, ToolCallSpec, tool_calls

LONG = " ".join(f"word{i}" for i in range(600))
USER = [{"role": "user", "content": "write a long answer"}]
CLAUDE = "anthropic/claude-sonnet-4-5"


def _count_rebuilds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of chunks each call of litellm's stream_chunk_builder is given."""
    litellm = import_litellm()
    real = litellm.stream_chunk_builder
    sizes: list[int] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        chunks = kwargs.get("chunks", args[0] if args else None)
        sizes.append(len(chunks or ()))
        return real(*args, **kwargs)

    monkeypatch.setattr(litellm, "stream_chunk_builder", counting)
    return sizes


async def _completion(client: LLMClient) -> Completion:
    items = [item async for item in client.stream(USER)]
    last = items[-1]
    assert isinstance(last, Completion)
    return last


def _full_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    """litellm's own end of stream, as before this module existed."""
    monkeypatch.setattr(client_module, "skip_rebuild", lambda response, litellm, count=None: None)


@pytest.mark.asyncio
async def test_a_reported_usage_is_read_from_a_few_chunks_not_rebuilt_from_all(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scripted_server.script(LONG)
    sizes = _count_rebuilds(monkeypatch)

    done = await _completion(llm_client_factory())

    assert done.text == LONG
    assert sizes, "litellm builds the final usage at the end of the stream"
    # Before: every chunk of the reply (hundreds) went through the builder.
    assert max(sizes) <= 5, sizes
    assert done.usage.output_tokens > 0 and not done.usage.estimated


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "reply",
    [
        Reply(text=LONG, usage={"prompt_tokens": 1200, "completion_tokens": 345}),
        Reply(
            text=LONG,
            usage={"prompt_tokens": 5000, "completion_tokens": 80, "cached_tokens": 4096},
        ),
        Reply(text="thinking done", thinking="let me see " * 50),
        tool_calls(("bash", {"cmd": "ls -la " * 40}), ("read", {"path": "a.py"}), text="Two."),
    ],
    ids=["usage", "cached", "thinking", "tool-calls"],
)
async def test_the_usage_is_what_litellms_full_rebuild_gives(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    monkeypatch: pytest.MonkeyPatch,
    reply: Reply,
) -> None:
    scripted_server.script(reply, reply)
    quick = await _completion(llm_client_factory())
    _full_rebuild(monkeypatch)
    full = await _completion(llm_client_factory())

    assert quick.usage == full.usage
    assert quick.usage != Usage()

    def reply_of(done: Completion) -> tuple[Any, ...]:  # the server makes up new call ids
        calls = [(call.name, call.arguments) for call in done.tool_calls]
        return done.text, done.thinking, calls, done.stop_reason

    assert reply_of(quick) == reply_of(full)


@pytest.mark.asyncio
async def test_an_anthropic_streams_usage_is_what_litellms_full_rebuild_gives(
    scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Anthropic reports input (and cache) tokens at the start and output tokens at the end.
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-AGENTSH-0123456789")
    system = {"role": "system", "content": "You are agentsh, a coding agent. " * 300}
    scripted_server.script(LONG, LONG)

    def claude() -> LLMClient:
        client = make_llm_client(scripted_server, model=CLAUDE, api_key=None)
        client.api_base = scripted_server.base_url.removesuffix("/v1")
        return client

    async def reply() -> Completion:
        items = [item async for item in claude().stream([system, *USER])]
        last = items[-1]
        assert isinstance(last, Completion)
        return last

    sizes = _count_rebuilds(monkeypatch)
    quick = await reply()
    assert sizes and max(sizes) <= 5, sizes
    _full_rebuild(monkeypatch)
    scripted_server.prompt_cache = PromptCache()  # the same cache state as the first request
    full = await reply()

    assert quick.usage == full.usage
    assert quick.usage.input_tokens > 0 and quick.usage.output_tokens > 0


class _Chunk:
    def __init__(self, usage: Any = None, finish: str | None = None) -> None:
        self.usage = usage
        self.choices = [type("Choice", (), {"finish_reason": finish})()]


class _Stream:
    """What the hook needs of litellm's stream wrapper: its chunks and its rebuild."""

    def __init__(self, chunks: list[Any]) -> None:
        self.chunks = chunks
        self.full_rebuilds = 0

    async def _async_build_complete_streaming_response(self) -> str:
        self.full_rebuilds += 1
        return "full"


@pytest.mark.asyncio
async def test_without_a_reported_usage_and_no_count_litellm_counts_from_the_whole_reply() -> None:
    # No usage chunk and nothing to count with: litellm counts the text, from every chunk.
    stream = _Stream([_Chunk(), _Chunk(), _Chunk(finish="stop")])
    assert stream_end.skip_rebuild(stream, import_litellm())

    assert await stream._async_build_complete_streaming_response() == "full"
    assert stream.full_rebuilds == 1


@pytest.mark.asyncio
async def test_without_a_reported_usage_the_callers_count_is_the_usage_marked_estimated() -> None:
    stream = _Stream([_Chunk(), _Chunk(), _Chunk(finish="stop")])
    end = stream_end.skip_rebuild(stream, import_litellm(), lambda: (120, 34))
    assert end is not None and not end.estimated

    built: Any = await stream._async_build_complete_streaming_response()

    assert stream.full_rebuilds == 0
    assert (built.usage.prompt_tokens, built.usage.completion_tokens) == (120, 34)
    assert end.estimated


@pytest.mark.asyncio
async def test_a_count_that_fails_leaves_it_to_litellms_rebuild() -> None:
    def broken() -> tuple[int, int]:
        raise ValueError("no tokenizer")

    stream = _Stream([_Chunk(), _Chunk(finish="stop")])
    end = stream_end.skip_rebuild(stream, import_litellm(), broken)

    assert await stream._async_build_complete_streaming_response() == "full"
    assert end is not None and not end.estimated


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "reply",
    [
        Reply(text=LONG, no_usage=True),
        Reply(text="thinking done", thinking="let me see " * 50, no_usage=True),
        Reply(
            text="Two.",
            tool_calls=(ToolCallSpec("bash", {"cmd": "ls -la " * 40}),),
            no_usage=True,
        ),
    ],
    ids=["text", "thinking", "tool-call"],
)
async def test_a_stream_without_usage_is_counted_from_the_reply_not_rebuilt(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    monkeypatch: pytest.MonkeyPatch,
    reply: Reply,
) -> None:
    scripted_server.script(reply, reply)
    sizes = _count_rebuilds(monkeypatch)
    quick = await _completion(llm_client_factory())
    # Before: litellm rebuilt the reply from every one of its chunks, then counted it.
    assert sizes == [], sizes
    _full_rebuild(monkeypatch)
    full = await _completion(llm_client_factory())

    assert quick.usage.estimated and not full.usage.estimated

    # The same tokenizer files count the same reply: litellm's figures, give or take the
    # framing each side adds (litellm counts a tool call's whole JSON, ids and all).
    def near(ours: int, litellms: int) -> bool:
        return abs(ours - litellms) <= max(8, litellms // 5)

    assert near(quick.usage.output_tokens, full.usage.output_tokens), (quick.usage, full.usage)
    assert near(quick.usage.input_tokens, full.usage.input_tokens), (quick.usage, full.usage)
    assert quick.usage.output_tokens > 0 and quick.usage.input_tokens > 0
    assert (quick.text, quick.thinking, quick.stop_reason) == (
        full.text,
        full.thinking,
        full.stop_reason,
    )


def test_a_stream_without_the_hook_is_left_alone() -> None:
    class Other:
        def __init__(self) -> None:
            self.chunks: list[Any] = []

    other = Other()
    assert not stream_end.skip_rebuild(other, import_litellm())
    assert not hasattr(other, stream_end.HOOK)
