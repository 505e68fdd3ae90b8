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
import os
import random
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from agentsh.config import ModelSettings
from agentsh.events import (
    ErrorKind,
    ModelClientReady,
    ModelClientStarting,
    Retrying,
    TextDelta,
    TextEnded,
    ThinkingDelta,
    ToolCallDelta,
)
from agentsh.llm.env import import_litellm, litellm_loaded
from agentsh.llm.failures import (
    LLMError,
    StreamClosed,
    _CallContext,
    classify,
    environment_secrets,
    parse_retry_after,
    redact,
    scrub,
    url_secrets,
)
from agentsh.llm.models import needs_cache_markers, provider_of
from agentsh.llm.stream_end import Count, StreamEnd, skip_rebuild
from agentsh.llm.tokens import TokenCounter
from agentsh.llm.usage import call_cost, parse_usage
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


NO_KEY = "agentsh-no-key"  # sent to a custom OpenAI-compatible api_base when no key is set

# The failure types and the secret scrubbing live in failures.py; importers keep using them
# from here, the model door's one public module.
__all__ = [
    "NO_KEY",
    "Completion",
    "LLMClient",
    "LLMError",
    "StreamClosed",
    "StreamItem",
    "cache_points",
    "environment_secrets",
    "parse_retry_after",
    "redact",
    "scrub",
    "url_secrets",
]

# ModelClientStarting/Ready come only from a client whose calls wait for a process to start
# (agentsh.llm.remote); this module's own client never yields them.
StreamItem = (
    TextDelta
    | ThinkingDelta
    | ToolCallDelta
    | TextEnded
    | Retrying
    | ModelClientStarting
    | ModelClientReady
    | Completion
)
Sleep = Callable[[float], Awaitable[Any]]
# The final errors that hand a call to --fallback-model (LLMClient._fall_back).
_FALLBACK_KINDS = frozenset({ErrorKind.SERVER, ErrorKind.TIMEOUT})


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

    def feed(self, chunk: Any) -> list[TextDelta | ThinkingDelta | ToolCallDelta | TextEnded]:
        out: list[TextDelta | ThinkingDelta | ToolCallDelta | TextEnded] = []
        usage = _get(chunk, "usage")
        if usage is not None:
            self.usage = usage
            self.spoke = True
        choices = _get(chunk, "choices")
        if not choices:
            return out
        choice = choices[0]
        finish = _get(choice, "finish_reason")
        ended = bool(finish) and self.finish is None
        if finish:
            self.finish = finish
        delta = _get(choice, "delta")
        if delta is not None:
            self._feed_delta(delta, out)
        if ended and self.spoke:  # after its own chunk's deltas; not litellm's made-up end
            out.append(TextEnded(str(finish)))
        return out

    def _feed_delta(
        self, delta: Any, out: list[TextDelta | ThinkingDelta | ToolCallDelta | TextEnded]
    ) -> None:
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


def _counter(
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    assembler: _Assembler,
) -> Count:
    """The request's and the reply's tokens as agentsh counts them (tiktoken, the files litellm
    ships), for a stream whose provider reports no usage: what litellm would otherwise count
    after rebuilding the whole reply from its chunks."""

    def count() -> tuple[int, int] | None:
        if not assembler.spoke:
            return None  # nothing came: litellm's end of stream says so (a dropped link)
        counter = TokenCounter(model)
        reply = counter.count("".join(assembler.text)) + counter.count("".join(assembler.thinking))
        for call in assembler.calls:  # a few tokens of framing each, as in a request
            reply += 3 + counter.count(call.name) + counter.count("".join(call.parts))
        return counter.count_messages(messages, tools), reply

    return count


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
        fallback_model: str | None = None,
    ) -> None:
        self.model = model
        #: --fallback-model: takes over when ``model`` stays overloaded or unavailable after
        #: its retries, and keeps the rest of the run (see :meth:`_fall_back`)
        self.fallback_model = fallback_model if fallback_model != model else None
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
        use = self.model
        ctx = self._context(use)
        kwargs = self._stream_kwargs(use, messages, tools, max_tokens)
        litellm = await _load_litellm()
        attempt = 0
        while True:
            assembler = _Assembler()
            response: Any = None
            end: StreamEnd | None = None
            try:
                try:
                    response = await litellm.acompletion(**kwargs)
                    # The last item without litellm's rebuild of the whole reply (0.4-2 s).
                    count = _counter(use, messages, tools, assembler)
                    end = skip_rebuild(response, litellm, count)
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
                if delay is None and use != self.fallback_model and self._fall_back(error):
                    assert self.fallback_model is not None
                    reason = self._reason(error)
                    if attempt:
                        reason += f" after {attempt} {'retry' if attempt == 1 else 'retries'}"
                    failed, use = use, self.fallback_model
                    yield Retrying(attempt, self.settings.max_retries, 0.0, reason, use, failed)
                    ctx = self._context(use)
                    kwargs = self._stream_kwargs(use, messages, tools, max_tokens)
                    attempt = 0
                    continue
                if delay is None:
                    raise self._final(error, attempt) from None
                attempt += 1
                yield Retrying(attempt, self.settings.max_retries, delay, self._reason(error))
                await self._sleep(delay)
                continue
            if use != self.model:  # after a fallback, the fallback model answers from now on
                self.model, self.fallback_model = use, None
            yield self._completion(use, assembler, estimated=end is not None and end.estimated)
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
        return call_cost(model or self.model, usage, self.settings)

    # -- internals ----------------------------------------------------------------------------
    def _context(self, model: str) -> _CallContext:
        base = self._base_for(model)
        secrets = ((self._api_key,) if self._api_key else ()) + url_secrets(base)
        return _CallContext(model, base, secrets, self.settings.request_timeout_s)

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

    def _stream_kwargs(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        max_tokens: int | None,
    ) -> dict[str, Any]:
        kwargs = self._kwargs(model, messages, tools, max_tokens)
        if needs_cache_markers(model):
            kwargs["cache_control_injection_points"] = cache_points(messages)
        kwargs["stream"] = True
        kwargs["stream_options"] = {"include_usage": True}
        return kwargs

    def _fall_back(self, error: LLMError) -> bool:
        """Whether a final ``error`` hands the call to the fallback model: the provider is
        overloaded or unavailable (a 5xx such as Anthropic's 529 or a 503), or took the
        request and never answered (a timeout), after the retries. Not for a rate limit, a
        bad key, a bad request or an unreachable network: another model would not help, or
        would hide the user's mistake, as in Claude Code."""
        return self.fallback_model is not None and error.kind in _FALLBACK_KINDS

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
            case ErrorKind.TIMEOUT:
                return "timed out"
            case _:
                return "network error"

    def _completion(
        self, model: str, assembler: _Assembler, *, estimated: bool = False
    ) -> Completion:
        """The finished reply; ``estimated``: the usage is agentsh's count (the provider
        reported none: :mod:`agentsh.llm.stream_end`)."""
        calls = assembler.tool_calls()
        usage = parse_usage(assembler.usage)
        usage = Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            cost=call_cost(model, usage, self.settings),
            estimated=estimated,
        )
        return Completion(
            text="".join(assembler.text),
            tool_calls=calls,
            usage=usage,
            stop_reason=_stop_reason(assembler.finish, bool(calls)),
            model=model,
            thinking="".join(assembler.thinking),
        )


def cache_points(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Where a turn's request asks the provider to cache (litellm's injection points, turned
    into ``cache_control`` markers): the system prompt (tool schemas come before it, so they
    are cached with it), the end of the previous request (the message before the newest reply:
    a hit even when this step added more blocks than the provider looks back over), and the
    end of this one, for the next request to read. Three of the four markers allowed."""
    points: list[dict[str, Any]] = []
    if messages and messages[0].get("role") == "system":
        points.append({"location": "message", "role": "system"})
    replies = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    if replies and replies[-1] - 1 > 0 and replies[-1] < len(messages) - 1:
        points.append({"location": "message", "index": replies[-1] - 1})
    points.append({"location": "message", "index": -1})
    return points
