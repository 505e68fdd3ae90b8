"""Pytest fixtures for the fakes: the scripted OpenAI-compatible server and clients pointed at it.

Registered as a plugin by tests/conftest.py, so every test can ask for ``scripted_server``
(a started :class:`~tests.fakes.server.ScriptedServer`, stopped after the test),
``fake_sleep`` (records backoff delays instead of sleeping), ``model_worker`` (model calls
through the model worker process, as the front ends make them) and ``llm_client_factory`` (builds a
real :class:`~agentsh.llm.client.LLMClient` for ``openai/test-model`` against the server with
the recognisable fake key :data:`FAKE_KEY`).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from agentsh.config import ModelSettings
from agentsh.llm.client import LLMClient
from tests.fakes.server import ScriptedServer

# Recognisable in any output: a test that finds it in a message, log or file has found a leak.
FAKE_KEY = "sk-test-AGENTSH-FAKE-KEY-0123456789abcdef"
TEST_MODEL = "openai/test-model"


class FakeSleep:
    """An async ``sleep`` that returns at once and remembers what it was asked to wait."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.fixture(scope="session")
def litellm_loaded() -> None:
    """litellm imported in this test process once, before any test waits for a condition.

    A test that talks to the scripted server runs the real client or agent in-process, and its
    first model call (or the agent's load: the model's facts) imports litellm: 6 s of CPU, 17-26
    s at load 8, past a minute at load 18. Paid inside a test's wait for the agent to be ready
    (``ready()``: 60 s for that reason) it failed only under load; paid here it is the first
    test's setup, and the waits are for what they name."""
    from agentsh.llm.env import import_litellm

    import_litellm()


@pytest.fixture
def scripted_server(litellm_loaded: None) -> Iterator[ScriptedServer]:
    """A scripted server on 127.0.0.1 (free port); script it with ``.script(...)``."""
    server = ScriptedServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def model_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test makes its model calls as a front end does: through the model worker process
    (``agentsh.llm.remote``), not in the test process."""
    from agentsh.llm import remote

    monkeypatch.setattr(remote, "_in_use", True)


@pytest.fixture
def fake_sleep() -> FakeSleep:
    return FakeSleep()


def make_llm_client(
    server: ScriptedServer,
    *,
    sleep: Callable[[float], Awaitable[Any]] | None = None,
    api_key: str | None = FAKE_KEY,
    model: str = TEST_MODEL,
    **settings: Any,
) -> LLMClient:
    """A real LLMClient for ``server``; ``settings`` override ModelSettings fields."""
    base = {"retry_base_delay_s": 0.01, "retry_max_delay_s": 60.0, "request_timeout_s": 30.0}
    return LLMClient(
        model,
        settings=ModelSettings(**(base | settings)),
        api_base=server.base_url,
        api_key=api_key,
        sleep=sleep or asyncio.sleep,
        rng=random.Random(0),
    )


@pytest.fixture
def llm_client_factory(
    scripted_server: ScriptedServer, fake_sleep: FakeSleep
) -> Callable[..., LLMClient]:
    """``factory(**model_settings)`` -> an LLMClient on the scripted server with fake sleep."""

    def factory(**settings: Any) -> LLMClient:
        settings.setdefault("sleep", fake_sleep)
        return make_llm_client(scripted_server, **settings)

    return factory
