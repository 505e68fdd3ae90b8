"""agentsh's event stream in Claude Code's shapes (``--output-format json|stream-json``).

Tools built for ``claude -p`` (the Claude Agent SDK, CI wrappers) read: a ``system``/``init``
line, ``assistant`` and ``user`` messages whose content blocks are ``text``, ``thinking``,
``tool_use`` and ``tool_result``, and a ``result`` object with ``subtype``, ``is_error``,
``result``, ``total_cost_usd``, ``num_turns``, durations, ``usage`` and ``terminal_reason``
(why the turn's loop ended: ``completed``, ``max_turns``, ``aborted_streaming`` or
``aborted_tools`` for an interrupt while the model or a tool ran, ``prompt_too_long``,
``model_error``) and ``api_error_status`` (the HTTP status of a failed model call's answer,
null otherwise); every line carries the ``session_id``. :class:`ClaudeCodeStream` turns agent
events into those lines. What Claude Code
has no shape for (notices, retries, compactions) becomes a ``system`` line with its own subtype,
which such consumers accept and pass over. agentsh's own event names stay available as
``--output-format events``.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from agentsh.events import (
    AssistantMessage,
    CompactionFinished,
    ErrorKind,
    ErrorOccurred,
    Event,
    Notice,
    Retrying,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    UsageReported,
)
from agentsh.values import loads_json

#: agentsh's stop reasons -> Anthropic's, which is what Claude Code reports.
STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "aborted": "end_turn",
    "error": "end_turn",
}
#: the Claude Code version whose stream-json protocol agentsh speaks (the SDK's minimum)
CLAUDE_CODE_PROTOCOL = "2.0.0"
#: the limit that stopped a turn -> Claude Code's result subtype.
LIMIT_SUBTYPES = {"max_turns": "error_max_turns", "max_budget_usd": "error_max_budget_usd"}


def usage_json(
    input_tokens: int, output_tokens: int, cache_read: int, cache_write: int
) -> dict[str, Any]:
    """Anthropic's usage object: ``input_tokens`` excludes what was read from or written to
    the cache (agentsh's own ``input_tokens`` excludes the reads but holds the writes)."""
    return {
        "input_tokens": max(0, input_tokens - cache_write),
        "cache_creation_input_tokens": cache_write,
        "cache_read_input_tokens": cache_read,
        "output_tokens": output_tokens,
    }


@dataclass(slots=True)
class Tally:
    """Tokens and cost added up (of a turn, or of one model in it)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0

    def add(self, event: UsageReported) -> None:
        self.input_tokens += event.input_tokens
        self.output_tokens += event.output_tokens
        self.cache_read += event.cache_read_tokens
        self.cache_write += event.cache_write_tokens
        self.cost += event.cost

    def model_usage(self) -> dict[str, Any]:
        """One model's entry in the result's ``modelUsage``."""
        return {
            "inputTokens": max(0, self.input_tokens - self.cache_write),
            "outputTokens": self.output_tokens,
            "cacheReadInputTokens": self.cache_read,
            "cacheCreationInputTokens": self.cache_write,
            "costUSD": round(self.cost, 6),
        }


@dataclass(slots=True)
class RunTotals(Tally):
    """What one turn (one ``result``) adds up."""

    started: float = field(default_factory=time.monotonic)
    api_ms: float = 0.0
    turns: int = 0
    answer: str = ""
    outcome: TurnOutcome = TurnOutcome.ERROR
    limit: str = ""
    errors: list[str] = field(default_factory=list)
    stop_reason: str | None = None
    #: per model that answered (two after a --fallback-model took over)
    models: dict[str, Tally] = field(default_factory=dict)
    error_kind: ErrorKind | None = None  # of the last error the turn met
    api_error_status: int | None = None  # the HTTP status of a failed model call's answer
    tools_running: int = 0  # started, not finished yet
    interrupted_in: str = ""  # "tools" or "streaming": where the user stopped the turn

    @property
    def terminal_reason(self) -> str | None:
        """Why the turn's loop ended, in Claude Code's words; None where it has none (a spent
        --max-budget-usd, an error that is not the model's)."""
        if self.limit:
            return "max_turns" if self.limit == "max_turns" else None
        if self.outcome is TurnOutcome.DONE:
            return "completed"
        if self.outcome is TurnOutcome.ABORTED:
            tools = (self.interrupted_in or ("tools" if self.tools_running else "")) == "tools"
            return "aborted_tools" if tools else "aborted_streaming"
        if self.error_kind is ErrorKind.CONTEXT_OVERFLOW:
            return "prompt_too_long"
        return None if self.error_kind in (None, ErrorKind.OTHER) else "model_error"

    @property
    def is_error(self) -> bool:
        return bool(self.limit) or self.outcome is not TurnOutcome.DONE

    @property
    def subtype(self) -> str:
        if self.limit:
            return LIMIT_SUBTYPES.get(self.limit, "error_during_execution")
        return "success" if self.outcome is TurnOutcome.DONE else "error_during_execution"


class ClaudeCodeStream:
    """Turns agent events into Claude Code message objects (dicts, one per output line)."""

    def __init__(self, session_id: str, model: str, *, partial: bool = False) -> None:
        self.session_id = session_id
        self.model = model
        self.partial = partial  # --include-partial-messages: stream_event lines for deltas
        self.totals = RunTotals()
        self._thinking = ""
        self._pending: dict[str, Any] | None = None  # an assistant message awaiting its usage
        self._step_started = time.monotonic()
        self._block_open = ""  # the partial content block being streamed: "text"/"thinking"
        self._block_index = -1

    # -- lines ----------------------------------------------------------------------------------

    def init(
        self,
        *,
        cwd: str,
        tools: list[str],
        permission_mode: str,
        version: str,
        mcp_servers: list[dict[str, str]] | None = None,
    ) -> dict[str, Any]:
        return self._line(
            {
                "type": "system",
                "subtype": "init",
                "cwd": cwd,
                "tools": tools,
                "mcp_servers": mcp_servers or [],
                "model": self.model,
                "permissionMode": permission_mode,
                "slash_commands": [],
                "apiKeySource": "none",
                "output_style": "default",
                "agents": [],
                "skills": [],
                "plugins": [],
                # The protocol level agentsh speaks (the Claude Agent SDK checks it); agentsh's
                # own version is beside it.
                "claude_code_version": CLAUDE_CODE_PROTOCOL,
                "agentsh_version": version,
            }
        )

    def start_turn(self) -> None:
        self.totals = RunTotals()
        self._step_started = time.monotonic()

    def note_interrupt(self) -> None:
        """The user stops the turn now: while a tool runs (or waits for its approval), or
        while the model is asked."""
        totals = self.totals
        if not totals.interrupted_in:
            totals.interrupted_in = "tools" if totals.tools_running else "streaming"

    def feed(self, event: Event) -> list[dict[str, Any]]:
        """The lines ``event`` completes (often none: deltas accumulate)."""
        out: list[dict[str, Any]] = []
        if self._pending is not None and not isinstance(event, UsageReported):
            out.append(self._flush())
        match event:
            case TurnStarted():
                self._step_started = time.monotonic()
            case ThinkingDelta():
                self._thinking += event.text
                out += self._partial_delta("thinking", event.text)
            case TextDelta():
                out += self._partial_delta("text", event.text)
            case ToolCallDelta():
                out += self._close_block()
            case AssistantMessage():
                out += self._close_block()
                out += self._partial_end()
                self.totals.api_ms += (time.monotonic() - self._step_started) * 1000
                self.totals.turns += 1
                self.totals.stop_reason = STOP_REASONS.get(event.stop_reason, "end_turn")
                self._pending = self._assistant(event)
                self._thinking = ""
            case UsageReported():
                self._add_usage(event)
                if self._pending is not None:
                    if event.model:  # the model that answered (--fallback-model's, after one)
                        self._pending["message"]["model"] = event.model
                    self._pending["message"]["usage"] = usage_json(
                        event.input_tokens,
                        event.output_tokens,
                        event.cache_read_tokens,
                        event.cache_write_tokens,
                    )
                    out.append(self._flush())
            case ToolStarted():
                self.totals.tools_running += 1
            case ToolFinished():
                self.totals.tools_running = max(0, self.totals.tools_running - 1)
                out.append(self._tool_result(event))
                self._step_started = time.monotonic()
            case Retrying(fallback_model=fallback):
                out.append(
                    self._line(
                        {
                            "type": "system",
                            "subtype": "api_retry",
                            "attempt": event.attempt,
                            "max_retries": event.max_attempts,
                            "retry_delay_ms": round(event.delay_s * 1000),
                            "error": event.reason,
                            # the next attempt's model, when it is --fallback-model's
                            **({"fallback_model": fallback} if fallback else {}),
                        }
                    )
                )
            case CompactionFinished():
                out.append(
                    self._line(
                        {
                            "type": "system",
                            "subtype": "compact_boundary",
                            "compact_metadata": {
                                "trigger": "auto",
                                "pre_tokens": event.tokens_before,
                                "post_tokens": event.tokens_after,
                                "tier": event.tier.value,
                                # agentsh's: where the turns went (None: pruning only)
                                "archive_file": event.archive_file or None,
                                "summary_file": event.summary_file or None,
                            },
                        }
                    )
                )
            case Notice():
                out.append(
                    self._line(
                        {
                            "type": "system",
                            "subtype": "notice",
                            "level": event.level.value,
                            "text": event.text,
                        }
                    )
                )
            case ErrorOccurred():
                self.totals.errors.append(event.message)
                self.totals.error_kind = event.kind
                self.totals.api_error_status = event.status
            case TurnEnded():
                self.totals.outcome = event.outcome
                self.totals.answer = event.text
                self.totals.limit = event.limit
                if event.error and event.error not in self.totals.errors:
                    self.totals.errors.append(event.error)
            case _:
                pass
        return out

    def result(self, denials: list[dict[str, Any]]) -> dict[str, Any]:
        totals = self.totals
        data: dict[str, Any] = {
            "type": "result",
            "subtype": totals.subtype,
            "is_error": totals.is_error,
            "duration_ms": round((time.monotonic() - totals.started) * 1000),
            "duration_api_ms": round(totals.api_ms),
            "num_turns": totals.turns,
            "result": totals.answer,
            "stop_reason": totals.stop_reason,
            "session_id": self.session_id,
            "total_cost_usd": round(totals.cost, 6),
            "usage": usage_json(
                totals.input_tokens, totals.output_tokens, totals.cache_read, totals.cache_write
            ),
            "modelUsage": {
                model: tally.model_usage()
                for model, tally in (totals.models or {self.model: Tally()}).items()
            },
            "permission_denials": denials,
            "api_error_status": totals.api_error_status,
            "uuid": str(uuid.uuid4()),
        }
        if (reason := totals.terminal_reason) is not None:
            data["terminal_reason"] = reason
        if totals.is_error:
            errors = list(totals.errors)
            if totals.outcome is TurnOutcome.ABORTED:
                errors.append("interrupted")
            data["errors"] = errors
        return data

    # -- pieces ---------------------------------------------------------------------------------

    def _line(self, data: dict[str, Any]) -> dict[str, Any]:
        data.setdefault("uuid", str(uuid.uuid4()))
        data["session_id"] = self.session_id
        return data

    def _assistant(self, event: AssistantMessage) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if self._thinking:
            content.append({"type": "thinking", "thinking": self._thinking, "signature": ""})
        if event.text:
            content.append({"type": "text", "text": event.text})
        for call_id, name, arguments in event.tool_calls:
            content.append(
                {"type": "tool_use", "id": call_id, "name": name, "input": _input(arguments)}
            )
        return self._line(
            {
                "type": "assistant",
                "message": {
                    "id": f"msg_{event.entry_id}",
                    "type": "message",
                    "role": "assistant",
                    "model": self.model,
                    "content": content,
                    "stop_reason": STOP_REASONS.get(event.stop_reason, "end_turn"),
                    "stop_sequence": None,
                    "usage": usage_json(0, 0, 0, 0),
                },
                "parent_tool_use_id": None,
            }
        )

    def _tool_result(self, event: ToolFinished) -> dict[str, Any]:
        return self._line(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": event.call_id,
                            "content": event.content,
                            "is_error": event.is_error,
                        }
                    ],
                },
                "parent_tool_use_id": None,
            }
        )

    def _flush(self) -> dict[str, Any]:
        pending, self._pending = self._pending, None
        assert pending is not None
        return pending

    def _add_usage(self, event: UsageReported) -> None:
        self.totals.add(event)
        # a compaction's summary call names no model: it counts for the model of the run
        self.totals.models.setdefault(event.model or self.model, Tally()).add(event)

    # -- partial messages (Anthropic's raw stream events) -----------------------------------------

    def _partial_delta(self, kind: str, text: str) -> list[dict[str, Any]]:
        if not self.partial:
            return []
        out: list[dict[str, Any]] = []
        if self._block_index < 0:
            out.append(
                self._event(
                    {
                        "type": "message_start",
                        "message": {
                            "type": "message",
                            "role": "assistant",
                            "model": self.model,
                            "content": [],
                        },
                    }
                )
            )
        if self._block_open != kind:
            out += self._close_block()
            self._block_index += 1
            self._block_open = kind
            block = {"type": kind, kind: ""} if kind == "thinking" else {"type": "text", "text": ""}
            out.append(
                self._event(
                    {
                        "type": "content_block_start",
                        "index": self._block_index,
                        "content_block": block,
                    }
                )
            )
        delta = (
            {"type": "thinking_delta", "thinking": text}
            if kind == "thinking"
            else {"type": "text_delta", "text": text}
        )
        out.append(
            self._event({"type": "content_block_delta", "index": self._block_index, "delta": delta})
        )
        return out

    def _close_block(self) -> list[dict[str, Any]]:
        if not self.partial or not self._block_open:
            return []
        self._block_open = ""
        return [self._event({"type": "content_block_stop", "index": self._block_index})]

    def _partial_end(self) -> list[dict[str, Any]]:
        if not self.partial or self._block_index < 0:
            return []
        self._block_index = -1
        return [self._event({"type": "message_stop"})]

    def _event(self, event: dict[str, Any]) -> dict[str, Any]:
        return self._line({"type": "stream_event", "event": event, "parent_tool_use_id": None})


def _input(arguments: str) -> dict[str, Any]:
    try:
        value = loads_json(arguments or "{}")
    except json.JSONDecodeError:
        return {"_invalid_arguments": arguments}
    return value if isinstance(value, dict) else {"_invalid_arguments": arguments}
