"""LLMClient.stream against the scripted server through the real litellm client."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from agentsh.events import TextDelta, TextEnded, ThinkingDelta, ToolCallDelta
from agentsh.llm.client import Completion, LLMClient, StreamItem
from agentsh.session.entries import StopReason
from tests.fakes.fixtures import FAKE_KEY
from tests.fakes.server import Reply, ScriptedServer, ToolCallSpec, tool_calls

USER = [{"role": "user", "content": "hello"}]
BASH_TOOL = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "run a command",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
    },
}


async def collect(client: LLMClient, **kwargs: Any) -> list[StreamItem]:
    messages = kwargs.pop("messages", USER)
    return [item async for item in client.stream(messages, **kwargs)]


def completion_of(items: list[StreamItem]) -> Completion:
    completions = [i for i in items if isinstance(i, Completion)]
    assert len(completions) == 1, "exactly one Completion ends every stream"
    assert items[-1] is completions[0]
    return completions[0]


@pytest.mark.asyncio
async def test_text_streams_as_several_deltas_that_add_up_to_the_reply(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    answer = "The quick brown fox jumps over the lazy dog, and then it does it again twice."
    scripted_server.script(answer)

    items = await collect(llm_client_factory())

    deltas = [i.text for i in items if isinstance(i, TextDelta)]
    assert len(deltas) > 3
    assert "".join(deltas) == answer
    done = completion_of(items)
    assert done.text == answer
    assert done.stop_reason == StopReason.STOP
    assert done.tool_calls == ()
    assert done.model == "openai/test-model"


@pytest.mark.asyncio
async def test_reasoning_content_streams_as_thinking_before_the_text(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    scripted_server.script(Reply(text="Answer.", thinking="Let me think about this carefully."))

    items = await collect(llm_client_factory())

    thinking = [i.text for i in items if isinstance(i, ThinkingDelta)]
    assert "".join(thinking) == "Let me think about this carefully."
    first_text = next(n for n, i in enumerate(items) if isinstance(i, TextDelta))
    last_thinking = max(n for n, i in enumerate(items) if isinstance(i, ThinkingDelta))
    assert last_thinking < first_text
    assert completion_of(items).thinking == "Let me think about this carefully."


@pytest.mark.asyncio
async def test_several_tool_calls_in_one_reply_are_assembled_across_chunks(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    first = {"cmd": "pytest -q tests/test_a_rather_long_path_name.py", "timeout": 120}
    second = {"path": "src/module.py", "offset": 10, "limit": 200}
    scripted_server.script(
        tool_calls(
            ToolCallSpec("bash", first, id="call_A"),
            ToolCallSpec("read", second, id="call_B"),
            text="Running two things.",
        )
    )

    items = await collect(llm_client_factory(), tools=[BASH_TOOL])

    deltas = [i for i in items if isinstance(i, ToolCallDelta)]
    # Arguments arrive in several fragments per call, each tagged with the call's id and name.
    assert len([d for d in deltas if d.index == 0]) > 2
    assert {(d.index, d.call_id, d.name) for d in deltas} == {
        (0, "call_A", "bash"),
        (1, "call_B", "read"),
    }
    assert "".join(d.arguments_fragment for d in deltas if d.index == 0) == json.dumps(first)
    done = completion_of(items)
    assert [(c.id, c.name, json.loads(c.arguments)) for c in done.tool_calls] == [
        ("call_A", "bash", first),
        ("call_B", "read", second),
    ]
    assert done.text == "Running two things."
    assert done.stop_reason == StopReason.TOOL_CALLS


@pytest.mark.asyncio
async def test_tool_call_arguments_that_are_not_json_are_delivered_verbatim(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    broken = '{"path": "a.py", "content": "unterminated'
    scripted_server.script(Reply(tool_calls=(ToolCallSpec("write", broken, id="call_X"),)))

    items = await collect(llm_client_factory(), tools=[BASH_TOOL])

    (call,) = completion_of(items).tool_calls
    assert call.arguments == broken
    assert call.parsed_arguments() == {}


@pytest.mark.asyncio
async def test_a_tool_call_without_arguments_gets_an_empty_object(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    scripted_server.script(Reply(tool_calls=(ToolCallSpec("ls", "", id="call_L"),)))

    (call,) = completion_of(await collect(llm_client_factory())).tool_calls

    assert (call.name, call.arguments) == ("ls", "{}")


@pytest.mark.asyncio
async def test_the_request_carries_messages_tools_usage_option_limit_and_key(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    scripted_server.script("ok")
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "hello"},
    ]

    await collect(llm_client_factory(), messages=messages, tools=[BASH_TOOL], max_tokens=321)

    (request,) = scripted_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "test-model"
    assert request.body["messages"] == messages
    assert request.body["tools"] == [BASH_TOOL]
    assert request.body["stream"] is True
    assert request.body["stream_options"] == {"include_usage": True}
    assert request.body["max_tokens"] == 321
    assert request.headers["authorization"] == f"Bearer {FAKE_KEY}"


@pytest.mark.asyncio
async def test_no_tools_key_is_sent_when_there_are_no_tools(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    scripted_server.script("ok")

    await collect(llm_client_factory(max_output_tokens=0), tools=[])

    body = scripted_server.requests[0].body
    assert "tools" not in body
    assert "max_tokens" not in body


@pytest.mark.asyncio
async def test_usage_comes_from_the_provider_and_an_unknown_model_costs_nothing(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    scripted_server.script(Reply(text="hi", usage={"prompt_tokens": 1200, "completion_tokens": 34}))

    usage = completion_of(await collect(llm_client_factory())).usage

    assert (usage.input_tokens, usage.output_tokens) == (1200, 34)
    assert usage.cost == 0.0


@pytest.mark.asyncio
async def test_cached_prompt_tokens_are_reported_apart_from_fresh_input(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    scripted_server.script(
        Reply(
            text="hi", usage={"prompt_tokens": 1000, "completion_tokens": 10, "cached_tokens": 800}
        )
    )

    usage = completion_of(await collect(llm_client_factory())).usage

    assert (usage.input_tokens, usage.cache_read_tokens) == (200, 800)
    assert usage.context_tokens == 1010


@pytest.mark.asyncio
async def test_default_usage_is_about_a_quarter_of_the_characters(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    reply = "x" * 400
    scripted_server.script(reply)

    usage = completion_of(await collect(llm_client_factory())).usage

    assert usage.output_tokens == 100
    assert usage.input_tokens == (len(json.dumps(USER)) + len("[]") + 3) // 4


@pytest.mark.asyncio
async def test_a_known_model_is_priced_from_litellms_local_price_list(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    scripted_server.script(
        Reply(text="hi", usage={"prompt_tokens": 1_000_000, "completion_tokens": 100_000})
    )

    done = completion_of(await collect(llm_client_factory(model="openai/gpt-4o")))

    # gpt-4o: 2.50 USD per 1M input tokens, 10 USD per 1M output tokens.
    assert done.usage.cost == pytest.approx(2.5 + 1.0)
    assert scripted_server.requests[0].body["model"] == "gpt-4o"


@pytest.mark.asyncio
async def test_configured_prices_override_litellms(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    scripted_server.script(
        Reply(text="hi", usage={"prompt_tokens": 2_000_000, "completion_tokens": 1_000_000})
    )
    client = llm_client_factory(input_cost_per_mtok=0.5, output_cost_per_mtok=2.0)

    done = completion_of(await collect(client))

    assert done.usage.cost == pytest.approx(2 * 0.5 + 1 * 2.0)


@pytest.mark.asyncio
async def test_finish_reason_length_is_reported(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    scripted_server.script(Reply(text="cut off in the mid", finish_reason="length"))

    done = completion_of(await collect(llm_client_factory()))

    assert done.stop_reason == StopReason.LENGTH


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply(text="All of it, then the usage."), "stop"),
        (Reply(text="cut off in the mid", finish_reason="length"), "length"),
        (tool_calls(("bash", {"cmd": "ls"}), text="Let me look."), "tool_calls"),
    ],
)
async def test_the_end_of_the_reply_is_announced_once_after_its_last_delta(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    reply: Reply,
    reason: str,
) -> None:
    """``TextEnded`` comes with the provider's finish reason, before the usage that the
    Completion waits for: a front end can show the whole reply that much sooner."""
    scripted_server.script(reply)

    items = await collect(llm_client_factory())

    ends = [n for n, i in enumerate(items) if isinstance(i, TextEnded)]
    assert len(ends) == 1 and items[ends[0]] == TextEnded(reason)
    deltas = [n for n, i in enumerate(items) if isinstance(i, TextDelta | ToolCallDelta)]
    assert deltas and max(deltas) < ends[0] < len(items) - 1
    assert completion_of(items).stop_reason.value == reason
