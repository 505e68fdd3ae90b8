"""Error classification: every failure an LLMError with a clear kind and a key-free message."""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest

from agentsh.config import ModelSettings
from agentsh.events import ErrorKind
from agentsh.llm.client import LLMClient, LLMError, scrub
from tests.fakes.fixtures import FAKE_KEY, FakeSleep
from tests.fakes.server import ErrorReply, ScriptedServer, overflow_error

USER = [{"role": "user", "content": "hello"}]


async def fail(client: LLMClient) -> LLMError:
    with pytest.raises(LLMError) as caught:
        async for _ in client.stream(USER):
            pass
    return caught.value


def assert_no_key(error: LLMError) -> None:
    for text in (error.message, str(error), repr(error), *map(str, error.args)):
        assert FAKE_KEY not in text
        assert "AGENTSH-FAKE-KEY" not in text


@pytest.mark.asyncio
async def test_401_is_an_auth_error_naming_the_variable_and_never_the_key(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    # Providers (and proxies) echo the key they rejected; it must not reach the user.
    scripted_server.script(
        ErrorReply(
            401,
            message=f"Incorrect API key provided: {FAKE_KEY}. Authorization: Bearer {FAKE_KEY}",
            type="invalid_request_error",
            code="invalid_api_key",
        )
    )

    error = await fail(llm_client_factory())

    assert error.kind == ErrorKind.AUTH
    assert error.status == 401
    assert error.message.startswith("The provider rejected the API key (401). Check OPENAI_API_KEY")
    assert "[redacted]" in error.message
    assert_no_key(error)
    assert error.__cause__ is None
    assert error.__suppress_context__


@pytest.mark.asyncio
async def test_a_key_from_the_environment_is_scrubbed_too(
    scripted_server: ScriptedServer,
    fake_sleep: FakeSleep,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env_key = "custom-provider-token-42424242"
    monkeypatch.setenv("ANTHROPIC_API_KEY", env_key)
    scripted_server.script(ErrorReply(403, message=f"key {env_key} may not use this model"))
    client = LLMClient(
        "openai/test-model",
        settings=ModelSettings(),
        api_base=scripted_server.base_url,
        api_key="dummy-key-value",
        sleep=fake_sleep,
    )

    error = await fail(client)

    assert error.kind == ErrorKind.AUTH
    assert "(403)" in error.message
    assert env_key not in error.message


@pytest.mark.asyncio
async def test_openai_context_length_exceeded_is_an_overflow(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    scripted_server.script(overflow_error(tokens=210_000, window=128_000))

    error = await fail(llm_client_factory())

    assert error.kind == ErrorKind.CONTEXT_OVERFLOW
    assert "maximum context length is 128000 tokens" in error.message
    assert error.message.startswith("The conversation no longer fits the context window")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, "prompt is too long: 215000 tokens > 200000 maximum"),  # Anthropic
        (400, "The input token count (1200000) exceeds the maximum number of tokens allowed"),
        (400, "Please reduce the length of the messages or completion."),  # Groq, Mistral
        (500, "the request exceeds the available context size, try increasing it"),  # llama.cpp
        (413, "request_too_large"),
    ],
)
async def test_provider_overflow_messages_and_413_are_overflows(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    status: int,
    message: str,
) -> None:
    scripted_server.script(ErrorReply(status, message=message))

    error = await fail(llm_client_factory(max_retries=0))

    assert error.kind == ErrorKind.CONTEXT_OVERFLOW


@pytest.mark.asyncio
async def test_a_tokens_per_minute_429_is_a_rate_limit_not_an_overflow(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    scripted_server.script(ErrorReply(429, message="Request too large: too many tokens per min"))

    error = await fail(llm_client_factory(max_retries=0))

    assert error.kind == ErrorKind.RATE_LIMIT


@pytest.mark.asyncio
async def test_an_unknown_model_404_is_a_bad_request_that_says_so(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    scripted_server.script(ErrorReply(404, message="The model `test-model` does not exist"))

    error = await fail(llm_client_factory())

    assert error.kind == ErrorKind.BAD_REQUEST
    assert "does not know model 'openai/test-model' (404)" in error.message


@pytest.mark.asyncio
async def test_a_closed_port_is_a_network_error_after_retries(
    llm_client_factory: Callable[..., LLMClient], fake_sleep: FakeSleep
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = LLMClient(
        "openai/test-model",
        settings=ModelSettings(max_retries=2, retry_base_delay_s=0.01),
        api_base=f"http://127.0.0.1:{port}/v1",
        api_key=FAKE_KEY,
        sleep=fake_sleep,
    )

    error = await fail(client)

    assert error.kind == ErrorKind.NETWORK
    assert error.message.startswith(f"Could not reach the provider at http://127.0.0.1:{port}/v1")
    assert len(fake_sleep.delays) == 2
    assert_no_key(error)


def test_scrub_removes_given_secrets_and_common_key_shapes() -> None:
    text = (
        "key=my-own-secret-value openai sk-proj-abcdef123456 google AIzaSyA1234567890abcdefghijk "
        "groq gsk_abcdefghijklmnop header Bearer eyJhbGciOiJIUzI1NiJ9.payload"
    )

    cleaned = scrub(text, ["my-own-secret-value"])

    for secret in (
        "my-own-secret-value",
        "sk-proj-abcdef123456",
        "AIzaSyA1234567890abcdefghijk",
        "gsk_abcdefghijklmnop",
        "eyJhbGciOiJIUzI1NiJ9",
    ):
        assert secret not in cleaned
    assert cleaned.count("[redacted]") == 5
    assert scrub("nothing secret here, 401 sk-") == "nothing secret here, 401 sk-"


def test_the_client_repr_never_shows_the_key() -> None:
    client = LLMClient("openai/x", settings=ModelSettings(), api_key=FAKE_KEY)

    assert FAKE_KEY not in repr(client)
    assert FAKE_KEY not in str(client)


@pytest.mark.asyncio
async def test_a_missing_key_names_the_variable_to_set(fake_sleep: FakeSleep) -> None:
    client = LLMClient("anthropic/claude-sonnet-4-6", settings=ModelSettings(), sleep=fake_sleep)

    error = await fail(client)

    assert error.kind == ErrorKind.AUTH
    assert error.message.startswith("No API key is set for anthropic/claude-sonnet-4-6.")
    assert "Set ANTHROPIC_API_KEY" in error.message
    assert fake_sleep.delays == []


@pytest.mark.asyncio
async def test_a_model_without_a_provider_says_how_to_write_one(fake_sleep: FakeSleep) -> None:
    client = LLMClient("mystery-model", settings=ModelSettings(), sleep=fake_sleep)

    error = await fail(client)

    assert error.kind == ErrorKind.BAD_REQUEST
    assert "cannot tell which provider serves 'mystery-model'" in error.message


@pytest.mark.asyncio
async def test_a_local_openai_compatible_server_needs_no_key(
    scripted_server: ScriptedServer, llm_client_factory: Callable[..., LLMClient]
) -> None:
    scripted_server.script("served without a key")

    done = await llm_client_factory(api_key=None).complete(USER)

    assert done.text == "served without a key"
    assert scripted_server.requests[0].headers["authorization"] == "Bearer agentsh-no-key"


def test_key_variables_every_provider_names_are_secrets() -> None:
    """Names the common suffixes missed: litellm's WATSONX_APIKEY, Bedrock's
    AWS_BEARER_TOKEN_BEDROCK, CLARIFAI_PAT, and passwords; a `bash` command's `env` output
    reached the model with them in clear (README: provider keys are redacted)."""
    from agentsh.llm.client import environment_secrets

    secret = {
        "WATSONX_APIKEY": "wx-0123456789",
        "AWS_BEARER_TOKEN_BEDROCK": "bedrock-abcdefgh",
        "CLARIFAI_PAT": "pat-abcdefgh12",
        "PGPASSWORD": "hunter2hunter2",
        "OPENAI_API_KEY": "sk-0123456789",
    }
    plain = {
        "HOME": "/home/someone",
        "SSH_AUTH_SOCK": "/tmp/ssh-XXXX/agent.1",
        "KEYBOARD_LAYOUT": "us-international",
        "PATH": "/usr/local/bin:/usr/bin",
        "TOKENIZERS_PARALLELISM": "false-ish",
    }
    found = set(environment_secrets({**secret, **plain}))
    assert found == set(secret.values())
