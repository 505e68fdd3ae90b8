"""Prompt-cache markers beyond direct Anthropic, as litellm actually sends them.

Claude through OpenRouter, Bedrock (Converse and Invoke) and Vertex AI must carry the three
markers (``cache_control`` blocks, or Bedrock Converse's ``cachePoint``s); DeepSeek, OpenAI and
Gemini cache a stable prefix by themselves and get a plain request. The scripted server records
every request (Bedrock's and Vertex's paths get a 404 after being recorded: only the body
matters here); it also hands Vertex's service account its token.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentsh.llm.client import LLMError
from agentsh.llm.models import needs_cache_markers
from tests.fakes.fixtures import make_llm_client
from tests.fakes.server import TOKEN, ScriptedServer

SYSTEM = {"role": "system", "content": "You are agentsh, a coding agent. " * 100}
MESSAGES = [
    SYSTEM,
    {"role": "user", "content": "first question"},
    {"role": "assistant", "content": "first answer"},
    {"role": "user", "content": "second question"},
]
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


async def _sent(server: ScriptedServer, model: str, **client: Any) -> tuple[str, str]:
    """(path, body) of the request litellm made for ``model``."""
    llm = make_llm_client(server, model=model, max_retries=0, **client)
    with pytest.raises(LLMError):  # Bedrock's path gets a 404: the body is the point
        async for _item in llm.stream(MESSAGES, TOOLS):
            pass
    request = server.requests[-1]
    return request.path, json.dumps(request.body)


@pytest.fixture
def cloud_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAAGENTSHTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "agentsh-test-secret")
    monkeypatch.setenv("AWS_REGION_NAME", "us-east-1")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("model", "marker", "where"),
    [
        ("bedrock/us.anthropic.claude-sonnet-4-20250514-v1:0", "cachePoint", "/converse-stream"),
        ("bedrock/invoke/anthropic.claude-3-5-sonnet-20240620-v1:0", "cache_control", "/invoke"),
    ],
)
async def test_claude_on_bedrock_carries_three_cache_markers(
    scripted_server: ScriptedServer, cloud_keys: None, model: str, marker: str, where: str
) -> None:
    assert needs_cache_markers(model)
    path, body = await _sent(scripted_server, model, api_key=None)
    assert where in path
    assert body.count(marker) == 3  # the system prompt, the previous request's end, the last
    assert "first answer" in body  # the whole conversation, untouched otherwise


@pytest.mark.asyncio
async def test_claude_on_openrouter_carries_markers_and_deepseek_a_plain_prefix(
    scripted_server: ScriptedServer,
) -> None:
    scripted_server.script("ok", "ok", "ok")
    model = "openrouter/anthropic/claude-sonnet-4.5"
    llm = make_llm_client(scripted_server, model=model)
    async for _item in llm.stream(MESSAGES, TOOLS):
        pass
    body = json.dumps(scripted_server.requests[-1].body)
    assert body.count('"cache_control": {"type": "ephemeral"}') == 3
    # DeepSeek (and OpenAI) cache the longest stable prefix by themselves: no marker, and two
    # requests of one conversation start with the same bytes.
    deepseek = make_llm_client(scripted_server, model="deepseek/deepseek-chat")
    assert not needs_cache_markers("deepseek/deepseek-chat")
    for messages in (MESSAGES[:2], MESSAGES):
        async for _item in deepseek.stream(messages, TOOLS):
            pass
    first, second = (r.body for r in scripted_server.requests[-2:])
    assert "cache_control" not in json.dumps(second)
    assert second["tools"] == first["tools"]
    assert second["messages"][: len(first["messages"])] == first["messages"]


@pytest.fixture
def google_service_account(
    scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Application default credentials as a user's service account, whose token_uri is the
    scripted server: litellm's real Vertex AI path (google-auth signs a JWT, trades it for a
    token) runs offline."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    account = {
        "type": "service_account",
        "project_id": "agentsh-test",
        "private_key_id": "k1",
        "private_key": pem,
        "client_email": "agentsh@agentsh-test.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": f"{scripted_server.base_url}/token",
    }
    path = tmp_path / "service-account.json"
    path.write_text(json.dumps(account))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    monkeypatch.setenv("VERTEXAI_PROJECT", "agentsh-test")
    monkeypatch.setenv("VERTEXAI_LOCATION", "us-east5")


def _marked(block: Any) -> bool:
    return isinstance(block, dict) and block.get("cache_control") == {"type": "ephemeral"}


@pytest.mark.asyncio
async def test_claude_on_vertex_ai_carries_three_cache_markers(
    scripted_server: ScriptedServer, google_service_account: None
) -> None:
    model = "vertex_ai/claude-sonnet-4@20250514"
    assert needs_cache_markers(model)
    path, _body = await _sent(scripted_server, model, api_key=None)
    request = scripted_server.requests[-1]
    assert path.endswith(":streamRawPredict?alt=sse") and "/publishers/anthropic/" in path
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    body = request.body
    assert body["anthropic_version"].startswith("vertex-")
    # The system prompt, the end of the previous request, the end of this one; nothing else.
    assert _marked(body["system"][-1])
    first, answer, last = body["messages"]
    assert first["content"][-1]["text"] == "first question" and _marked(first["content"][-1])
    assert not any(_marked(b) for b in answer["content"])
    assert last["content"][-1]["text"] == "second question" and _marked(last["content"][-1])
    assert json.dumps(body).count("cache_control") == 3


@pytest.mark.asyncio
async def test_gemini_on_vertex_ai_gets_a_plain_request_and_no_cache_call(
    scripted_server: ScriptedServer, google_service_account: None
) -> None:
    # Gemini 2.5 caches a stable prefix by itself; markers would make litellm create a
    # cachedContents resource first (another call, billed storage).
    model = "vertex_ai/gemini-2.5-pro"
    assert not needs_cache_markers(model)
    path, body = await _sent(scripted_server, model, api_key=None)
    calls = [r.path for r in scripted_server.requests if not r.path.endswith("/token")]
    assert calls == [path] and path.endswith(":streamGenerateContent?alt=sse")
    assert "cache_control" not in body and "cachedContent" not in body
    assert "first answer" in body and "function_declarations" in body
