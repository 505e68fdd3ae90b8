"""Prompt caching: markers on every Anthropic request (the scripted server speaks the Messages
API and simulates its cache), none elsewhere, and cache tokens priced as cache tokens."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentsh.config import ModelSettings
from agentsh.llm.client import Completion, LLMClient, cache_points
from agentsh.llm.usage import call_cost as _cost
from agentsh.values import Usage
from tests.fakes.anthropic import cache_markers
from tests.fakes.fixtures import make_llm_client
from tests.fakes.server import ScriptedServer, tool_call

CLAUDE = "anthropic/claude-sonnet-4-5"
SYSTEM = {"role": "system", "content": "You are agentsh, a coding agent. " * 300}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]


def _claude(server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, **settings: Any) -> LLMClient:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-AGENTSH-0123456789")
    client = make_llm_client(server, model=CLAUDE, api_key=None, **settings)
    client.api_base = server.base_url.removesuffix("/v1")
    return client


async def _reply(client: LLMClient, messages: list[dict[str, Any]]) -> Completion:
    items = [item async for item in client.stream(messages, TOOLS)]
    last = items[-1]
    assert isinstance(last, Completion)
    return last


@pytest.mark.asyncio
async def test_every_anthropic_request_carries_markers_and_the_next_one_reads_the_cache(
    scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted_server.script(tool_call("bash", {"command": "ls"}), "It holds two files.", "Done.")
    client = _claude(scripted_server, monkeypatch)
    messages: list[dict[str, Any]] = [SYSTEM, {"role": "user", "content": "what is here?"}]
    first = await _reply(client, messages)
    call = first.tool_calls[0]
    messages += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": "bash", "arguments": call.arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call.id, "content": "a.py\nb.py"},
    ]
    second = await _reply(client, messages)
    messages += [
        {"role": "assistant", "content": second.text},
        {"role": "user", "content": "thanks"},
    ]
    third = await _reply(client, messages)
    sent = scripted_server.requests
    assert all(r.anthropic for r in sent)
    assert [cache_markers(r.body) for r in sent] == [2, 3, 3]  # system, previous end, last
    # The first request writes the prefix; the next ones read it and write only what is new.
    assert first.usage.cache_read_tokens == 0 and first.usage.cache_write_tokens > 1_000
    assert second.usage.cache_read_tokens >= first.usage.cache_write_tokens
    assert third.usage.cache_read_tokens > second.usage.cache_read_tokens
    assert 0 < third.usage.cache_write_tokens < 100
    # litellm's prices: a read costs a tenth of an input token.
    uncached = Usage(input_tokens=third.usage.input_tokens + third.usage.cache_read_tokens)
    assert third.usage.cost < 0.3 * client.cost(uncached)


@pytest.mark.asyncio
async def test_a_summary_call_and_other_providers_carry_no_marker(
    scripted_server: ScriptedServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scripted_server.script("a summary", "plain")
    client = _claude(scripted_server, monkeypatch)
    await client.complete([SYSTEM, {"role": "user", "content": "summarize"}])
    assert cache_markers(scripted_server.requests[-1].body) == 0  # a one-off: nothing to reuse
    openai = make_llm_client(scripted_server)
    items = [i async for i in openai.stream([SYSTEM, {"role": "user", "content": "hi"}])]
    assert isinstance(items[-1], Completion)
    body = json.dumps(scripted_server.requests[-1].body)
    assert "cache_control" not in body  # OpenAI caches a stable prefix by itself


def test_markers_go_on_the_system_prompt_the_previous_end_and_the_last_message() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "u2"},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "content": "t1"},
        {"role": "tool", "content": "t2"},
    ]
    assert cache_points(messages) == [
        {"location": "message", "role": "system"},
        {"location": "message", "index": 3},
        {"location": "message", "index": -1},
    ]
    assert cache_points(messages[:2]) == [
        {"location": "message", "role": "system"},
        {"location": "message", "index": -1},
    ]


def test_a_price_override_prices_cache_reads_and_writes_as_such() -> None:
    """The override used to charge cache reads at the full input price."""
    usage = Usage(
        input_tokens=1_000, output_tokens=100, cache_read_tokens=9_000, cache_write_tokens=400
    )
    prices = ModelSettings(input_cost_per_mtok=3.0, output_cost_per_mtok=15.0)
    # Sonnet's own ratios from litellm's map (0.1x and 1.25x); 600 fresh, 400 written.
    expected = (600 * 3.0 + 9_000 * 0.3 + 400 * 3.75 + 100 * 15.0) / 1_000_000
    assert abs(_cost(CLAUDE, usage, prices) - expected) < 1e-12
    # An unknown model: the same defaults; explicit cache prices win.
    assert abs(_cost("openai/my-local-model", usage, prices) - expected) < 1e-12
    explicit = ModelSettings(
        input_cost_per_mtok=3.0,
        output_cost_per_mtok=15.0,
        cache_read_cost_per_mtok=1.0,
        cache_write_cost_per_mtok=0.0,
    )
    assert abs(_cost(CLAUDE, usage, explicit) - (600 * 3.0 + 9_000 + 100 * 15.0) / 1e6) < 1e-12
