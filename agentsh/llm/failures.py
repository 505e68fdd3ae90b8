"""How a model call fails: :class:`LLMError` and the classification of what litellm raised.

Every failure becomes an :class:`LLMError` whose kind the agent branches on (auth, rate limit,
context overflow, bad request, network, timeout, server) and whose message a person understands:
one line in agentsh's words and the provider's, never litellm's labels. API keys are scrubbed
from every message: the exact values of key-like environment variables and anything shaped like
a key.
"""

from __future__ import annotations

import contextlib
import email.utils
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agentsh.errors import AgentshError
from agentsh.events import ErrorKind
from agentsh.llm.models import key_env_var, provider_of


class LLMError(AgentshError):
    """A model call that failed for good. ``message`` is for people and never holds a key."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.kind in _RETRYABLE

    def __repr__(self) -> str:
        return f"LLMError({self.kind.value!r}, {self.message!r}, status={self.status})"


class StreamClosed(AgentshError, ConnectionError):
    """A streamed reply that ended before its first token or its finish (a dropped link)."""


_RETRYABLE = frozenset(
    {ErrorKind.RATE_LIMIT, ErrorKind.SERVER, ErrorKind.NETWORK, ErrorKind.TIMEOUT}
)

# ---------------------------------------------------------------------------------------------
# Secrets

# Common key shapes: OpenAI/Anthropic/DeepSeek (sk-...), Google (AIza...), Groq (gsk_), xAI,
# Hugging Face, GitHub, AWS access keys, bearer tokens.
_KEY_SHAPES = re.compile(
    r"(sk-[A-Za-z0-9_\-]{6,}|AIza[0-9A-Za-z_\-]{20,}|gsk_[A-Za-z0-9]{10,}|xai-[A-Za-z0-9]{10,}"
    r"|hf_[A-Za-z0-9]{10,}|gh[pousr]_[A-Za-z0-9]{10,}|AKIA[0-9A-Z]{16}"
    r"|(?<=Bearer )[A-Za-z0-9._\-]{8,})"
)
# Also the names some providers use that the common suffixes miss: WATSONX_APIKEY, Bedrock's
# AWS_BEARER_TOKEN_BEDROCK, CLARIFAI_PAT; and passwords (PGPASSWORD, MYSQL_PASSWORD).
_SECRET_ENV = re.compile(
    r"(API_?KEY|_TOKEN|_SECRET|SECRET_KEY|ACCESS_KEY|_PAT|PASSWORD|PASSWD)$|_BEARER_TOKEN_"
)
REDACTED = "[redacted]"
# Credentials carried by a URL: a key in its query string (Azure's ``?api-key=``, ``&token=``,
# signed URLs' ``sig=``) or a ``user:password@`` before the host.
_QUERY_SECRET = re.compile(
    r"([?&;](?:[\w-]*(?:key|token|secret|passw(?:or)?d|pwd|auth|sig|signature|credential)s?"
    r"|code)=)[^&#\s'\"<>]+",
    re.IGNORECASE,
)
_URL_USERINFO = re.compile(r"(?<=://)[^/\s:@'\"]+:[^@/\s'\"]+(?=@)")


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The credential values a URL carries (query keys, user:password), to redact wherever
    they turn up."""
    if not url:
        return ()
    found = [m.group()[len(m.group(1)) :] for m in _QUERY_SECRET.finditer(url)]
    found += [m.group() for m in _URL_USERINFO.finditer(url)]
    return tuple(found)


def scrub(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` without ``secrets``, without provider keys from the environment, without
    anything shaped like an API key, and without credentials in URLs."""
    candidates = [s for s in secrets if s and len(s) >= 6]
    text = _KEY_SHAPES.sub(REDACTED, redact(text, (*candidates, *environment_secrets())))
    text = _QUERY_SECRET.sub(lambda m: m.group(1) + REDACTED, text)
    return _URL_USERINFO.sub(REDACTED, text)


def environment_secrets(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values of key- and token-like variables (``*_API_KEY``, ``*_TOKEN``, ...)."""
    environ = os.environ if environ is None else environ
    return tuple(
        value for name, value in environ.items() if _SECRET_ENV.search(name) and len(value) >= 8
    )


def redact(text: str, secrets: Sequence[str]) -> str:
    """``text`` with each exact secret value replaced. No shape matching: tool output must stay
    faithful (a fake key in a test file is code the model may need to edit)."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


# ---------------------------------------------------------------------------------------------
# Error classification

_OVERFLOW_PATTERNS = re.compile(
    "|".join(
        (
            r"prompt is too long",
            r"maximum context length",
            r"context[_ ]length[_ ]exceeded",
            r"context[_ ]window[_ ]exceeded",
            r"exceeds? (the )?(model'?s? )?(maximum )?context (window|length|size)",
            r"too many tokens",
            r"input is too long",
            r"input too long",
            r"reduce the length of the messages",
            r"maximum prompt length",
            r"input token count.*exceeds the maximum",
            r"exceeds the maximum number of tokens",
            r"available context size",
            r"context size has been exceeded",
            r"request too large",
            r"prompt too long",
            r"longer than the model'?s context length",
        )
    ),
    re.IGNORECASE,
)
# litellm and the provider SDKs refuse to send a request without a key; say which variable.
_MISSING_KEY = re.compile(
    r"missing (credentials|[\w ]{0,20}api[ _]key)|api_key client option must be set"
    r"|no (api )?key is set|api[ _]key (is )?(not (found|set)|required)",
    re.IGNORECASE,
)
_NO_PROVIDER = "LLM Provider NOT provided"
_NETWORK_CLASSES = frozenset(
    {
        "APIConnectionError",
        "APITimeoutError",
        "Timeout",
        "TimeoutException",
        "TransportError",
        "NetworkError",
        "ConnectError",
        "ReadError",
        "RemoteProtocolError",
        "ClientConnectionError",
        "ServerDisconnectedError",
        "MidStreamFallbackError",
    }
)
# A timeout while connecting (nothing answered: the network); any other timeout came after the
# provider took the connection (it was slow to answer). Looked for below litellm's own classes:
# its Timeout (status 408, a subclass of openai's APITimeoutError) wraps both, and a provider's
# own 408 reply.
_CONNECT_TIMEOUTS = frozenset({"ConnectTimeout", "ConnectionTimeoutError", "PoolTimeout"})
_TIMEOUTS = frozenset(
    {"APITimeoutError", "TimeoutException", "ReadTimeout", "WriteTimeout", "TimeoutError"}
    | {"ServerTimeoutError", "SocketTimeoutError"}
)
# litellm's own words around a provider's: "<what> Error_str: <the same or the cause>", and the
# advice to its library users; the count of its retries (never any: retries are agentsh's).
_ERROR_STR = re.compile(r"\s*\bError_str:\s*")
_LITELLM_NOISE = re.compile(
    r"\s*Handle with `litellm\.\w+`\.?|\s*,?\s*LiteLLM (Retried|Max Retries): \d+( times)?"
)
_PREFIX = re.compile(
    r"^\s*(litellm\.)?[A-Za-z]*(Error|Exception|Timeout)\s*(:|-)\s*", re.IGNORECASE
)


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 12:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _is_network(exc: BaseException) -> bool:
    for link in _chain(exc):
        names = {cls.__name__ for cls in type(link).__mro__}
        if names & _NETWORK_CLASSES or isinstance(link, OSError | TimeoutError):
            return True
    return False


def _timeout(exc: BaseException) -> str | None:
    """``"connect"`` or ``"read"`` when the call timed out (in connecting, or after), else None."""
    found = None
    for link in _chain(exc):
        if type(link).__module__.startswith("litellm"):
            continue
        names = {cls.__name__ for cls in type(link).__mro__}
        if names & _CONNECT_TIMEOUTS:
            return "connect"
        if names & _TIMEOUTS:
            found = "read"
    return found


def _status(exc: BaseException) -> int | None:
    for name in ("status_code", "status"):
        value = getattr(exc, name, None)
        with contextlib.suppress(TypeError, ValueError):
            if value is not None:
                return int(value)
    return None


def _headers(exc: BaseException) -> dict[str, str]:
    raw = getattr(exc, "litellm_response_headers", None)
    if raw is None:
        response = getattr(exc, "response", None)
        raw = getattr(response, "headers", None)
    if raw is None:
        return {}
    try:
        return {str(k).lower(): str(v) for k, v in raw.items()}
    except (AttributeError, TypeError):
        return {}


def parse_retry_after(headers: dict[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    if "retry-after-ms" in headers:
        with contextlib.suppress(ValueError):
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
    value = headers.get("retry-after", "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _detail(exc: BaseException, secrets: Sequence[str]) -> str:
    """The provider's own words, without litellm's class-name prefixes, short, scrubbed."""
    text = str(getattr(exc, "message", "") or exc) or type(exc).__name__
    for marker in ("\nReceived Model Group=", "Traceback (most recent call last)"):
        text = text.split(marker)[0]
    previous = None
    while previous != text:
        previous = text
        text = _PREFIX.sub("", text, count=1)
    text = _LITELLM_NOISE.sub("", " ".join(text.split()))
    head, *rest = _ERROR_STR.split(text, maxsplit=1)
    tail = rest[0].strip() if rest else ""
    if rest:  # "Request timed out. Error_str: Request timed out." says it once
        same = not tail or tail.strip(" .").lower() in head.lower()
        text = head if same else f"{head.rstrip(' .:')}: {_PREFIX.sub('', tail)}"
    if len(text) > 400:
        text = text[:400] + "..."
    return scrub(text, secrets)


@dataclass(frozen=True, slots=True)
class _CallContext:
    model: str
    api_base: str | None
    secrets: tuple[str, ...]
    timeout_s: float | None = None  # the request's timeout (``request_timeout_s``)


def classify(exc: BaseException, ctx: _CallContext, *, mid_stream: bool = False) -> LLMError:
    """Turn anything litellm raised into an :class:`LLMError` with a clear, key-free message.

    ``mid_stream``: part of the reply had arrived (the error is final either way then).
    """
    if isinstance(exc, LLMError):
        return exc
    status = _status(exc)
    headers = _headers(exc)
    retry_after = parse_retry_after(headers)
    detail = _detail(exc, ctx.secrets)
    names = {cls.__name__ for cls in type(exc).__mro__}
    where = ctx.api_base or provider_of(ctx.model)
    key_var = key_env_var(ctx.model)

    def error(kind: ErrorKind, message: str) -> LLMError:
        return LLMError(kind, scrub(message, ctx.secrets), status, retry_after)

    if _NO_PROVIDER in detail:
        return LLMError(
            ErrorKind.BAD_REQUEST,
            f"agentsh cannot tell which provider serves '{ctx.model}'. Write the model as "
            "provider/name, e.g. openai/gpt-4.1, anthropic/claude-sonnet-4-6 or "
            "ollama_chat/qwen2.5-coder.",
        )
    if _MISSING_KEY.search(detail) and status in (None, 400, 401, 500):
        var = key_var or "the API key variable of this provider"
        return LLMError(
            ErrorKind.AUTH,
            f"No API key is set for {ctx.model}. Set {var} in the environment, or choose "
            "another model with -m.",
        )
    if "ContextWindowExceededError" in names or status == 413:
        return error(
            ErrorKind.CONTEXT_OVERFLOW,
            f"The conversation no longer fits the context window of {ctx.model}"
            f"{_code(status)}: {detail}",
        )
    if status in (401, 403) or names & {"AuthenticationError", "PermissionDeniedError"}:
        if status == 403 or "PermissionDeniedError" in names:
            return error(
                ErrorKind.AUTH,
                f"The provider refused access to {ctx.model} (403): the API key lacks "
                f"permission for it. Provider said: {detail}",
            )
        check = f"Check {key_var}" if key_var else "Check the API key for this provider"
        if ctx.api_base:
            check += f", the key sent to {ctx.api_base}"
        return error(
            ErrorKind.AUTH,
            f"The provider rejected the API key ({status or 401}). {check}. "
            f"Provider said: {detail}",
        )
    if status == 429 or "RateLimitError" in names:
        return error(
            ErrorKind.RATE_LIMIT,
            f"The provider is rate-limiting requests to {ctx.model} (429): {detail}",
        )
    if _OVERFLOW_PATTERNS.search(detail):
        return error(
            ErrorKind.CONTEXT_OVERFLOW,
            f"The conversation no longer fits the context window of {ctx.model}"
            f"{_code(status)}: {detail}",
        )
    if status is not None and status < 500 and status not in (408,) and not _is_network(exc):
        if status == 404 or "NotFoundError" in names:
            return error(
                ErrorKind.BAD_REQUEST,
                f"The provider at {where} does not know model '{ctx.model}' (404). Check the "
                f"model name (-m, AGENTSH_MODEL or [model] name). Provider said: {detail}",
            )
        return error(
            ErrorKind.BAD_REQUEST,
            f"The provider rejected the request for {ctx.model} ({status}): {detail}",
        )
    timeout = _timeout(exc)
    if timeout == "read" or (status == 408 and timeout is None):
        code = None if timeout else status
        message = _timed_out(ctx, where, code, mid_stream)
        return LLMError(ErrorKind.TIMEOUT, message, code, retry_after)
    if timeout == "connect":
        waited = f" after {ctx.timeout_s:g} s" if ctx.timeout_s else ""
        message = (
            f"Could not reach the provider at {where}: the connection timed out{waited}. Check "
            "the network connection and the API base (--api-base, AGENTSH_API_BASE or [model] "
            "api_base)."
        )
        return LLMError(ErrorKind.NETWORK, scrub(message, ctx.secrets), None, retry_after)
    if _is_network(exc):
        if mid_stream:
            message = f"The connection to the provider at {where} dropped mid-reply: {detail}"
        else:
            message = (
                f"Could not reach the provider at {where}: {detail.rstrip('.')}. Check the network "
                "connection and the API base (--api-base, AGENTSH_API_BASE or [model] api_base)."
            )
        return LLMError(ErrorKind.NETWORK, scrub(message, ctx.secrets), None, retry_after)
    if (status is not None and status >= 500) or names & {
        "InternalServerError",
        "ServiceUnavailableError",
        "APIError",
    }:
        return error(
            ErrorKind.SERVER,
            f"The provider had a server error{_code(status)} answering {ctx.model}: {detail}",
        )
    return error(ErrorKind.OTHER, f"The call to {ctx.model} failed: {detail}")


def _timed_out(ctx: _CallContext, where: str, status: int | None, mid_stream: bool) -> str:
    """What a timeout after the provider took the request says (no litellm wording)."""
    within = f" within {ctx.timeout_s:g} s" if ctx.timeout_s else ""
    if status == 408:
        text = f"The provider at {where} gave up on the request for {ctx.model} (408 timeout)."
    elif mid_stream:
        text = f"The provider at {where} stopped sending mid-reply: nothing more came{within}."
    else:
        text = f"The provider at {where} took the request for {ctx.model} but did not answer"
        text += f"{within}."
    return scrub(f"{text} Try again, or raise [model] request_timeout_s.", ctx.secrets)


def _code(status: int | None) -> str:
    return f" ({status})" if status else ""
