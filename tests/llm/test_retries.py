"""Retries: backoff with jitter on 429/5xx/network errors, Retry-After, never after output."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from agentsh.events import ErrorKind, Retrying, TextDelta, TextEnded
from agentsh.llm.client import Completion, LLMClient, LLMError, StreamItem, parse_retry_after
from tests.fakes.fixtures import FakeSleep
from tests.fakes.server import ErrorReply, Hangup, ScriptedServer

USER = [{"role": "user", "content": "hello"}]


async def collect(client: LLMClient) -> list[StreamItem]:
    return [item async for item in client.stream(USER)]


@pytest.mark.asyncio
async def test_429_then_500_then_success_is_retried_and_announced(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    fake_sleep: FakeSleep,
) -> None:
    scripted_server.script(ErrorReply(429, retry_after="7"), ErrorReply(500), "finally")
    client = llm_client_factory(retry_base_delay_s=2.0, retry_max_delay_s=60.0, max_retries=3)

    items = await collect(client)

    retries = [i for i in items if isinstance(i, Retrying)]
    assert [(r.attempt, r.max_attempts) for r in retries] == [(1, 3), (2, 3)]
    assert retries[0].reason == "rate limited (429)"
    assert retries[1].reason == "server error (500)"
    # Retry-After is honoured exactly; the 500 backs off 2 s * 2^1 with equal jitter (50-100 %).
    assert retries[0].delay_s == 7.0
    assert 2.0 <= retries[1].delay_s <= 4.0
    assert fake_sleep.delays == [r.delay_s for r in retries]
    assert isinstance(items[-1], Completion)
    assert items[-1].text == "finally"
    assert len(scripted_server.requests) == 3
    # Every Retrying precedes any content.
    assert all(isinstance(i, Retrying) for i in items[:2])


@pytest.mark.asyncio
async def test_backoff_grows_exponentially_up_to_the_cap(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    fake_sleep: FakeSleep,
) -> None:
    scripted_server.script(*[ErrorReply(503)] * 5, "ok")
    client = llm_client_factory(retry_base_delay_s=1.0, retry_max_delay_s=5.0, max_retries=5)

    await collect(client)

    bounds = [(0.5, 1.0), (1.0, 2.0), (2.0, 4.0), (2.5, 5.0), (2.5, 5.0)]
    assert len(fake_sleep.delays) == 5
    for delay, (low, high) in zip(fake_sleep.delays, bounds, strict=True):
        assert low <= delay <= high


@pytest.mark.asyncio
async def test_giving_up_after_max_retries_raises_the_last_error(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    fake_sleep: FakeSleep,
) -> None:
    scripted_server.script(*[ErrorReply(502, message="bad gateway")] * 3)
    client = llm_client_factory(max_retries=2)

    with pytest.raises(LLMError) as caught:
        await collect(client)

    assert caught.value.kind == ErrorKind.SERVER
    assert caught.value.status == 502
    assert "bad gateway" in caught.value.message
    assert "gave up after 2 retries" in caught.value.message
    assert len(scripted_server.requests) == 3
    assert len(fake_sleep.delays) == 2


@pytest.mark.asyncio
async def test_zero_max_retries_fails_on_the_first_error(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    fake_sleep: FakeSleep,
) -> None:
    scripted_server.script(ErrorReply(429), "never sent")

    with pytest.raises(LLMError) as caught:
        await collect(llm_client_factory(max_retries=0))

    assert caught.value.kind == ErrorKind.RATE_LIMIT
    assert fake_sleep.delays == []
    assert scripted_server.pending == 1


@pytest.mark.asyncio
async def test_a_retry_after_longer_than_the_cap_fails_at_once_and_says_how_long(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    fake_sleep: FakeSleep,
) -> None:
    scripted_server.script(ErrorReply(429, retry_after="600"), "never sent")

    with pytest.raises(LLMError) as caught:
        await collect(llm_client_factory(retry_max_delay_s=60.0))

    assert caught.value.kind == ErrorKind.RATE_LIMIT
    assert caught.value.retry_after == 600.0
    assert "wait 600 s" in caught.value.message
    assert fake_sleep.delays == []


@pytest.mark.asyncio
async def test_retry_after_as_an_http_date_is_honoured(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    fake_sleep: FakeSleep,
) -> None:
    when = datetime.now(UTC) + timedelta(seconds=30)
    scripted_server.script(ErrorReply(503, retry_after=format_datetime(when, usegmt=True)), "ok")

    await collect(llm_client_factory())

    (delay,) = fake_sleep.delays
    assert 25.0 <= delay <= 30.0


@pytest.mark.asyncio
async def test_client_errors_are_not_retried(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    fake_sleep: FakeSleep,
) -> None:
    scripted_server.script(ErrorReply(400, message="messages: bad role"), "never sent")

    with pytest.raises(LLMError) as caught:
        await collect(llm_client_factory())

    assert caught.value.kind == ErrorKind.BAD_REQUEST
    assert fake_sleep.delays == []
    assert len(scripted_server.requests) == 1


@pytest.mark.asyncio
async def test_a_connection_dropped_before_any_output_is_retried(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    fake_sleep: FakeSleep,
) -> None:
    scripted_server.script(Hangup(), "recovered")

    items = await collect(llm_client_factory())

    assert [i.reason for i in items if isinstance(i, Retrying)] == ["network error"]
    assert isinstance(items[-1], Completion)
    assert items[-1].text == "recovered"


@pytest.mark.asyncio
async def test_a_stream_closed_before_its_first_token_is_retried(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    fake_sleep: FakeSleep,
) -> None:
    """The provider answered 200, started the event stream and the connection dropped: the
    stream simply ended, and an empty reply was taken for the answer."""
    scripted_server.script(Hangup(opened=True), "recovered")

    items = await collect(llm_client_factory())

    assert [i.reason for i in items if isinstance(i, Retrying)] == ["network error"]
    assert isinstance(items[-1], Completion) and items[-1].text == "recovered"
    assert len(scripted_server.requests) == 2
    # The end litellm makes up for the empty stream is not the reply's end: that is announced
    # once, by the reply that came.
    assert [type(i) for i in items if isinstance(i, Retrying | TextEnded)] == [Retrying, TextEnded]


@pytest.mark.asyncio
async def test_a_connection_dropped_after_output_began_is_not_retried(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    fake_sleep: FakeSleep,
) -> None:
    scripted_server.script(Hangup(after_chunks=3), "would duplicate the output")
    received: list[str] = []

    with pytest.raises(LLMError) as caught:
        async for item in llm_client_factory().stream(USER):
            assert not isinstance(item, Retrying)
            if isinstance(item, TextDelta):
                received.append(item.text)

    assert received, "the partial reply reached the consumer"
    assert caught.value.kind == ErrorKind.NETWORK
    assert "dropped mid-reply" in caught.value.message
    assert len(scripted_server.requests) == 1
    assert fake_sleep.delays == []


def test_parse_retry_after_reads_milliseconds_seconds_and_dates() -> None:
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after": "12"}) == 12.0
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=0.0) == (
        datetime(2015, 10, 21, 7, 28, tzinfo=UTC).timestamp()
    )
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # past
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
