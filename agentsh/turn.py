"""One user turn: model calls and tool runs until the model stops, and every way a turn ends.

The agent (:mod:`agentsh.agent`) owns what lasts between turns and drives a turn's events as a
stream; :class:`Turn` is the loop itself. Each step prepares the context, streams the model's
reply, appends it to the log and runs its tool calls (:mod:`agentsh.tool_calls`). A turn always
ends with ``StatusChanged`` then ``TurnEnded``; whatever way it ends (done, a limit, the user's
cancel, a model error, a bug) the log keeps what was received and no tool call is left without
a result.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any, Protocol

from agentsh.context.manager import ContextManager, ContextTooLarge
from agentsh.events import (
    AssistantMessage,
    ErrorKind,
    ErrorOccurred,
    ModelClientReady,
    ModelClientStarting,
    Notice,
    NoticeLevel,
    StatusChanged,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    UsageReported,
)
from agentsh.llm.client import Completion, LLMClient, LLMError
from agentsh.llm.models import no_model_help
from agentsh.session.entries import MessageEntry, Role, StopReason
from agentsh.session.log import SessionError
from agentsh.side_calls import priced_estimate
from agentsh.tool_calls import (
    ToolCallHost,
    ToolCalls,
    TurnState,
    checkpoint,
    emit_mcp_notices,
    parse_arguments,
    summarized,
    tool_context,
)
from agentsh.tools.base import ToolArgumentError
from agentsh.values import Usage

if TYPE_CHECKING:
    from agentsh.system_prompt import SystemPrompt
    from agentsh.tools.memory import MemoryTool

MEMORY_FLUSH_PROMPT = (
    "The conversation above is about to be summarized and its details will leave your context. "
    "If anything in it is worth keeping for future sessions (project facts, commands, "
    "decisions, the user's preferences), save it now with the memory tool. Reply briefly."
)


# A backlog of stream items (a burst from the provider, or the answers the model worker queued
# while this process waited for a core) is all there already: draining it never suspends. Seen
# in CI: 800 queued chunks held the event loop for 290 ms, and keys and frames waited behind
# them. The loops that drain one let the event loop run after SHARE_ITEMS items or SHARE_S of
# work, whichever comes first.
SHARE_ITEMS = 16
SHARE_S = 0.004


class LoopShare:
    """Lets the event loop run other work (keys, frames) every few items of a drained stream."""

    __slots__ = ("_items", "_since")

    def __init__(self) -> None:
        self._items = 0
        self._since = time.perf_counter()

    async def step(self) -> None:
        """One item handled: a turn of the event loop if a share of work is done."""
        self._items += 1
        if self._items < SHARE_ITEMS and time.perf_counter() - self._since < SHARE_S:
            return
        await asyncio.sleep(0)
        self._items = 0
        self._since = time.perf_counter()


class TurnHost(ToolCallHost, Protocol):
    """What a turn uses of its agent (:class:`agentsh.agent.Agent` is one)."""

    llm: LLMClient | None
    context: ContextManager
    prompt: SystemPrompt
    memory_tool: MemoryTool
    max_steps: int
    max_cost_usd: float | None
    spent_usd: float

    @property
    def model(self) -> str | None: ...

    def take_notices(self) -> list[str]: ...

    async def ensure_tokenizer(self) -> None: ...

    def sync_quietly(self) -> None: ...

    async def follow_fallback(self) -> None: ...


class Turn:
    """One run of the loop for one user message; ``state`` is shared with the agent, whose
    cancel looks at it to stop a running tool rather than the task."""

    def __init__(self, host: TurnHost, state: TurnState) -> None:
        self.host = host
        self.state = state
        self.calls = ToolCalls(host, state)

    async def run(self, text: str) -> None:
        """The whole turn for the user's ``text``; never raises but for a cancel's end."""
        host, state = self.host, self.state
        emit = host.emit
        try:
            for notice in host.take_notices():
                emit(Notice(NoticeLevel.WARNING, notice))
            if host.llm is None:
                emit(ErrorOccurred(ErrorKind.NO_MODEL, no_model_help(host.env.user.config_file)))
                self._end(TurnOutcome.ERROR, error="no model is configured")
                return
            await host.ensure_tokenizer()
            is_first = not any(
                isinstance(e, MessageEntry) and e.role is Role.USER
                for e in host.session.current_path()
            )
            user = host.session.append_message(Role.USER, text)
            await checkpoint(host, "user")
            if is_first:
                host.prompt.set_first_message(text)
                for notice in host.take_notices():
                    emit(Notice(NoticeLevel.WARNING, notice))
            emit(TurnStarted(user.id, text))
            host.memory_tool.new_turn()
            await self._mcp_ready()
            outcome = await self._steps()
            if outcome is TurnOutcome.ABORTED:
                self._end(TurnOutcome.ABORTED, text=state.final_text)
            elif outcome is TurnOutcome.DONE:
                self._end(TurnOutcome.DONE, text=state.final_text, limit=state.limit)
        except asyncio.CancelledError:
            await self._record_abort()
            self._end(TurnOutcome.ABORTED, text=state.text)
        except SessionError as exc:
            emit(ErrorOccurred(ErrorKind.OTHER, f"The session log could not be written: {exc}"))
            self._end(TurnOutcome.ERROR, error=str(exc))
        except Exception as exc:  # noqa: BLE001 - last resort: a bug ends this turn, not the app
            # Keep what was received and answer every call, so the log stays whole and the
            # next turn can go on; the message names the exception so the bug can be found.
            message = f"Internal error: {type(exc).__name__}: {exc}".rstrip(": ")
            received = state.text
            with contextlib.suppress(SessionError):
                if state.streaming:
                    self._record_error(message)
                self.calls.answer_unrun("not run: the turn stopped on an internal error")
            emit(ErrorOccurred(ErrorKind.OTHER, message))
            self._end(TurnOutcome.ERROR, text=received, error=message)
        finally:
            host.sync_quietly()

    def _end(self, outcome: TurnOutcome, text: str = "", error: str = "", limit: str = "") -> None:
        """The last two events of every turn: the status as the turn leaves it, then the end
        (front ends take the status from the stream, never by asking after the turn)."""
        self.host.emit(StatusChanged(self.host.context.status()))
        self.host.emit(TurnEnded(outcome, text=text, error=error, limit=limit))

    async def _steps(self) -> TurnOutcome | None:
        """Model calls and tool runs until the model stops; None when an error was emitted."""
        host, state = self.host, self.state
        emit = host.emit
        overflow_retried = False
        assert host.llm is not None
        for _step in range(host.max_steps):
            if host.max_cost_usd is not None and host.spent_usd >= host.max_cost_usd:
                state.limit = "max_budget_usd"
                emit(
                    Notice(
                        NoticeLevel.WARNING,
                        f"Stopped: ${host.spent_usd:.4f} spent, the budget is "
                        f"${host.max_cost_usd:.4f}.",
                        limit=state.limit,
                    )
                )
                return TurnOutcome.DONE
            system = host.prompt.render()
            schemas = host.tools.schemas()
            if host.context.needs_memory_flush():
                await self._memory_flush(system)
            try:
                messages = await host.context.prepare(system, schemas)
            except ContextTooLarge as exc:
                emit(ErrorOccurred(ErrorKind.CONTEXT_OVERFLOW, str(exc)))
                self._end(TurnOutcome.ERROR, text=state.text, error=str(exc))
                return None
            state.sent_tokens = host.context.status().used
            try:
                completion = await self._stream(messages, schemas)
            except LLMError as err:
                if err.kind is ErrorKind.CONTEXT_OVERFLOW and not overflow_retried:
                    overflow_retried = True
                    state.text = ""
                    if await host.context.on_overflow():
                        continue
                # A reply cut off after some of it arrived was (at least partly) generated,
                # and is billed; an error before any output is not.
                usage = await self._estimate() if state.received else None
                self._record_error(err.message, usage)
                emit(ErrorOccurred(err.kind, err.message, err.status))
                self._end(TurnOutcome.ERROR, text=state.text, error=err.message)
                return None
            entry = host.session.append_message(
                Role.ASSISTANT,
                completion.text,
                tool_calls=tuple(summarized(host.tools, c) for c in completion.tool_calls),
                model=completion.model or host.llm.model,
                usage=completion.usage,
                stop_reason=completion.stop_reason,
            )
            state.text = ""
            state.streaming = False
            await host.follow_fallback()  # --fallback-model answered: its window from now on
            host.context.record_usage(entry)
            emit(
                AssistantMessage(
                    entry.id,
                    entry.content,
                    tuple((c.id, c.name, c.arguments) for c in entry.tool_calls),
                    completion.stop_reason.value,
                )
            )
            usage = completion.usage
            host.spent_usd += usage.cost
            emit(UsageReported.of(usage, model=entry.model or ""))
            emit(StatusChanged(host.context.status()))
            if entry.content:
                state.final_text = entry.content
            if not entry.tool_calls:
                return TurnOutcome.DONE
            state.pending_calls = list(entry.tool_calls)
            for call in entry.tool_calls:
                await self.calls.run(call)
                if host.tool_cancel.is_set():
                    self.calls.answer_unrun("not run: the user cancelled the turn")
                    return TurnOutcome.ABORTED
            state.pending_calls = []
        state.limit = "max_turns"
        emit(
            Notice(
                NoticeLevel.WARNING,
                f"Stopped after {host.max_steps} model calls in one turn; send a message to go on.",
                limit=state.limit,
            )
        )
        return TurnOutcome.DONE

    async def _stream(
        self, messages: list[dict[str, Any]], schemas: list[dict[str, Any]]
    ) -> Completion:
        host, state = self.host, self.state
        assert host.llm is not None
        state.text = ""
        state.received = []
        state.streaming = True
        state.unsent = False
        completion: Completion | None = None
        max_tokens = host.env.settings.model.max_output_tokens or None
        stream = host.llm.stream(messages, schemas or None, max_tokens=max_tokens)
        share = LoopShare()
        async with contextlib.aclosing(stream):  # a cancel closes the HTTP stream at once
            async for item in stream:
                if isinstance(item, Completion):
                    completion = item
                else:
                    if isinstance(item, TextDelta):
                        state.text += item.text
                        state.received.append(item.text)
                    elif isinstance(item, ThinkingDelta):
                        state.received.append(item.text)
                    elif isinstance(item, ToolCallDelta):
                        state.received.append(item.name + item.arguments_fragment)
                    elif isinstance(item, ModelClientStarting | ModelClientReady):
                        state.unsent = isinstance(item, ModelClientStarting)
                    host.emit(item)
                    await share.step()
        state.streaming = False
        if completion is None:  # pragma: no cover - the client always ends with a Completion
            raise LLMError(ErrorKind.OTHER, "The provider ended the reply without finishing it.")
        return completion

    # -- endings ----------------------------------------------------------------------------

    async def _record_abort(self) -> None:
        """Keep what a cancelled turn received, and leave no tool call without a result. A
        reply cancelled mid-stream reports no usage, yet its prompt was sent and its text
        generated: both are counted (an estimate, marked so in the log) and reported."""
        state = self.state
        try:
            if state.streaming:
                # Cancelled while the model client still started: the request never went out.
                sent = not state.unsent or bool(state.received)
                usage = await self._estimate() if sent else None
                self.host.session.append_message(
                    Role.ASSISTANT,
                    state.text,
                    model=self.host.model,
                    stop_reason=StopReason.ABORTED,
                    usage=usage,
                )
                state.streaming = False
                if usage is not None:
                    self._report(usage)
            self.calls.answer_unrun("not run: the user cancelled the turn")
        except SessionError:
            pass  # the log is unwritable; the turn is over either way

    def _record_error(self, message: str, usage: Usage | None = None) -> None:
        """The failed reply stays visible in the log, with what streamed before the error."""
        self.host.session.append_message(
            Role.ASSISTANT,
            self.state.text,
            model=self.host.model,
            stop_reason=StopReason.ERROR,
            error=message,
            usage=usage,
        )
        self.state.text = ""
        self.state.streaming = False
        if usage is not None:
            self._report(usage)

    async def _estimate(self) -> Usage:
        """The usage of the model call in flight as agentsh counts it: the request's tokens as
        the accounting measured them when it was sent, and the tokens of what arrived; priced
        as a reply's would be, within a short bound (:func:`priced_estimate`)."""
        host, state = self.host, self.state
        received = "".join(state.received)
        usage = Usage(
            input_tokens=state.sent_tokens,
            output_tokens=host.context.accounting.count(received) if received else 0,
            estimated=True,
        )
        return await priced_estimate(host.llm, usage)

    def _report(self, usage: Usage) -> None:
        """An estimated usage counts where a provider's does: spend, and the usage event."""
        self.host.spent_usd += usage.cost
        self.host.emit(UsageReported.of(usage, model=self.host.model or ""))

    # -- before the first request, before a summary ------------------------------------------

    async def _mcp_ready(self) -> None:
        """Before the first request of a turn, servers still starting get their start-up time,
        so the tool list the model sees does not change under it a moment later."""
        mcp = self.host.mcp
        if mcp is None:
            return
        starting = mcp.starting()
        if starting:
            names = ", ".join(starting)
            plural = "s" if len(starting) > 1 else ""
            self.host.emit(
                Notice(NoticeLevel.INFO, f"Waiting for MCP server{plural} {names} to start")
            )
            await mcp.wait_until_started()
        emit_mcp_notices(self.host)

    async def _count_cancelled_save(self, sent: int) -> None:
        """A memory save cancelled before it answered was still sent: its tokens count on its
        own record (estimated; priced within 2 s, as a cancelled reply's), as a cancelled
        summary call's do. It counted nothing."""
        host = self.host
        usage = await priced_estimate(host.llm, Usage(input_tokens=sent, estimated=True))
        host.spent_usd += usage.cost
        host.context.record_side_call("memory save", usage, "cancelled before it answered")

    async def _memory_flush(self, system: str) -> None:
        """Before a Summarize, one extra model turn with only the memory tool (opt-in), so what
        matters can be saved before the details leave the context. The exchange itself is not
        logged: only the memory writes it makes last."""
        host = self.host
        host.context.mark_memory_flushed()
        assert host.llm is not None
        # Without compacting: the point is to let the model see the turns about to leave.
        messages = await host.context.prepare(system, [], compact=False)
        messages.append({"role": "user", "content": MEMORY_FLUSH_PROMPT})
        sent = host.context.status().used + host.context.accounting.count(MEMORY_FLUSH_PROMPT)
        host.emit(Notice(NoticeLevel.INFO, "Saving to memory before the context is summarized"))
        completion: Completion | None = None
        memory_tool = host.memory_tool
        try:
            stream = host.llm.stream(messages, [memory_tool.schema()], max_tokens=1024)
            async with contextlib.aclosing(stream):
                async for item in stream:
                    if isinstance(item, Completion):
                        completion = item
        except LLMError as err:
            host.emit(Notice(NoticeLevel.WARNING, f"Memory save skipped: {err.message}"))
            return
        except asyncio.CancelledError:
            await self._count_cancelled_save(sent)
            raise
        if completion is None:
            return
        host.spent_usd += completion.usage.cost
        # Nothing of the exchange is logged: its usage is, on its own record.
        host.context.record_side_call("memory save", completion.usage, "before a summary")
        for call in completion.tool_calls:
            if call.name != memory_tool.name:
                continue
            arguments = parse_arguments(call.arguments)
            if isinstance(arguments, str):
                continue
            try:
                params = memory_tool.parse(arguments)
            except ToolArgumentError:
                continue
            result = await memory_tool.run(params, tool_context(host, call.id))
            host.emit(Notice(NoticeLevel.INFO, f"memory: {result.content.splitlines()[0]}"))
