"""The agent: user input -> context -> model -> tools -> log, as one stream of events.

``Agent.run(text)`` is an async iterator of :mod:`agentsh.events`. Work happens in a task that
pushes events into a queue the iterator drains, so tools (streaming bash output, approval
requests) and the context manager (compaction progress) can emit events from anywhere in the
turn. Every step is also an entry in the session log, written before the event that announces
it, so whatever a front end shows is already durable. This module holds what lasts between
turns (session, model, context, tools, MCP servers); :mod:`agentsh.agent_assembly` builds one
from its real parts. The loop of one turn is :mod:`agentsh.turn`, one tool call
:mod:`agentsh.tool_calls`.

Cancelling (Esc) keeps what was received: a cancelled stream becomes an assistant entry marked
``aborted`` holding the text so far; a cancelled tool run keeps its partial output; calls that
never ran get a result saying so, so the log never holds an orphan tool call.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentsh.checkpoints.checkpointer import Checkpointer
from agentsh.checkpoints.session_files import SessionFiles
from agentsh.config import ApprovalMode, Environment
from agentsh.context.breakdown import ContextUsage, CountedFile, compaction_point
from agentsh.context.manager import ContextManager
from agentsh.context.undo import UndoResult, undo_compaction
from agentsh.errors import AgentshError
from agentsh.events import ContextStatus, Event, Notice, NoticeLevel, StatusChanged, Tier
from agentsh.instructions import USER_FILE_NAME, NestedInstructions
from agentsh.llm.client import LLMClient, environment_secrets
from agentsh.llm.models import ModelInfo, api_base_for, model_info
from agentsh.llm.tokens import TokenCounter, estimate_tokens
from agentsh.mcp.mcp_manager import McpManager
from agentsh.mcp.state import McpOverview
from agentsh.mcp.tools import McpToolSource
from agentsh.memory.curated import CuratedMemory, MemorySnapshot, MemoryTarget
from agentsh.session.entries import (
    AnyEntry,
    BranchSummaryEntry,
    EntryAppended,
    ModelChangeEntry,
    ToolResultEntry,
)
from agentsh.session.session import Session
from agentsh.side_calls import SideCalls
from agentsh.system_prompt import SystemPrompt
from agentsh.tool_calls import TurnState
from agentsh.tools.approval import Approver, Denial
from agentsh.tools.base import ToolRegistry
from agentsh.tools.host import ToolHost
from agentsh.tools.memory import MemoryTool
from agentsh.tools.rules import ToolRules
from agentsh.trust import covered
from agentsh.turn import Turn
from agentsh.work_stream import WorkStream

DEFAULT_MAX_STEPS = 200


class AgentBusy(AgentshError, RuntimeError):
    """A second turn was started while one is running (front ends queue instead)."""


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
        self._work = WorkStream()  # the running turn or compaction, and its events
        self._state = TurnState()  # the running turn's, for cancel
        self.tool_cancel = asyncio.Event()
        self._window = window
        self._max_output = max_output
        self._side_calls = SideCalls(self)  # summaries: the compaction's, a branch's
        self._count_tokens = count_tokens
        # The server the user chose (--api-base, AGENTSH_API_BASE, [model] api_base): /model
        # keeps it for every model, as the start-up choice does.
        self._api_base = api_base
        self._client_factory = client_factory  # how /model makes the next client
        # Exact counting loads a tokenizer (0.3-1 s, 30-70 MB): until warm_up() or the first
        # turn or compaction loads it, counts are the CJK-aware estimate (flagged as such).
        self._tokenizer = tokenizer if count_tokens is None else None
        self._tokenizer_load: asyncio.Future[bool] | None = None
        # MCP servers' tools join the registry as the servers come up (see agentsh.turn).
        self.mcp = mcp
        self.mcp_untrusted = tuple(mcp_untrusted)  # the project's servers, not started (/mcp)
        self.mcp_tools: McpToolSource | None = None
        if mcp is not None:
            self.mcp_tools = McpToolSource(
                mcp,
                env.settings,
                window=lambda: self._window,
                count=self.count,
                # A bare deny rule (--disallowedTools mcp__git) takes them away, as it does
                # a built-in tool.
                hidden=lambda tools: self.approver.rules.hidden_tools(tools, mcp=tools),
                terse=lambda: self.tools.terse,
            )
            tools.add_source(self.mcp_tools)
        # Provider keys the commands the model runs can see, and the tokens MCP servers are
        # given (headers, key-like env values); never echoed into the log.
        self.secrets = environment_secrets() + (mcp.secrets() if mcp is not None else ())
        self.context = self._new_context(session, window)
        session.on_append = self._entry_appended
        self.nested = self._new_nested()

    def _new_nested(self) -> NestedInstructions:
        budget = self.prompt.budget.instructions_bytes  # scaled with the window
        covers = None if self.env.trust_project else covered(self.env.trust)
        return NestedInstructions(
            self.env.project.root, self.cwd, budget, enabled=self.env.trusted, covers=covers
        )

    # -- public API -------------------------------------------------------------------------

    @property
    def model(self) -> str | None:
        return self.llm.model if self.llm is not None else None

    @property
    def busy(self) -> bool:
        return self._work.busy

    def status(self) -> ContextStatus:
        return self.context.status()

    def context_usage(self) -> ContextUsage:
        """Where the context's tokens go now: the breakdown of ``agentsh context``, the
        instruction and memory files of the system prompt, each MCP tool, and the usage at
        which automatic compaction starts."""
        prompt, count = self.prompt, self.count
        user_file = self.env.user.config_dir / USER_FILE_NAME
        instructions = tuple(
            CountedFile(str(path), "user" if path == user_file else "project", count(block))
            for path, block in prompt.instruction_blocks()
        )
        memory = tuple(
            CountedFile(
                str(f.path), "user" if f.target is MemoryTarget.USER else "project", count(text)
            )
            for f in prompt.snapshot.files
            if f.entries and (text := f.render())
        )
        breakdown = self.context.breakdown(
            prompt.render(), self.tools.schemas(), prompt.memory_block()
        )
        automatic = self.env.settings.context.auto_compact and not breakdown.paused
        return ContextUsage(
            breakdown,
            instructions,
            memory,
            self.mcp_tools.counted() if self.mcp_tools is not None else (),
            compaction_point(self.context.engine.auto_tier, breakdown.window) if automatic else 0,
            nested=self._nested_in_context(),
        )

    def _nested_in_context(self) -> tuple[CountedFile, ...]:
        """The nested AGENTS.md files loaded this session whose text a tool result in the
        context still carries (pruning or a compaction may have taken it out)."""
        if not self.nested.loaded:
            return ()
        view = self.context.accounting.view()
        results = [view.result_content(e) for e in view.entries if isinstance(e, ToolResultEntry)]
        return tuple(
            CountedFile(str(path), "project", self.count(block))
            for path, block in self.nested.loaded
            if any(block in content for content in results)
        )

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

    @property
    def tool_rules(self) -> ToolRules:
        return self.approver.rules

    def set_tool_rules(self, rules: ToolRules) -> None:
        """The allow and deny rules from the next call on (a bare deny rule also takes an MCP
        tool out of the model's list)."""
        self.approver.rules = rules

    @property
    def folders(self) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
        """The folders outside the project the tools may write (``--add-dir``) and those they
        may only read without asking (an editor's additional directories)."""
        return self.approver.reach.added_dirs, self.approver.reach.read_dirs

    def set_folders(
        self,
        *,
        added: Sequence[Path] | None = None,
        read: Sequence[Path] | None = None,
        note: str | None = None,
    ) -> None:
        """Replace the folders given (None: kept), from the next call on; ``note`` replaces
        what the end of the system prompt tells the model (an editor's folders)."""
        self.approver.reach.set_folders(added=added, read=read)
        if note is not None:
            self.prompt.appended = note

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

    async def warm_up(self, *, tokenizer: bool = True) -> None:
        """Load what a turn needs ahead of it: the model worker and (``tokenizer``) the
        tokenizer.

        A front end calls it when the user starts typing; a turn that comes first loads them
        itself. Counts (and :meth:`status`) are exact from when it returns with the tokenizer."""
        from agentsh.llm import remote

        if self.llm is not None:  # no model configured: nothing to call, nothing to load
            remote.prewarm()
        if tokenizer:
            await self.ensure_tokenizer()

    async def ensure_tokenizer(self) -> None:
        """Switch the counts to exact once the tokenizer loaded (loading it the first time)."""
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

    def count(self, text: str) -> int:
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
            self.tool_cancel.set()
        else:
            self._work.cancel()

    def set_model(self, model: str) -> None:
        """Use ``model`` from the next request on, on the server chosen at start (``/model``
        must not send the next request to the provider's default endpoint)."""
        settings = self.env.settings.model
        base = api_base_for(model, self._api_base, settings)
        self.llm = self._client_factory(model, settings=settings, api_base=base)
        self._use_facts(model, model_info(model, settings))
        if self.session.leaf_id is not None:
            self.session.append(
                ModelChangeEntry(
                    id=self.session.new_id(), parent_id=self.session.leaf_id, model=model
                )
            )

    async def follow_fallback(self) -> None:
        """The client fell back (``--fallback-model``) and that model answers from now on: its
        window, output limit and prices shape the context tiers and the status, not the
        primary's. No-op while the model the context was sized for still answers."""
        model = self.model
        if model is None or model == self.context.model:
            return
        info = await asyncio.to_thread(model_info, model, self.env.settings.model)
        self._use_facts(model, info)

    def _use_facts(self, model: str, info: ModelInfo) -> None:
        self._window = info.window
        self._max_output = info.max_output_tokens
        self.context.set_model(model, self._window, self._max_output)
        self.prompt.set_window(self._window)
        self.tools.terse = self.prompt.budget.terse

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
        """A short summary of the branch ``from_leaf`` ended, by the model (see
        :meth:`agentsh.side_calls.SideCalls.summarize_branch`)."""
        return await self._side_calls.summarize_branch(from_leaf, instructions)

    def attach_branch_summary(self, from_leaf: str, text: str) -> BranchSummaryEntry:
        """Attach a branch summary below the leaf, with the usage of the call that wrote it."""
        return self._side_calls.attach_branch_summary(from_leaf, text)

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

    def mcp_identity(self, name: str) -> tuple[str, str] | None:
        tool = self.tools.get(name)
        return tool.mcp_identity() if tool is not None else None

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

    def _drive(self, work: Coroutine[Any, Any, None]) -> AsyncIterator[Event]:
        """``work``'s events (called where the stream is first read, as ``run`` and
        ``compact`` are async generators: a second piece of work raises there)."""
        if self.busy:
            work.close()  # never started
            raise AgentBusy("a turn is already running")
        self.tool_cancel = asyncio.Event()
        return self._work.drive(work)

    def emit(self, event: Event) -> None:
        """Into the stream of the running turn or compaction (dropped when none runs)."""
        self._work.emit(event)

    def _entry_appended(self, entry: AnyEntry) -> None:
        """Every entry written during a turn is announced, in order, after it is durable."""
        self._work.emit(EntryAppended(entry))

    def _new_context(self, session: Session, window: int) -> ContextManager:
        context = ContextManager(
            session,
            self.env.settings,
            self.env.user,
            model=self.model or "",
            window=window,
            summarize=self._side_calls.summary,
            count_tokens=self._count_tokens,
            emit=self.emit,
            on_summary_written=self._on_summary_written,
            max_output=self._max_output,
        )
        context.note_prompt(self.prompt.render(), self.tools.schemas())
        return context

    # -- one turn ---------------------------------------------------------------------------

    async def _turn(self, text: str) -> None:
        self._state = state = TurnState()
        await Turn(self, state).run(text)

    def take_notices(self) -> list[str]:
        """What the user has not been told yet (start-up problems, AGENTS.md, docs), once."""
        taken = [*self._notices, *self.prompt.take_notices()]
        self._notices.clear()
        return taken

    def sync_quietly(self) -> None:
        """Flush the log to disk; a failure is a notice, not the end of the turn."""
        try:
            self.session.sync()
        except OSError as exc:
            self.emit(Notice(NoticeLevel.ERROR, f"Could not flush the session log: {exc}"))

    # -- compaction -------------------------------------------------------------------------

    async def _manual_compaction(self, tier: Tier | None, instructions: str = "") -> None:
        try:
            await self.ensure_tokenizer()
            await self.context.compact(tier, manual=True, instructions=instructions)
        finally:
            self.emit(StatusChanged(self.context.status()))
            self.sync_quietly()
