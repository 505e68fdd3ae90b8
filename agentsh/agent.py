"""The turn loop: user input -> context -> model -> tools -> log, as one stream of events.

``Agent.run(text)`` is an async iterator of :mod:`agentsh.events`. Work happens in a task that
pushes events into a queue the iterator drains, so tools (streaming bash output, approval
requests) and the context manager (compaction progress) can emit events from anywhere in the
turn. Every step is also an entry in the session log, written before the event that announces
it, so whatever a front end shows is already durable.

Cancelling (Esc) keeps what was received: a cancelled stream becomes an assistant entry marked
``aborted`` holding the text so far; a cancelled tool run keeps its partial output; calls that
never ran get a result saying so, so the log never holds an orphan tool call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agentsh.checkpoints.checkpointer import Checkpointer
from agentsh.checkpoints.session_files import SessionFiles
from agentsh.config import ApprovalMode, Environment
from agentsh.context.engine import SummaryReply
from agentsh.context.manager import ContextManager, ContextTooLarge
from agentsh.context.undo import UndoResult, undo_compaction
from agentsh.errors import AgentshError
from agentsh.events import (
    AssistantMessage,
    ContextStatus,
    ErrorKind,
    ErrorOccurred,
    Event,
    Notice,
    NoticeLevel,
    StatusChanged,
    TextDelta,
    Tier,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
    UsageReported,
)
from agentsh.instructions import TOUCHING_TOOLS, NestedInstructions
from agentsh.llm.client import Completion, LLMClient, LLMError, environment_secrets, redact
from agentsh.llm.models import api_base_for, model_info, no_model_help
from agentsh.llm.tokens import TokenCounter, estimate_tokens
from agentsh.mcp.mcp_manager import McpManager
from agentsh.mcp.servers_config import ServerSpec
from agentsh.mcp.state import McpOverview
from agentsh.mcp.tools import McpToolSource
from agentsh.memory.curated import CuratedMemory, MemorySnapshot
from agentsh.session.entries import (
    AnyEntry,
    BranchSummaryEntry,
    EntryAppended,
    MessageEntry,
    ModelChangeEntry,
    Role,
    StopReason,
    ToolCall,
    Usage,
)
from agentsh.session.log import SessionError
from agentsh.session.session import Session
from agentsh.system_prompt import SystemPrompt
from agentsh.tools.approval import Approver, Denial
from agentsh.tools.base import (
    Effect,
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolRegistry,
    ToolResult,
    resolve_path,
)
from agentsh.tools.builtin import session_tools
from agentsh.tools.host import ToolHost
from agentsh.tools.memory import MemoryTool
from agentsh.tools.rules import ToolRules

DEFAULT_MAX_STEPS = 200
MAX_SUMMARY_CHARS = 300  # a tool call's header, as stored in the log

_DONE = object()

MEMORY_FLUSH_PROMPT = (
    "The conversation above is about to be summarized and its details will leave your context. "
    "If anything in it is worth keeping for future sessions (project facts, commands, "
    "decisions, the user's preferences), save it now with the memory tool. Reply briefly."
)


class AgentBusy(AgentshError, RuntimeError):
    """A second turn was started while one is running (front ends queue instead)."""


@dataclass(slots=True)
class _TurnState:
    """What the running turn has produced so far, for a clean abort."""

    text: str = ""
    streaming: bool = False
    pending_calls: list[ToolCall] = field(default_factory=list)
    answered_calls: set[str] = field(default_factory=set)
    running_tool: bool = False
    final_text: str = ""
    limit: str = ""  # the limit that ended the turn early (see TurnEnded.limit)


class Agent:
    def __init__(
        self,
        *,
        env: Environment,
        session: Session,
        cwd: Path,
        llm: LLMClient | None,
        tools: ToolRegistry,
        approver: Approver,
        memory: CuratedMemory,
        memory_tool: MemoryTool,
        prompt: SystemPrompt,
        window: int,
        max_output: int = 0,
        max_steps: int = DEFAULT_MAX_STEPS,
        on_summary_written: Callable[[Path], None] | None = None,
        notices: Sequence[str] = (),
        count_tokens: Callable[[str], int] | None = None,
        max_cost_usd: float | None = None,
        mcp: McpManager | None = None,
        checkpoints: Checkpointer | None = None,
        api_base: str | None = None,
        host: ToolHost | None = None,
        mcp_untrusted: Sequence[str] = (),
        client_factory: Callable[..., LLMClient] = LLMClient,
        tokenizer: TokenCounter | None = None,
    ) -> None:
        self.env = env
        self.checkpoints = checkpoints
        self._files: SessionFiles | None = None
        self.session = session
        self.cwd = cwd
        self.llm = llm
        self.tools = tools
        self.approver = approver
        self.memory = memory
        self.memory_tool = memory_tool
        self.prompt = prompt
        self.max_steps = max_steps
        self.host = host  # an editor's buffers and terminals (ACP), in place of local ones
        self.max_cost_usd = max_cost_usd  # stop before a model call once this much is spent
        self.spent_usd = 0.0  # by this agent's model calls, over every turn it ran
        self._on_summary_written = on_summary_written
        self._notices = list(notices)  # told to the user at the start of the next turn
        self._emit: Callable[[Event], None] = lambda _event: None
        self._task: asyncio.Task[None] | None = None
        self._state = _TurnState()
        self._tool_cancel = asyncio.Event()
        self._window = window
        self._max_output = max_output
        self._branch_usage: dict[tuple[str, str], Usage] = {}  # written, not yet attached
        self._count_tokens = count_tokens
        # The server the user chose (--api-base, AGENTSH_API_BASE, [model] api_base): /model
        # keeps it for every model, as the start-up choice does.
        self._api_base = api_base
        self._client_factory = client_factory  # how /model makes the next client
        # Exact counting loads a tokenizer (0.3-1 s, 30-70 MB): until warm_up() or the first
        # turn or compaction loads it, counts are the CJK-aware estimate (flagged as such).
        self._tokenizer = tokenizer if count_tokens is None else None
        self._tokenizer_load: asyncio.Future[bool] | None = None
        # MCP servers' tools join the registry as the servers come up (see _mcp_ready).
        self.mcp = mcp
        self.mcp_untrusted = tuple(mcp_untrusted)  # the project's servers, not started (/mcp)
        self.mcp_tools: McpToolSource | None = None
        if mcp is not None:
            self.mcp_tools = McpToolSource(
                mcp,
                env.settings,
                window=lambda: self._window,
                count=self._count,
                # A bare deny rule (--disallowedTools mcp__git) takes them away, as it does
                # a built-in tool.
                hidden=approver.rules.hidden_tools,
            )
            tools.add_source(self.mcp_tools)
        # Provider keys the commands the model runs can see, and the tokens MCP servers are
        # given (headers, key-like env values); never echoed into the log.
        self._secrets = environment_secrets() + (mcp.secrets() if mcp is not None else ())
        self.context = self._new_context(session, window)
        session.on_append = self._entry_appended
        self.nested = self._new_nested()

    def _new_nested(self) -> NestedInstructions:
        budget = self.prompt.budget.instructions_bytes  # scaled with the window
        return NestedInstructions(self.env.project.root, self.cwd, budget, enabled=self.env.trusted)

    # -- public API -------------------------------------------------------------------------

    @property
    def model(self) -> str | None:
        return self.llm.model if self.llm is not None else None

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    def status(self) -> ContextStatus:
        return self.context.status()

    @property
    def approval_mode(self) -> ApprovalMode:
        return self.approver.mode

    @property
    def plan_mode(self) -> bool:
        return self.approver.plan

    def set_approval_mode(self, mode: ApprovalMode, *, plan: bool = False) -> None:
        """What tools may do without asking, from the next call on; ``plan``: nothing but
        reads, whatever the mode (the refusal tells the model why)."""
        self.approver.mode = ApprovalMode(mode)
        self.approver.plan = plan

    def system_prompt(self) -> str:
        return self.prompt.render()

    async def run(self, text: str) -> AsyncIterator[Event]:
        """Run one user turn, yielding its events until ``TurnEnded``."""
        async for event in self._drive(self._turn(text)):
            yield event

    async def compact(
        self, tier: Tier | None = None, instructions: str = ""
    ) -> AsyncIterator[Event]:
        """A manual compaction (``/compact [tier] [instructions]``), with its events;
        ``instructions`` steer the summary."""
        async for event in self._drive(self._manual_compaction(tier, instructions)):
            yield event

    async def warm_up(self) -> None:
        """Load what a turn needs ahead of it: the model worker and the tokenizer.

        A front end calls it when the user starts typing; a turn that comes first loads them
        itself. Counts (and :meth:`status`) are exact from when it returns."""
        from agentsh.llm import remote

        if self.llm is not None:  # no model configured: nothing to call, nothing to load
            remote.prewarm()
        await self._ensure_tokenizer()

    async def _ensure_tokenizer(self) -> None:
        tokenizer = self._tokenizer
        if tokenizer is None:
            return
        if self._tokenizer_load is None:
            self._tokenizer_load = asyncio.ensure_future(asyncio.to_thread(tokenizer.warm))
        await asyncio.shield(self._tokenizer_load)
        if self._tokenizer is not None:  # the first of several waiters switches the counts
            self._tokenizer = None
            self._count_tokens = tokenizer.count
            self.context.accounting.use_counter(tokenizer.count)
            self.context.note_prompt(self.prompt.render(), self.tools.schemas())

    def _count(self, text: str) -> int:
        """Tokens of ``text``: exact once the tokenizer has loaded, the estimate before."""
        count = self._count_tokens
        if count is not None:
            return count(text)
        return estimate_tokens(text, self.env.settings.context.chars_per_token)

    def cancel(self) -> None:
        """Stop the running turn; what was received is kept and the turn marked aborted."""
        if not self.busy:
            return
        if self._state.running_tool:
            # A running tool stops itself and returns its partial output; the loop then sees
            # the flag and ends the turn without another model call.
            self._tool_cancel.set()
        else:
            assert self._task is not None
            self._task.cancel()

    def set_model(self, model: str) -> None:
        """Use ``model`` from the next request on, on the server chosen at start (``/model``
        must not send the next request to the provider's default endpoint)."""
        settings = self.env.settings.model
        base = api_base_for(model, self._api_base, settings)
        self.llm = self._client_factory(model, settings=settings, api_base=base)
        info = model_info(model, settings)
        self._window = info.window
        self._max_output = info.max_output_tokens
        self.context.set_model(model, self._window, self._max_output)
        self.prompt.set_window(self._window)
        self.tools.terse = self.prompt.budget.terse
        if self.session.leaf_id is not None:
            self.session.append(
                ModelChangeEntry(
                    id=self.session.new_id(), parent_id=self.session.leaf_id, model=model
                )
            )

    def switch_session(self, session: Session, *, fresh_prompt: bool = True) -> None:
        """Continue in another session (``/new``, ``/resume``, ``/fork``)."""
        if self.busy:
            raise AgentBusy("a turn is running")
        if session is not self.session:
            self.session.on_append = None
            self.session.close()
            # "Allow for this session" was granted for the conversation being left.
            self.approver.forget_session()
        self.session = session
        session.on_append = self._entry_appended
        if fresh_prompt:
            self.prompt = self.prompt.fresh()
        self.context = self._new_context(session, self._window)
        self.nested = self._new_nested()  # the new conversation has not seen them

    def undo_compaction(self) -> UndoResult:
        """``/compact undo``: the context from before the newest compaction, as a new leaf.

        The context manager is rebuilt for the restored path, so its anti-thrashing state and
        any pending compaction problem start over from what that path holds."""
        if self.busy:
            raise AgentBusy("a turn is running")
        result = undo_compaction(self.session)
        self.session.sync()
        self.context = self._new_context(self.session, self._window)
        return result

    async def summarize_branch(self, from_leaf: str, instructions: str = "") -> str:
        """A short summary of the branch the leaf just left (``from_leaf`` was its leaf).

        Covers the entries from ``from_leaf`` back to the common ancestor with the current
        leaf, newest first within the window minus ``context.reserve_tokens``, tool results
        skipped; the reply is capped at ``context.branch_summary_max_tokens``. Returns "" when
        nothing was left behind. Raises :class:`LLMError` (kind NO_MODEL without a model). The
        caller attaches the text with :meth:`attach_branch_summary`, which records the call's
        usage with it so the session totals count it."""
        from agentsh.context.branch_summary import (
            abandoned_branch,
            branch_summary_request,
            budget_for,
            select_entries,
        )

        if self.llm is None:
            raise LLMError(ErrorKind.NO_MODEL, "No model is configured to write a branch summary.")
        await self._ensure_tokenizer()
        branch = abandoned_branch(self.session.tree, from_leaf, self.session.leaf_id)
        budget = budget_for(self._window, self.env.settings.context.reserve_tokens)
        entries = select_entries(branch.entries, budget, self.context.accounting.count)
        if not entries:
            return ""
        max_tokens = self.env.settings.context.branch_summary_max_tokens
        messages = branch_summary_request(entries, max_tokens=max_tokens, instructions=instructions)
        model = self.env.settings.model.summary_model or None
        completion = await self.llm.complete(messages, max_tokens=max_tokens, model=model)
        text = completion.text.strip()
        self._branch_usage[(from_leaf, text)] = completion.usage
        return text

    def attach_branch_summary(self, from_leaf: str, text: str) -> BranchSummaryEntry:
        """Attach a branch summary below the leaf, with the usage of the call that wrote it
        (when :meth:`summarize_branch` did), and make it durable."""
        usage = self._branch_usage.pop((from_leaf, text), None)
        entry = self.session.append_branch_summary(from_leaf, text, usage)
        self.session.sync()
        return entry

    def read_archive(self, where: str) -> str | None:
        """A compaction's workspace file, through the workspace that wrote it (a session not
        kept on disk holds it in memory); None when it is gone or unreadable."""
        try:
            return self.context.workspace.read(where)
        except (OSError, KeyError, UnicodeDecodeError):
            return None

    def memory_snapshot(self) -> MemorySnapshot:
        return self.prompt.snapshot

    def files(self) -> SessionFiles | None:
        if self.checkpoints is None:
            return None
        if self._files is None:
            self._files = SessionFiles(self.checkpoints, lambda: self.session)
        return self._files

    def tool_names(self) -> list[str]:
        return self.tools.names()

    def denials(self) -> list[Denial]:
        return self.approver.denials

    # -- MCP servers (/mcp) -----------------------------------------------------------------------

    def mcp_overview(self) -> McpOverview:
        """Every MCP server with its state and what its tool definitions cost."""
        overview = self.mcp_tools.overview() if self.mcp_tools is not None else McpOverview()
        return replace(overview, untrusted=self.mcp_untrusted)

    def settle_mcp(self, timeout: float | None = None) -> None:
        """Wait (blocking) until no MCP server is still starting; each has its own timeout."""
        if self.mcp is not None:
            self.mcp.wait_until_started_sync(timeout)

    def set_mcp_server(self, name: str, *, enabled: bool | None = None) -> None:
        """Enable or disable an MCP server for this session, or (``enabled`` None) restart it.
        Returns at once; :meth:`watch_mcp` tells when its state changes."""
        if self.mcp is None or name not in self.mcp.names:
            raise KeyError(f"no MCP server named {name!r}")
        if enabled is None:
            self.mcp.restart(name)
        else:
            self.mcp.set_enabled(name, enabled)

    def watch_mcp(self, callback: Callable[[], None]) -> None:
        """``callback()`` after each change of an MCP server's state, on the MCP thread (a
        front end hands it over to its own loop, then may call :meth:`tools_changed`)."""
        if self.mcp is not None:
            self.mcp.subscribe(callback)

    def tools_changed(self) -> ContextStatus:
        """Count the tools offered now into the status (servers came up or went)."""
        self.context.note_prompt(self.prompt.render(), self.tools.schemas())
        return self.context.status()

    def close(self) -> None:
        """Close the session log, the checkpoint store and stop the MCP servers (their
        process groups included)."""
        try:
            self.session.close()
        finally:
            if self.checkpoints is not None:
                self.checkpoints.close()
            if self.mcp is not None:
                self.mcp.close()

    # -- driving a task as an event stream ------------------------------------------------------

    async def _drive(self, work: Awaitable[None]) -> AsyncIterator[Event]:
        if self.busy:
            raise AgentBusy("a turn is already running")
        queue: asyncio.Queue[object] = asyncio.Queue()
        self._emit = queue.put_nowait
        self._tool_cancel = asyncio.Event()
        task: asyncio.Task[None] = asyncio.ensure_future(work)
        self._task = task
        task.add_done_callback(lambda _t: queue.put_nowait(_DONE))
        try:
            while True:
                item = await queue.get()
                if item is _DONE:
                    break
                assert isinstance(item, Event)
                yield item
            task.result()
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            self._emit = lambda _event: None

    def _emit_event(self, event: Event) -> None:
        self._emit(event)

    def _entry_appended(self, entry: AnyEntry) -> None:
        """Every entry written during a turn is announced, in order, after it is durable."""
        self._emit(EntryAppended(entry))

    def _end_turn(
        self, outcome: TurnOutcome, text: str = "", error: str = "", limit: str = ""
    ) -> None:
        """The last two events of every turn: the status as the turn leaves it, then the end
        (front ends take the status from the stream, never by asking after the turn)."""
        self._emit(StatusChanged(self.context.status()))
        self._emit(TurnEnded(outcome, text=text, error=error, limit=limit))

    def _new_context(self, session: Session, window: int) -> ContextManager:
        context = ContextManager(
            session,
            self.env.settings,
            self.env.user,
            model=self.model or "",
            window=window,
            summarize=self._summarize,
            count_tokens=self._count_tokens,
            emit=self._emit_event,
            on_summary_written=self._on_summary_written,
            max_output=self._max_output,
        )
        context.note_prompt(self.prompt.render(), self.tools.schemas())
        return context

    # -- one turn ---------------------------------------------------------------------------

    async def _turn(self, text: str) -> None:
        self._state = state = _TurnState()
        emit = self._emit_event
        try:
            for notice in self._take_notices():
                emit(Notice(NoticeLevel.WARNING, notice))
            if self.llm is None:
                emit(ErrorOccurred(ErrorKind.NO_MODEL, no_model_help(self.env.user.config_file)))
                self._end_turn(TurnOutcome.ERROR, error="no model is configured")
                return
            await self._ensure_tokenizer()
            is_first = not any(
                isinstance(e, MessageEntry) and e.role is Role.USER
                for e in self.session.current_path()
            )
            user = self.session.append_message(Role.USER, text)
            await self._checkpoint("user")
            if is_first:
                self.prompt.set_first_message(text)
                for notice in self._take_notices():
                    emit(Notice(NoticeLevel.WARNING, notice))
            emit(TurnStarted(user.id, text))
            self.memory_tool.new_turn()
            await self._mcp_ready()
            outcome = await self._steps(state)
            if outcome is TurnOutcome.ABORTED:
                self._end_turn(TurnOutcome.ABORTED, text=state.final_text)
            elif outcome is TurnOutcome.DONE:
                self._end_turn(TurnOutcome.DONE, text=state.final_text, limit=state.limit)
        except asyncio.CancelledError:
            self._record_abort(state)
            self._end_turn(TurnOutcome.ABORTED, text=state.text)
        except SessionError as exc:
            emit(ErrorOccurred(ErrorKind.OTHER, f"The session log could not be written: {exc}"))
            self._end_turn(TurnOutcome.ERROR, error=str(exc))
        except Exception as exc:  # noqa: BLE001 - last resort: a bug ends this turn, not the app
            # Keep what was received and answer every call, so the log stays whole and the
            # next turn can go on; the message names the exception so the bug can be found.
            message = f"Internal error: {type(exc).__name__}: {exc}".rstrip(": ")
            text = state.text
            with contextlib.suppress(SessionError):
                if state.streaming:
                    self._record_error(state, message)
                self._answer_unrun_calls(state, "not run: the turn stopped on an internal error")
            emit(ErrorOccurred(ErrorKind.OTHER, message))
            self._end_turn(TurnOutcome.ERROR, text=text, error=message)
        finally:
            self._sync_quietly()

    async def _steps(self, state: _TurnState) -> TurnOutcome | None:
        """Model calls and tool runs until the model stops; None when an error was emitted."""
        emit = self._emit_event
        overflow_retried = False
        assert self.llm is not None
        for _step in range(self.max_steps):
            if self.max_cost_usd is not None and self.spent_usd >= self.max_cost_usd:
                state.limit = "max_budget_usd"
                emit(
                    Notice(
                        NoticeLevel.WARNING,
                        f"Stopped: ${self.spent_usd:.4f} spent, the budget is "
                        f"${self.max_cost_usd:.4f}.",
                    )
                )
                return TurnOutcome.DONE
            system = self.prompt.render()
            schemas = self.tools.schemas()
            if self.context.needs_memory_flush():
                await self._memory_flush(system)
            try:
                messages = await self.context.prepare(system, schemas)
            except ContextTooLarge as exc:
                emit(ErrorOccurred(ErrorKind.CONTEXT_OVERFLOW, str(exc)))
                emit(StatusChanged(self.context.status()))
                emit(TurnEnded(TurnOutcome.ERROR, text=state.text, error=str(exc)))
                return None
            try:
                completion = await self._stream(messages, schemas, state)
            except LLMError as err:
                if err.kind is ErrorKind.CONTEXT_OVERFLOW and not overflow_retried:
                    overflow_retried = True
                    state.text = ""
                    if await self.context.on_overflow():
                        continue
                self._record_error(state, err.message)
                emit(ErrorOccurred(err.kind, err.message))
                self._end_turn(TurnOutcome.ERROR, text=state.text, error=err.message)
                return None
            entry = self.session.append_message(
                Role.ASSISTANT,
                completion.text,
                tool_calls=tuple(self._summarized(c) for c in completion.tool_calls),
                model=completion.model or self.llm.model,
                usage=completion.usage,
                stop_reason=completion.stop_reason,
            )
            state.text = ""
            state.streaming = False
            self.context.record_usage(entry)
            emit(
                AssistantMessage(
                    entry.id,
                    entry.content,
                    tuple((c.id, c.name, c.arguments) for c in entry.tool_calls),
                    completion.stop_reason.value,
                )
            )
            usage = completion.usage
            self.spent_usd += usage.cost
            emit(
                UsageReported(
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cache_read_tokens,
                    usage.cache_write_tokens,
                    usage.cost,
                )
            )
            emit(StatusChanged(self.context.status()))
            if entry.content:
                state.final_text = entry.content
            if not entry.tool_calls:
                return TurnOutcome.DONE
            state.pending_calls = list(entry.tool_calls)
            for call in entry.tool_calls:
                await self._run_tool(call, state)
                if self._tool_cancel.is_set():
                    self._answer_unrun_calls(state, "not run: the user cancelled the turn")
                    return TurnOutcome.ABORTED
            state.pending_calls = []
        state.limit = "max_turns"
        emit(
            Notice(
                NoticeLevel.WARNING,
                f"Stopped after {self.max_steps} model calls in one turn; send a message to go on.",
            )
        )
        return TurnOutcome.DONE

    async def _stream(
        self, messages: list[dict[str, Any]], schemas: list[dict[str, Any]], state: _TurnState
    ) -> Completion:
        assert self.llm is not None
        emit = self._emit_event
        state.text = ""
        state.streaming = True
        completion: Completion | None = None
        max_tokens = self.env.settings.model.max_output_tokens or None
        stream = self.llm.stream(messages, schemas or None, max_tokens=max_tokens)
        async with contextlib.aclosing(stream):  # a cancel closes the HTTP stream at once
            async for item in stream:
                if isinstance(item, Completion):
                    completion = item
                else:
                    if isinstance(item, TextDelta):
                        state.text += item.text
                    emit(item)
        state.streaming = False
        if completion is None:  # pragma: no cover - the client always ends with a Completion
            raise LLMError(ErrorKind.OTHER, "The provider ended the reply without finishing it.")
        return completion

    async def _run_tool(self, call: ToolCall, state: _TurnState) -> None:
        emit = self._emit_event
        tool = self.tools.get(call.name)
        arguments = _parse_arguments(call.arguments)
        ctx = self._tool_context(call.id)
        params: Any = None
        problem = ""
        if tool is None:
            known = ", ".join(self.tools.names())
            problem = f"Unknown tool '{call.name}'. Available tools: {known}."
        elif isinstance(arguments, str):
            problem = arguments
        else:
            try:
                params = tool.parse(arguments)
            except ToolArgumentError as exc:
                problem = f"Invalid arguments for {call.name}: {exc}"
        changes_files = tool is not None and not problem and _changes_files(tool, params, ctx)
        emit(
            ToolStarted(
                call.id,
                call.name,
                arguments if isinstance(arguments, dict) else {},
                call.summary or call.name,
            )
        )
        if problem or tool is None:
            result = ToolResult(problem, is_error=True)
        else:
            result = self._redacted(await self._authorized_run(tool, params, ctx))
            result = self._with_nested_instructions(tool, params, result)
        self._emit_mcp_notices()
        entry = self.session.append_tool_result(
            call.id,
            call.name,
            result.content,
            is_error=result.is_error,
            truncated=result.truncated,
            details=result.details,
        )
        if changes_files:  # the files as this call left them (a write/edit: its targets only)
            await self._checkpoint("tool", tool.target_paths(params, ctx) if tool else [])
        state.answered_calls.add(call.id)
        emit(
            ToolFinished(
                call_id=call.id,
                name=call.name,
                entry_id=entry.id,
                content=result.content,
                is_error=result.is_error,
                truncated=result.truncated,
                diff=str(result.details.get("diff", "")),
                full_output_path=str(result.details.get("full_output_path", "")),
            )
        )

    def _summarized(self, call: ToolCall) -> ToolCall:
        """The call with the header its tool writes for it (the call's name when the tool is
        unknown or the arguments do not parse), stored in the log with the call."""
        tool = self.tools.get(call.name)
        arguments = _parse_arguments(call.arguments)
        summary = call.name
        if tool is not None and isinstance(arguments, dict):
            with contextlib.suppress(ToolArgumentError):
                summary = tool.summary(tool.parse(arguments))
        if len(summary) > MAX_SUMMARY_CHARS:
            summary = summary[: MAX_SUMMARY_CHARS - 1] + "…"
        return replace(call, summary=summary)

    def _with_nested_instructions(self, tool: Tool, params: Any, result: ToolResult) -> ToolResult:
        """A file read, written or edited for the first time under a folder with its own
        AGENTS.md: that file joins the result, once (agentsh/instructions.py)."""
        where = getattr(params, "path", None)
        if result.is_error or tool.name not in TOUCHING_TOOLS or not isinstance(where, str):
            return result
        load = self.nested.after_touch(resolve_path(where, self.cwd))
        for text in load.loaded:
            self._emit_event(Notice(NoticeLevel.INFO, text))
        for text in load.problems:
            self._emit_event(Notice(NoticeLevel.WARNING, text))
        if not load.block:
            return result
        return replace(result, content=f"{result.content}\n\n{load.block}")

    def _tool_context(self, call_id: str) -> ToolContext:
        return ToolContext(
            project=self.env.project,
            user=self.env.user,
            settings=self.env.settings,
            cwd=self.cwd,
            call_id=call_id,
            emit=self._emit_tool_event,
            cancelled=self._tool_cancel,
            session_id=self.session.id,
            project_trusted=self.env.trusted,
            secrets=self._secrets,
            host=self.host,
        )

    async def _checkpoint(self, reason: str, paths: Sequence[Path] = ()) -> None:
        """Capture the project's files at the leaf (agentsh/checkpoints); the capture runs in
        a thread, the record is appended here. Never fails the turn: problems are notices."""
        if self.checkpoints is None:
            return
        capture = await asyncio.to_thread(self.checkpoints.capture, paths)
        if capture is not None:
            self.checkpoints.record(self.session, reason, capture)
        for text in self.checkpoints.take_notices():
            self._emit_event(Notice(NoticeLevel.WARNING, text))

    def _emit_tool_event(self, event: Event) -> None:
        if isinstance(event, ToolOutput) and self._secrets:
            event = ToolOutput(event.call_id, redact(event.text, self._secrets))
        self._emit_event(event)

    def _redacted(self, result: ToolResult) -> ToolResult:
        """A command may print a provider key (``env``, a debug log): keep it out of the log,
        the screen and the next request."""
        if not self._secrets:
            return result
        details = dict(result.details)
        if isinstance(details.get("diff"), str):
            details["diff"] = redact(details["diff"], self._secrets)
        return replace(result, content=redact(result.content, self._secrets), details=details)

    async def _authorized_run(self, tool: Tool, params: Any, ctx: ToolContext) -> ToolResult:
        try:
            denial = await self.approver.authorize(tool, params, ctx)
            if denial is not None:
                return ToolResult(denial, is_error=True)
            if _changes_files(tool, params, ctx):
                await self._checkpoint("tool")  # the files before this call changes them
            self._state.running_tool = True
            return await tool.run(params, ctx)
        except (OSError, ValueError) as exc:
            return ToolResult(f"{tool.name} failed: {exc}", is_error=True)
        except Exception as exc:  # noqa: BLE001 - a tool's bug must not end the turn
            # (sqlite3.Error from a damaged index, a bug in a tool): the model reads what went
            # wrong and can go on another way; the user sees the failed call.
            kind = type(exc).__name__
            return ToolResult(f"{tool.name} failed unexpectedly ({kind}: {exc})", is_error=True)
        finally:
            self._state.running_tool = False

    # -- endings ----------------------------------------------------------------------------

    def _record_abort(self, state: _TurnState) -> None:
        """Keep what a cancelled turn received, and leave no tool call without a result."""
        try:
            if state.streaming:
                self.session.append_message(
                    Role.ASSISTANT,
                    state.text,
                    model=self.model,
                    stop_reason=StopReason.ABORTED,
                )
                state.streaming = False
            self._answer_unrun_calls(state, "not run: the user cancelled the turn")
        except SessionError:
            pass  # the log is unwritable; the turn is over either way

    def _answer_unrun_calls(self, state: _TurnState, why: str) -> None:
        for call in state.pending_calls:
            if call.id not in state.answered_calls:
                self.session.append_tool_result(call.id, call.name, why, is_error=True)
                state.answered_calls.add(call.id)
        state.pending_calls = []

    def _record_error(self, state: _TurnState, message: str) -> None:
        """The failed reply stays visible in the log, with what streamed before the error."""
        self.session.append_message(
            Role.ASSISTANT,
            state.text,
            model=self.model,
            stop_reason=StopReason.ERROR,
            error=message,
        )
        state.text = ""
        state.streaming = False

    def _sync_quietly(self) -> None:
        try:
            self.session.sync()
        except OSError as exc:
            self._emit_event(Notice(NoticeLevel.ERROR, f"Could not flush the session log: {exc}"))

    async def _mcp_ready(self) -> None:
        """Before the first request of a turn, servers still starting get their start-up time,
        so the tool list the model sees does not change under it a moment later."""
        if self.mcp is None:
            return
        starting = self.mcp.starting()
        if starting:
            names = ", ".join(starting)
            plural = "s" if len(starting) > 1 else ""
            self._emit_event(
                Notice(NoticeLevel.INFO, f"Waiting for MCP server{plural} {names} to start")
            )
            await self.mcp.wait_until_started()
        self._emit_mcp_notices()

    def _emit_mcp_notices(self) -> None:
        if self.mcp is None:
            return
        for notice in self.mcp.take_notices():
            self._emit_event(Notice(NoticeLevel.WARNING, notice))

    def _take_notices(self) -> list[str]:
        """What the user has not been told yet (start-up problems, AGENTS.md, docs), once."""
        taken = [*self._notices, *self.prompt.take_notices()]
        self._notices.clear()
        return taken

    # -- compaction -------------------------------------------------------------------------

    async def _memory_flush(self, system: str) -> None:
        """Before a Summarize, one extra model turn with only the memory tool (opt-in), so what
        matters can be saved before the details leave the context. The exchange itself is not
        logged: only the memory writes it makes last."""
        self.context.mark_memory_flushed()
        assert self.llm is not None
        # Without compacting: the point is to let the model see the turns about to leave.
        messages = await self.context.prepare(system, [], compact=False)
        messages.append({"role": "user", "content": MEMORY_FLUSH_PROMPT})
        self._emit_event(
            Notice(NoticeLevel.INFO, "Saving to memory before the context is summarized")
        )
        completion: Completion | None = None
        try:
            stream = self.llm.stream(messages, [self.memory_tool.schema()], max_tokens=1024)
            async with contextlib.aclosing(stream):
                async for item in stream:
                    if isinstance(item, Completion):
                        completion = item
        except LLMError as err:
            self._emit_event(Notice(NoticeLevel.WARNING, f"Memory save skipped: {err.message}"))
            return
        if completion is None:
            return
        self.context.add_side_usage(completion.usage)
        for call in completion.tool_calls:
            if call.name != self.memory_tool.name:
                continue
            arguments = _parse_arguments(call.arguments)
            if isinstance(arguments, str):
                continue
            try:
                params = self.memory_tool.parse(arguments)
            except ToolArgumentError:
                continue
            ctx = self._tool_context(call.id)
            result = await self.memory_tool.run(params, ctx)
            self._emit_event(Notice(NoticeLevel.INFO, f"memory: {result.content.splitlines()[0]}"))

    async def _manual_compaction(self, tier: Tier | None, instructions: str = "") -> None:
        try:
            await self._ensure_tokenizer()
            await self.context.compact(tier, manual=True, instructions=instructions)
        finally:
            self._emit_event(StatusChanged(self.context.status()))
            self._sync_quietly()

    async def _summarize(self, messages: list[dict[str, Any]], max_tokens: int) -> SummaryReply:
        if self.llm is None:
            raise LLMError(ErrorKind.NO_MODEL, "No model is configured to write a summary.")
        model = self.env.settings.model.summary_model or None
        completion = await self.llm.complete(messages, max_tokens=max_tokens, model=model)
        return SummaryReply(completion.text, completion.usage)


def _parse_arguments(raw: str) -> dict[str, Any] | str:
    """The call's arguments as a dict, or an error message for the model."""
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError as exc:
        return (
            f"The tool arguments were not valid JSON ({exc.msg} at position {exc.pos}); "
            "resend the call with a JSON object."
        )
    if isinstance(value, dict) and "_invalid_arguments" in value and len(value) == 1:
        return "The tool arguments were not a valid JSON object; resend the call."
    if not isinstance(value, dict):
        return "The tool arguments must be a JSON object."
    return value


def _changes_files(tool: Tool, params: Any, ctx: ToolContext) -> bool:
    """Calls that may change files (write, edit, bash) are checkpointed before and after."""
    return tool.effect(params, ctx) in (Effect.EDIT, Effect.EXECUTE)


def build_agent(
    env: Environment,
    session: Session,
    *,
    model: str | None,
    api_base: str | None = None,
    approval: ApprovalMode | None = None,
    interactive: bool = True,
    cwd: Path | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    max_cost_usd: float | None = None,
    rules: ToolRules | None = None,
    plan: bool = False,
    appended_prompt: str = "",
    mcp_servers: Sequence[ServerSpec] = (),
    host: ToolHost | None = None,
    system_prompt: str = "",
) -> Agent:
    """Assemble an agent with every real part: run it off the UI thread. In a front end that
    uses the model worker (:func:`agentsh.llm.remote.activate`), its model calls run there, and
    litellm never loads in this process. ``model=None`` builds an agent that explains how to
    configure one. ``mcp_servers`` are started besides the configured ones (an ACP client's:
    agentsh.mcp.servers_config.spec_from_acp). ``host``: an editor's file buffers and terminals the
    tools use in place of local ones (ACP).
    """
    from agentsh.llm import remote
    from agentsh.llm.models import choose_model, chosen_api_base
    from agentsh.mcp.mcp_manager import manager_for
    from agentsh.mcp.server_trust import project_servers_trusted
    from agentsh.mcp.servers_config import load_mcp_config
    from agentsh.memory.index import MemoryIndex, SearchIndexError, shared_index

    cwd = cwd or Path.cwd()
    settings = env.settings
    choice = choose_model(settings.model, os.environ, cli_model=model, cli_api_base=api_base)
    # A front end (the TUI, -p) has its model calls made by the model worker process.
    client_factory: Callable[..., LLMClient] = (
        remote.RemoteLLMClient if remote.in_use() else LLMClient
    )
    llm: LLMClient | None = None
    window = 128_000
    max_output = 0
    tokenizer: TokenCounter | None = None
    if choice is not None:
        llm = client_factory(choice.model, settings=settings.model, api_base=choice.api_base)
        info = model_info(choice.model, settings.model)
        window, max_output = info.window, info.max_output_tokens
        # Exact counts from the encodings litellm ships, loaded when first needed.
        tokenizer = TokenCounter(choice.model, chars_per_token=settings.context.chars_per_token)

    memory = CuratedMemory(env.project, env.user, settings.memory, project_trusted=env.trusted)
    memory_tool = MemoryTool(memory, settings.memory)
    notices: list[str] = []
    index: MemoryIndex | None
    try:
        index = shared_index(env.user, env.project, settings.search, include_project=env.trusted)
    except SearchIndexError as exc:
        # The index is a cache: without it the agent still works, and the memory tools open
        # the shared index at each call and tell the model why they cannot search.
        index = None
        notices.append(f"Memory search is unavailable: {exc}")
    tools = session_tools(memory_tool, index)
    if rules:  # a bare deny rule ("Bash") takes the tool away: the model is not offered it
        hidden = rules.hidden_tools(tool.name for tool in tools)
        tools = [tool for tool in tools if tool.name not in hidden]
    registry = ToolRegistry(tools)

    def on_summary(path: Path) -> None:
        # Compaction summaries are searchable as soon as they are written. The index is a
        # cache: a failure here must never fail the compaction (the watcher retries).
        if index is None:
            return
        try:
            index.index_file(path)
        except (SearchIndexError, sqlite3.Error, OSError):
            index.mark_dirty()

    mode = approval or ApprovalMode(settings.tools.approval)
    approver = Approver(mode, env.project.root, interactive=interactive, rules=rules, plan=plan)
    prompt = SystemPrompt(env, cwd, memory=memory, window=window)
    registry.terse = prompt.budget.terse  # a small window gets terse tool definitions
    prompt.appended = appended_prompt
    prompt.replaced_base = system_prompt  # --system-prompt; "" keeps agentsh's own
    mcp_config = load_mcp_config(env.user, env.project)
    trusted = project_servers_trusted(env, mcp_config)
    mcp, mcp_notices = manager_for(env, cwd, trusted=trusted, extra=mcp_servers, config=mcp_config)
    notices += mcp_notices
    if mcp is not None:
        mcp.start()  # in the background: the servers start while the rest loads
    checkpoints = (
        Checkpointer(env.user, env.project.root, settings.checkpoints)
        if settings.checkpoints.enabled
        else None
    )
    if checkpoints is not None:
        checkpoints.warm()
    return Agent(
        env=env,
        session=session,
        cwd=cwd,
        llm=llm,
        tools=registry,
        approver=approver,
        memory=memory,
        memory_tool=memory_tool,
        prompt=prompt,
        window=window,
        max_output=max_output,
        max_steps=max_steps,
        on_summary_written=on_summary,
        notices=notices,
        api_base=chosen_api_base(settings.model, os.environ, api_base),
        max_cost_usd=max_cost_usd,
        mcp=mcp,
        checkpoints=checkpoints,
        host=host,
        mcp_untrusted=() if trusted else tuple(sorted(mcp_config.project)),
        client_factory=client_factory,
        tokenizer=tokenizer,
    )
