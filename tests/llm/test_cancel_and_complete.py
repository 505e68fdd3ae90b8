"""Cancelling a stream closes the HTTP connection; complete() gives a whole reply."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

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
    assert time.monotonic() - started < 10  # read to the end: ~20 s
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


_CANCEL_EARLY = """
import asyncio, gc
from tests.fakes.fixtures import make_llm_client
from tests.fakes.server import Reply, ScriptedServer
from agentsh.llm.env import import_litellm

async def main() -> None:
    import_litellm()
    with ScriptedServer() as server:
        for delay in (0.0, 0.002, 0.005, 0.01, 0.02, 0.05):
            server.script(Reply(text="w " * 50, delay_s=0.05))
            client = make_llm_client(server)

            async def consume() -> None:
                async for _ in client.stream([{"role": "user", "content": "hi"}]):
                    pass

            task = asyncio.create_task(consume())
            await asyncio.sleep(delay)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            gc.collect()
    print("DONE")

asyncio.run(main())
"""


def test_cancelling_before_the_first_chunk_prints_no_unawaited_coroutine_warning() -> None:
    # A cancel that lands while litellm builds the request in its executor drops the provider's
    # coroutine unawaited; the user pressed Esc or Ctrl+C and must not see a RuntimeWarning.
    # A real process: pytest's own warning capture would hide what a user sees on stderr.
    repo = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["PYTHONWARNINGS"] = "default"
    done = subprocess.run(
        [sys.executable, "-c", _CANCEL_EARLY],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "DONE" in done.stdout, done.stderr
    assert "was never awaited" not in done.stderr
