"""Timeouts: a slow provider is a timeout (it took the request), an unreachable one a network
error, and either says so in one clean line without litellm's wording."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from agentsh.events import ErrorKind
from agentsh.llm.client import LLMClient, LLMError
from agentsh.llm.failures import _CallContext, classify
from tests.fakes.fixtures import FAKE_KEY, FakeSleep
from tests.fakes.server import Reply, ScriptedServer

USER = [{"role": "user", "content": "hello"}]
CTX = _CallContext("openai/test-model", "http://127.0.0.1:9/v1", (FAKE_KEY,), 30.0)
LITELLM_NOISE = ("Error_str", "APITimeoutError", "litellm", "LiteLLM", "Handle with")


def assert_clean(error: LLMError) -> None:
    assert "\n" not in error.message
    for noise in LITELLM_NOISE:
        assert noise not in error.message
    assert error.message.lower().count("timed out") <= 1
    assert FAKE_KEY not in error.message


@pytest.mark.asyncio
async def test_a_server_slower_than_the_timeout_is_a_timeout_said_once(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    fake_sleep: FakeSleep,
) -> None:
    # The server accepts the connection and starts its answer, then sends nothing for longer
    # than the client waits: litellm says "Request timed out. Error_str: Request timed out."
    scripted_server.script(Reply(text="late", delay_s=2.5), Reply(text="late", delay_s=2.5))
    client = llm_client_factory(request_timeout_s=1.0, max_retries=1)

    with pytest.raises(LLMError) as caught:
        async for _ in client.stream(USER):
            pass

    error = caught.value
    assert error.kind is ErrorKind.TIMEOUT
    assert error.retryable
    assert len(fake_sleep.delays) == 1  # retried once, as a slow provider may answer next time
    base = scripted_server.base_url
    assert error.message == (
        f"The provider at {base} took the request for openai/test-model but did not answer "
        "within 1 s. Try again, or raise [model] request_timeout_s. (gave up after 1 retry)"
    )
    assert_clean(error)


def _raised(make: Callable[[], BaseException], cause: BaseException | None) -> BaseException:
    """``make()`` raised while handling ``cause``, as litellm raises its wrappers."""
    try:
        try:
            if cause is not None:
                raise cause
        finally:
            raise make()
    except BaseException as exc:  # noqa: BLE001
        return exc


def _litellm_timeout(error_str: str) -> Callable[[], BaseException]:
    import litellm

    message = f"APITimeoutError - Request timed out. Error_str: {error_str}"
    return lambda: litellm.Timeout(message, model="test-model", llm_provider="openai")


def test_a_connect_timeout_is_a_network_error_without_litellm_wording() -> None:
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    cause = httpx.ConnectTimeout("timed out", request=request)

    error = classify(_raised(_litellm_timeout("Request timed out."), cause), CTX)

    assert error.kind is ErrorKind.NETWORK
    assert error.message.startswith(
        "Could not reach the provider at http://127.0.0.1:9/v1: the connection timed out after "
        "30 s. Check the network connection"
    )
    assert_clean(error)


def test_a_read_timeout_mid_reply_says_the_stream_stalled() -> None:
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    cause = httpx.ReadTimeout("Timeout on reading data from socket", request=request)

    error = classify(_raised(_litellm_timeout("Request timed out."), cause), CTX, mid_stream=True)

    assert error.kind is ErrorKind.TIMEOUT
    assert error.message == (
        "The provider at http://127.0.0.1:9/v1 stopped sending mid-reply: nothing more came "
        "within 30 s. Try again, or raise [model] request_timeout_s."
    )


def test_a_providers_own_408_is_a_timeout_with_its_code() -> None:
    import litellm

    response = httpx.Response(408, request=httpx.Request("POST", "http://127.0.0.1:9/v1"))
    exc = litellm.BadRequestError("request timeout", "test-model", "openai", response)
    exc.status_code = 408

    error = classify(exc, CTX)

    assert error.kind is ErrorKind.TIMEOUT
    assert error.status == 408
    assert "(408 timeout)" in error.message
    assert_clean(error)


@pytest.mark.parametrize(
    ("raw", "detail"),
    [
        # litellm repeats the provider's words after its own label, or adds the cause
        (
            "APITimeoutError - Request timed out. Error_str: Request timed out.",
            "Request timed out.",
        ),
        (
            "APITimeoutError - Request timed out. Error_str: ReadTimeout",
            "Request timed out: ReadTimeout",
        ),
        # advice to litellm's users, and its retry counts, are not the provider's words
        (
            "AnthropicException - Overloaded. Handle with `litellm.InternalServerError`.",
            "Overloaded.",
        ),
        ("OpenAIException - upstream died LiteLLM Retried: 2 times", "upstream died"),
    ],
)
def test_litellm_labels_and_repeats_leave_the_message(raw: str, detail: str) -> None:
    import litellm

    exc = litellm.InternalServerError(raw, llm_provider="openai", model="test-model")

    error = classify(exc, CTX)

    assert error.kind is ErrorKind.SERVER
    assert error.message.endswith(f"answering openai/test-model: {detail}")
    for noise in LITELLM_NOISE:
        assert noise not in error.message
