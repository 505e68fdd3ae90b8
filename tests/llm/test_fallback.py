"""--fallback-model: which final errors hand a call to the fallback model (the provider is
overloaded or down, or took the request and never answered, after the retries) and which do not
(a rate limit, a bad key, a bad request), and the one notice that names both models."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentsh.events import ErrorKind, Retrying
from agentsh.llm.client import Completion, LLMClient, LLMError, StreamItem
from tests.fakes.fixtures import FakeSleep
from tests.fakes.server import ErrorReply, Reply, ScriptedServer

USER = [{"role": "user", "content": "hello"}]
SPARE = "openai/spare-model"


async def collect(client: LLMClient) -> list[StreamItem]:
    return [item async for item in client.stream(USER)]


def with_spare(client: LLMClient) -> LLMClient:
    client.fallback_model = SPARE  # --fallback-model
    return client


def models(server: ScriptedServer) -> list[str]:
    return [str(r.body["model"]) for r in server.requests]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "late",
    [Reply(text="late", delay_s=2.5), Reply(text="late", stall_s=2.5)],
    ids=["silent-stream", "no-headers"],
)
async def test_a_model_that_keeps_timing_out_hands_over_to_the_fallback(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    fake_sleep: FakeSleep,
    late: Reply,
) -> None:
    # The provider takes each request and sends nothing within the timeout (an opened stream
    # that stays silent, or no answer at all), twice (the request and its one retry): the
    # spare model answers, and keeps answering.
    scripted_server.script(late, late, "from the spare", "again")
    client = with_spare(llm_client_factory(request_timeout_s=1.0, max_retries=1))

    items = await collect(client)

    retries = [i for i in items if isinstance(i, Retrying)]
    assert [(r.fallback_model, r.model) for r in retries] == [
        ("", ""),
        (SPARE, "openai/test-model"),
    ]
    assert retries[-1].reason == "timed out after 1 retry"
    done = items[-1]
    assert isinstance(done, Completion)
    assert (done.text, done.model) == ("from the spare", SPARE)
    assert models(scripted_server) == ["test-model", "test-model", "spare-model"]
    assert len(fake_sleep.delays) == 1  # no wait before the fallback's first request
    await collect(client)
    assert models(scripted_server)[-1] == "spare-model"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (ErrorReply(401, "bad key", type="authentication_error"), ErrorKind.AUTH),
        (ErrorReply(400, "bad request", type="invalid_request_error"), ErrorKind.BAD_REQUEST),
        (ErrorReply(429, "slow down", type="rate_limit_error"), ErrorKind.RATE_LIMIT),
    ],
    ids=["auth", "bad-request", "rate-limit"],
)
async def test_the_users_mistakes_and_rate_limits_do_not_fall_back(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    error: ErrorReply,
    kind: ErrorKind,
) -> None:
    scripted_server.script(*[error] * 3, "never")
    client = with_spare(llm_client_factory(max_retries=2))

    with pytest.raises(LLMError) as caught:
        await collect(client)

    assert caught.value.kind is kind
    assert set(models(scripted_server)) == {"test-model"}


@pytest.mark.asyncio
async def test_an_overloaded_model_falls_back_after_its_retries_naming_both(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
) -> None:
    overloaded = ErrorReply(529, "Overloaded", type="overloaded_error")
    scripted_server.script(overloaded, overloaded, overloaded, "spare answers")
    items = await collect(with_spare(llm_client_factory(max_retries=2)))

    last: Any = [i for i in items if isinstance(i, Retrying)][-1]
    assert (last.model, last.fallback_model) == ("openai/test-model", SPARE)
    assert last.reason == "server error (529) after 2 retries"
    assert models(scripted_server) == ["test-model"] * 3 + ["spare-model"]
