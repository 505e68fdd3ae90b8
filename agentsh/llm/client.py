"""The model client: one streamed (or whole) chat completion, with retries, errors and cost.

:class:`LLMClient` wraps ``litellm.acompletion``. :meth:`LLMClient.stream` yields the reply as
typed events (text, reasoning and tool-call deltas, :class:`~agentsh.events.Retrying` before
each backoff) and finishes with exactly one :class:`Completion`: the text, the tool calls
assembled across chunks (arguments delivered verbatim even when they are not valid JSON: the
session validates them), usage with cost, and the stop reason. Rate limits, 5xx and network
failures (a stream that ends before its first token included) are retried with exponential
backoff and jitter, honouring Retry-After, but only until the first delta has been yielded, so
output is never duplicated. Every failure surfaces as an
:class:`LLMError` whose kind the agent branches on and whose message a person understands; API
keys are scrubbed from every message. Closing the generator or cancelling its task closes the
HTTP stream at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import os
import random
import re
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from agentsh.config import ModelSettings
from agentsh.errors import AgentshError
from agentsh.events import ErrorKind, Retrying, TextDelta, ThinkingDelta, ToolCallDelta
from agentsh.llm.env import import_litellm, litellm_loaded
from agentsh.llm.models import key_env_var, model_info, provider_of
from agentsh.values import StopReason, ToolCall, Usage


@dataclass(frozen=True, slots=True)
class Completion:
    """A finished reply. ``tool_calls`` arguments are the raw JSON text the model sent."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    stop_reason: StopReason
    model: str
    thinking: str = ""


StreamItem = TextDelta | ThinkingDelta | ToolCallDelta | Retrying | Completion
Sleep = Callable[[float], Awaitable[Any]]


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


NO_KEY = "agentsh-no-key"  # sent to a custom OpenAI-compatible api_base when no key is set
_RETRYABLE = frozenset({ErrorKind.RATE_LIMIT, ErrorKind.SERVER, ErrorKind.NETWORK})

# ---------------------------------------------------------------------------------------------
# Secrets

# Common key shapes: OpenAI/Anthropic/DeepSeek (sk-...), Google (AIza...), Groq (gsk_), xAI,
# Hugging Face, GitHub, AWS access keys, bearer tokens.
_KEY_SHAPES = re.compile(
    r"(sk-[A-Za-z0-9_\-]{6,}|AIza[0-9A-Za-z_\-]{20,}|gsk_[A-Za-z0-9]{10,}|xai-[A-Za-z0-9]{10,}"
    r"|hf_[A-Za-z0-9]{10,}|gh[pousr]_[A-Za-z0-9]{10,}|AKIA[0-9A-Z]{16}"
    r"|(?<=Bearer )[A-Za-z0-9._\-]{8,})"
)
_SECRET_ENV = re.compile(r"(API_KEY|_TOKEN|_SECRET|SECRET_KEY|ACCESS_KEY)$")
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
    text = " ".join(text.split())
    if len(text) > 400:
        text = text[:400] + "..."
    return scrub(text, secrets)


@dataclass(frozen=True, slots=True)
class _CallContext:
    model: str
    api_base: str | None
    secrets: tuple[str, ...]


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
    if _is_network(exc) or status == 408:
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


def _code(status: int | None) -> str:
    return f" ({status})" if status else ""


# ---------------------------------------------------------------------------------------------
# Assembling a streamed reply


@dataclass(slots=True)
class _PendingCall:
    index: int
    call_id: str
    name: str
    parts: list[str]


_STOP_REASONS = {
    "stop": StopReason.STOP,
    "end_turn": StopReason.STOP,
    "tool_calls": StopReason.TOOL_CALLS,
    "function_call": StopReason.TOOL_CALLS,
    "tool_use": StopReason.TOOL_CALLS,
    "length": StopReason.LENGTH,
    "max_tokens": StopReason.LENGTH,
}


def _stop_reason(finish: str | None, has_calls: bool) -> StopReason:
    reason = _STOP_REASONS.get(finish or "", StopReason.STOP)
    if has_calls and reason == StopReason.STOP:
        return StopReason.TOOL_CALLS  # some providers say "stop" after tool calls
    return reason


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


class _Assembler:
    """Collects deltas into the final text and tool calls, emitting events as it goes."""

    __slots__ = ("calls", "finish", "slot_of", "spoke", "text", "thinking", "usage")

    def __init__(self) -> None:
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.calls: list[_PendingCall] = []
        self.slot_of: dict[int, int] = {}  # provider index -> position in self.calls
        self.finish: str | None = None
        self.usage: Any = None
        # Whether anything came from the provider: when its stream breaks off, litellm still
        # ends it with a made-up "stop" chunk of its own, which carries no delta and no usage.
        self.spoke = False

    def feed(self, chunk: Any) -> list[TextDelta | ThinkingDelta | ToolCallDelta]:
        out: list[TextDelta | ThinkingDelta | ToolCallDelta] = []
        usage = _get(chunk, "usage")
        if usage is not None:
            self.usage = usage
            self.spoke = True
        choices = _get(chunk, "choices")
        if not choices:
            return out
        choice = choices[0]
        finish = _get(choice, "finish_reason")
        if finish:
            self.finish = finish
        delta = _get(choice, "delta")
        if delta is None:
            return out
        if any(
            _get(delta, k) is not None
            for k in ("role", "content", "tool_calls", "reasoning_content")
        ):
            self.spoke = True
        reasoning = _get(delta, "reasoning_content")
        if reasoning:
            self.thinking.append(reasoning)
            out.append(ThinkingDelta(reasoning))
        content = _get(delta, "content")
        if content:
            self.text.append(content)
            out.append(TextDelta(content))
        for raw in _get(delta, "tool_calls") or ():
            event = self._feed_call(raw)
            if event is not None:
                out.append(event)
        return out

    def _feed_call(self, raw: Any) -> ToolCallDelta | None:
        index = _get(raw, "index")
        index = int(index) if isinstance(index, int) else len(self.slot_of)
        call_id = _get(raw, "id") or ""
        function = _get(raw, "function")
        name = (_get(function, "name") if function is not None else None) or ""
        fragment = (_get(function, "arguments") if function is not None else None) or ""
        if not isinstance(fragment, str):  # some providers send the object itself
            import json

            fragment = json.dumps(fragment)
        slot = self.slot_of.get(index)
        pending = self.calls[slot] if slot is not None else None
        # A different id at a known index is a new call (providers that reuse index 0).
        if pending is None or (call_id and pending.call_id and call_id != pending.call_id):
            pending = _PendingCall(index, call_id or _new_call_id(), name, [])
            self.slot_of[index] = len(self.calls)
            self.calls.append(pending)
            if fragment:
                pending.parts.append(fragment)
            return ToolCallDelta(index, pending.call_id, pending.name, fragment)
        if name and not pending.name:
            pending.name = name
        if not fragment and not name:
            return None
        if fragment:
            pending.parts.append(fragment)
        return ToolCallDelta(index, pending.call_id, pending.name, fragment)

    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(
            ToolCall(id=c.call_id, name=c.name, arguments="".join(c.parts) or "{}")
            for c in self.calls
        )

    @property
    def started(self) -> bool:
        return bool(self.text or self.thinking or self.calls)


def _new_call_id() -> str:
    return "call_" + os.urandom(6).hex()


# ---------------------------------------------------------------------------------------------
# The client


async def _load_litellm() -> ModuleType:
    """litellm; the first import (seconds) runs in a thread so the event loop keeps going."""
    if litellm_loaded():
        return import_litellm()
    return await asyncio.to_thread(import_litellm)


class LLMClient:
    """Calls one model through litellm. Safe to share across turns; not across event loops."""

    def __init__(
        self,
        model: str,
        *,
        settings: ModelSettings,
        api_base: str | None = None,
        api_key: str | None = None,
        sleep: Sleep = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.model = model
        self.settings = settings
        self.api_base = api_base or settings.api_base or None
        self._api_key = api_key
        self._sleep = sleep
        self._rng = rng or random.Random()

    def __repr__(self) -> str:  # never show the key
        return f"LLMClient(model={self.model!r}, api_base={self.api_base!r})"

    # -- public API ---------------------------------------------------------------------------
    async def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        max_tokens: int | None = None,
    ) -> AsyncGenerator[StreamItem, None]:
        """Stream one reply: deltas, :class:`Retrying` notes, then exactly one Completion.

        Raises :class:`LLMError`. Use ``contextlib.aclosing`` (or ``async for`` to the end) so
        that breaking out early closes the HTTP stream at once.
        """
        ctx = self._context(self.model)
        kwargs = self._kwargs(self.model, messages, tools, max_tokens)
        kwargs["stream"] = True
        kwargs["stream_options"] = {"include_usage": True}
        litellm = await _load_litellm()
        attempt = 0
        while True:
            assembler = _Assembler()
            response: Any = None
            try:
                try:
                    response = await litellm.acompletion(**kwargs)
                    async for chunk in response:
                        for event in assembler.feed(chunk):
                            yield event
                    if not assembler.spoke:
                        # The stream ended with nothing in it: the connection dropped before
                        # the first token, which is worth a retry, not an empty answer.
                        raise StreamClosed("the provider closed the stream before the reply")
                finally:
                    if response is not None:
                        with contextlib.suppress(Exception):
                            await response.aclose()
            except Exception as exc:  # noqa: BLE001 - litellm raises many unrelated types
                # (Cancellation and generator close are BaseExceptions: they pass untouched.)
                error = classify(exc, ctx, mid_stream=assembler.started)
                if assembler.started:
                    raise error from None
                delay = self._retry_delay(error, attempt)
                if delay is None:
                    raise self._final(error, attempt) from None
                attempt += 1
                yield Retrying(attempt, self.settings.max_retries, delay, self._reason(error))
                await self._sleep(delay)
                continue
            yield self._completion(self.model, assembler)
            return

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        max_tokens: int | None = None,
        model: str | None = None,
        on_retry: Callable[[Retrying], None] | None = None,
    ) -> Completion:
        """One whole (non-streamed) reply, with the same retries and errors as :meth:`stream`."""
        use = model or self.model
        ctx = self._context(use)
        kwargs = self._kwargs(use, messages, None, max_tokens)
        litellm = await _load_litellm()
        attempt = 0
        while True:
            try:
                response = await litellm.acompletion(**kwargs)
            except Exception as exc:  # noqa: BLE001 - litellm raises many unrelated types
                error = classify(exc, ctx)
                delay = self._retry_delay(error, attempt)
                if delay is None:
                    raise self._final(error, attempt) from None
                attempt += 1
                if on_retry is not None:
                    reason = self._reason(error)
                    on_retry(Retrying(attempt, self.settings.max_retries, delay, reason))
                await self._sleep(delay)
                continue
            assembler = _Assembler()
            choice = (_get(response, "choices") or [None])[0]
            message = _get(choice, "message")
            assembler.usage = _get(response, "usage")
            assembler.finish = _get(choice, "finish_reason")
            if message is not None:
                if content := _get(message, "content"):
                    assembler.text.append(str(content))
                if reasoning := _get(message, "reasoning_content"):
                    assembler.thinking.append(str(reasoning))
                for i, call in enumerate(_get(message, "tool_calls") or ()):
                    function = _get(call, "function")
                    assembler._feed_call({"index": i, "id": _get(call, "id"), "function": function})
            return self._completion(use, assembler)

    def cost(self, usage: Usage, model: str | None = None) -> float:
        """USD for ``usage``: config overrides first, then litellm's prices, else 0."""
        return _cost(model or self.model, usage, self.settings)

    # -- internals ----------------------------------------------------------------------------
    def _context(self, model: str) -> _CallContext:
        base = self._base_for(model)
        secrets = ((self._api_key,) if self._api_key else ()) + url_secrets(base)
        return _CallContext(model, base, secrets)

    def _base_for(self, model: str) -> str | None:
        # A summary model from another provider must not be sent to this model's server.
        if model == self.model or provider_of(model) == provider_of(self.model):
            return self.api_base
        return None

    def _kwargs(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        max_tokens: int | None,
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "timeout": self.settings.request_timeout_s,
            "max_retries": 0,  # retries are ours: counted, announced, never after output
            "drop_params": True,
        }
        if tools:
            kwargs["tools"] = tools
        limit = max_tokens or self.settings.max_output_tokens
        if limit:
            kwargs["max_tokens"] = limit
        base = self._base_for(model)
        if base:
            kwargs["api_base"] = base
        if self._api_key and base == self.api_base:
            kwargs["api_key"] = self._api_key
        elif base and provider_of(model) == "openai" and not os.environ.get("OPENAI_API_KEY"):
            # Local OpenAI-compatible servers (vLLM, llama.cpp, LM Studio) need no key, but the
            # SDK refuses to send a request without one. A server that does want one says 401.
            kwargs["api_key"] = NO_KEY
        return kwargs

    def _retry_delay(self, error: LLMError, attempt: int) -> float | None:
        """Seconds before the next attempt, or None when ``error`` is final."""
        s = self.settings
        if not error.retryable or attempt >= s.max_retries:
            return None
        if error.retry_after is not None:
            # Honour the provider's wait up to our cap; past it, waiting would stall the user.
            wait = float(error.retry_after)
            return wait if wait <= s.retry_max_delay_s else None
        backoff = min(s.retry_max_delay_s, s.retry_base_delay_s * (2**attempt))
        return float(backoff * (0.5 + self._rng.random() / 2))  # "equal jitter"

    def _final(self, error: LLMError, attempt: int) -> LLMError:
        if (
            error.retryable
            and error.retry_after is not None
            and (error.retry_after > self.settings.retry_max_delay_s)
        ):
            error.message += (
                f" The provider asked to wait {error.retry_after:.0f} s, longer than"
                f" retry_max_delay_s ({self.settings.retry_max_delay_s:.0f} s); try again later."
            )
        elif attempt:
            error.message += f" (gave up after {attempt} {'retry' if attempt == 1 else 'retries'})"
        error.args = (error.message,)
        return error

    @staticmethod
    def _reason(error: LLMError) -> str:
        match error.kind:
            case ErrorKind.RATE_LIMIT:
                return "rate limited (429)"
            case ErrorKind.SERVER:
                return f"server error ({error.status})" if error.status else "server error"
            case _:
                return "network error"

    def _completion(self, model: str, assembler: _Assembler) -> Completion:
        calls = assembler.tool_calls()
        usage = _usage(assembler.usage)
        usage = Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            cost=_cost(model, usage, self.settings),
        )
        return Completion(
            text="".join(assembler.text),
            tool_calls=calls,
            usage=usage,
            stop_reason=_stop_reason(assembler.finish, bool(calls)),
            model=model,
            thinking="".join(assembler.thinking),
        )


def _usage(raw: Any) -> Usage:
    """Our Usage from litellm's: input excludes cache reads (they are counted apart)."""
    if raw is None:
        return Usage()
    prompt = int(_get(raw, "prompt_tokens") or 0)
    completion = int(_get(raw, "completion_tokens") or 0)
    details = _get(raw, "prompt_tokens_details")
    cache_read = int((_get(details, "cached_tokens") if details is not None else 0) or 0)
    cache_read = cache_read or int(_get(raw, "cache_read_input_tokens") or 0)
    cache_write = int(_get(raw, "cache_creation_input_tokens") or 0)
    return Usage(
        input_tokens=max(0, prompt - cache_read),
        output_tokens=completion,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )


def _cost(model: str, usage: Usage, settings: ModelSettings) -> float:
    in_override = settings.input_cost_per_mtok
    out_override = settings.output_cost_per_mtok
    prompt_cost = completion_cost = 0.0
    if in_override < 0 or out_override < 0:
        info = model_info(model)
        if info.known:
            litellm = import_litellm()
            try:
                prompt_cost, completion_cost = litellm.cost_per_token(
                    model=model,
                    prompt_tokens=usage.input_tokens + usage.cache_read_tokens,
                    completion_tokens=usage.output_tokens,
                    cache_read_input_tokens=usage.cache_read_tokens,
                    cache_creation_input_tokens=usage.cache_write_tokens,
                )
            except Exception:  # noqa: BLE001 - an unpriced model costs 0, never a crash
                prompt_cost = completion_cost = 0.0
    if in_override >= 0:
        prompt_cost = (usage.input_tokens + usage.cache_read_tokens) * in_override / 1_000_000
    if out_override >= 0:
        completion_cost = usage.output_tokens * out_override / 1_000_000
    return float(prompt_cost) + float(completion_cost)
