"""Cancelling a stream closes the HTTP connection; complete() gives a whole reply."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable

import pytest

from agentsh.events import ErrorKind, Retrying, TextDelta
from agentsh.llm.client import LLMClient, LLMError
from agentsh.llm.env import import_litellm
from agentsh.session.entries import StopReason
from tests.fakes.fixtures import FakeSleep
from tests.fakes.server import ErrorReply, Reply, ScriptedServer, ToolCallSpec, overflow_error

USER = [{"role": "user", "content": "hello"}]
SLOW = Reply(text="word " * 400, delay_s=0.05)  # ~20 s if read to the end


@pytest.mark.asyncio
async def test_cancelling_the_consuming_task_closes_the_stream_promptly(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    scripted_server.script(SLOW)
    received: list[str] = []
    first = asyncio.Event()
    await asyncio.to_thread(import_litellm)  # the first import takes seconds on a busy machine

    async def consume() -> None:
        async for item in llm_client_factory().stream(USER):
            if isinstance(item, TextDelta):
                received.append(item.text)
                first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 30)
    task.cancel()
    started = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert await asyncio.to_thread(scripted_server.wait_for_disconnect, 5.0)
    assert time.monotonic() - started < 2.0
    assert 0 < len(received) < 50


@pytest.mark.asyncio
async def test_closing_the_generator_early_closes_the_stream(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    scripted_server.script(SLOW)

    async with contextlib.aclosing(llm_client_factory().stream(USER)) as stream:
        async for item in stream:
            if isinstance(item, TextDelta):
                break

    assert await asyncio.to_thread(scripted_server.wait_for_disconnect, 5.0)
    assert scripted_server.disconnects == 1


@pytest.mark.asyncio
async def test_complete_returns_text_tool_calls_and_usage_without_streaming(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    scripted_server.script(
        Reply(
            text="## Goal\nSummarised.",
            tool_calls=(ToolCallSpec("read", '{"path": "a.py"', id="c1"),),
            usage={"prompt_tokens": 50, "completion_tokens": 7},
        )
    )

    done = await llm_client_factory().complete(USER, max_tokens=99)

    assert done.text == "## Goal\nSummarised."
    assert [(c.id, c.name, c.arguments) for c in done.tool_calls] == [
        ("c1", "read", '{"path": "a.py"')
    ]
    assert done.stop_reason == StopReason.TOOL_CALLS
    assert (done.usage.input_tokens, done.usage.output_tokens) == (50, 7)
    body = scripted_server.requests[0].body
    assert not body.get("stream")
    assert body["max_tokens"] == 99
    assert "tools" not in body


@pytest.mark.asyncio
async def test_complete_retries_like_stream_and_reports_each_retry(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    fake_sleep: FakeSleep,
) -> None:
    scripted_server.script(ErrorReply(429, retry_after="1"), ErrorReply(503), "summary")
    seen: list[Retrying] = []

    done = await llm_client_factory().complete(USER, on_retry=seen.append)

    assert done.text == "summary"
    assert [r.reason for r in seen] == ["rate limited (429)", "server error (503)"]
    assert fake_sleep.delays[0] == 1.0


@pytest.mark.asyncio
async def test_complete_raises_classified_errors(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    scripted_server.script(overflow_error())

    with pytest.raises(LLMError) as caught:
        await llm_client_factory().complete(USER)

    assert caught.value.kind == ErrorKind.CONTEXT_OVERFLOW


@pytest.mark.asyncio
async def test_complete_with_another_model_of_the_same_provider_uses_the_same_server(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    scripted_server.script("cheap summary")

    done = await llm_client_factory().complete(USER, model="openai/summary-model")

    assert done.model == "openai/summary-model"
    assert scripted_server.requests[0].body["model"] == "summary-model"


@pytest.mark.asyncio
async def test_request_aware_factories_see_what_was_sent(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    scripted_server.script(lambda req: f"you said {req.messages[-1]['content']}")

    done = await llm_client_factory().complete([{"role": "user", "content": "ping"}])

    assert done.text == "you said ping"
    assert json.loads(json.dumps(scripted_server.requests[0].to_json()))["body"]["messages"]
