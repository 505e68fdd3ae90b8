"""The benchmarks' paced endpoint answers as a provider does, so a benchmark measures the path
real replies take through agentsh."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentsh.config import ModelSettings
from agentsh.llm.client import Completion, LLMClient
from tests.fakes.fixtures import FAKE_KEY

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from benchlib import PacedServer


@pytest.mark.asyncio
async def test_the_paced_server_sends_the_usage_chunk_agentsh_asks_for(
    litellm_loaded: None,
) -> None:
    # agentsh asks for stream_options.include_usage, as providers answer with a usage chunk
    # after the finish; without it the client's end of a reply is not the one users get.
    server = PacedServer(["Hello", " paced", " world"], interval=0.001)
    try:
        client = LLMClient(
            "openai/test-model",
            settings=ModelSettings(max_retries=0),
            api_base=server.base_url,
            api_key=FAKE_KEY,
        )
        messages = [{"role": "user", "content": "say hello " * 20}]
        items = [item async for item in client.stream(messages)]
    finally:
        server.close()
    (completion,) = [item for item in items if isinstance(item, Completion)]
    assert completion.text == "Hello paced world"
    assert server.usage_chunks == 1
    assert completion.usage.output_tokens == len("Hello paced world") // 4
    assert completion.usage.input_tokens > 20  # chars/4 of what was sent
    assert not completion.usage.estimated
