"""The one object the agent loop talks to about its context: :class:`ContextManager`.

``prepare`` before every model call (status, automatic compaction, the pre-flight route, the
bounded-buffer guard), ``on_overflow`` after a provider's context-overflow error, ``compact``
for ``/compact``, ``status`` for the status bar and ``breakdown`` for ``agentsh context``.
When a compaction runs, and its reports, are :mod:`agentsh.context.compactor`'s (with
anti-thrashing, :mod:`agentsh.context.pause`); the policy itself (what to keep, how to shrink)
is the engine's: :mod:`agentsh.context.engine`. This module measures and assembles each request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentsh.config import Settings
from agentsh.context import facts, tiers
from agentsh.context.accounting import Accounting, Counter, Used
from agentsh.context.breakdown import ContextBreakdown
from agentsh.context.compactor import Compactor
from agentsh.context.engine import make_engine
from agentsh.context.engine_protocol import ContextEngine, EngineDeps, Summarize
from agentsh.context.planning import cut_frees
from agentsh.context.preflight import (
    Preflight,
    Route,
    budget_for,
    cap_messages,
    choose_route,
    reply_reserve,
    result_cap_chars,
    truncate_tool_results,
)
from agentsh.context.repair import Message
from agentsh.context.summary_model import summary_limits
from agentsh.context.view import turn_starts
from agentsh.context.workspace import DiskWorkspace, MemoryWorkspace, Workspace
from agentsh.errors import AgentshError
from agentsh.events import ContextStatus, Event, StatusChanged, Tier, UsageReported
from agentsh.llm.tokens import estimate_tokens
from agentsh.paths import UserPaths
from agentsh.session.entries import CompactionEntry, MessageEntry
from agentsh.session.log import SessionError
from agentsh.session.session import Session
from agentsh.values import Usage


class ContextTooLarge(AgentshError, RuntimeError):
    """The next request does not fit the window even after compaction and trimming; it is not
    sent (a provider would refuse it after reading, and charging for, all of it)."""


class ContextManager:
    """Everything the agent loop needs from context management, in one object."""

    def __init__(
        self,
        session: Session,
        settings: Settings,
        user: UserPaths,
        *,
        model: str,
        window: int,
        summarize: Summarize,
        count_tokens: Counter | None = None,
        emit: Callable[[Event], None] = lambda e: None,
        on_summary_written: Callable[[Path], None] | None = None,
        workspace: Workspace | None = None,
        max_output: int = 0,
    ) -> None:
        self.session = session
        self.settings = settings
        self.user = user
        self.model = model
        self.window = window
        self.max_output = max_output
        self.emit = emit
        cs = settings.context
        count = count_tokens or (lambda text: estimate_tokens(text, cs.chars_per_token))
        self.accounting = Accounting(session, count)
        if workspace is None:
            workspace = (
                DiskWorkspace(user.session_workspace(session.id))
                if session.persistent
                else MemoryWorkspace()
            )
        self.workspace = workspace
        self.deps = EngineDeps(
            session=session,
            settings=cs,
            accounting=self.accounting,
            workspace=workspace,
            summarize=summarize,
            window=window,
            reserve=reply_reserve(window, cs, max_output),
            on_file_written=on_summary_written,
            summary_limits=lambda window: summary_limits(settings.model, window),
        )
        self.engine: ContextEngine = make_engine(cs.engine, self.deps)
        self.compactor = Compactor(
            session,
            settings,
            self.engine,
            self.deps,
            used=lambda: self._used().tokens,
            status=self.status,
            emit=emit,
            record_side_call=self.record_side_call,
        )
        self.last_preflight: Preflight | None = None
        self.last_truncated = 0  # tool results truncated in the last request
        self.last_dropped = 0  # messages the bounded-buffer guard left out of the last request
        self._system_tokens = 0
        self._tools_tokens = 0
        self._mcp_tools_tokens = 0
        self._cut_memo: dict[tuple[str, int, int], int] = {}  # (result, its length, cap): frees
        self._cut_memo_count: Counter | None = None  # the counter the memo's figures are by

    # -- status ---------------------------------------------------------------------------------

    @property
    def paused(self) -> bool:
        """Automatic compaction paused (never when it is switched off: nothing to pause)."""
        return self.compactor.paused

    @property
    def strikes(self) -> int:
        return self.compactor.pause.strikes

    @property
    def problem(self) -> str:
        """Why the last compaction failed, until one succeeds (the status bar shows it)."""
        return self.compactor.problem

    @property
    def reserve(self) -> int:
        """Tokens kept free for the reply on this window (see ``preflight.reply_reserve``)."""
        return self.deps.reserve

    def note_prompt(self, system_prompt: str, tools: Sequence[dict[str, Any]]) -> None:
        """Tell the accounting the current system prompt and tool schemas (``prepare`` does it;
        call it once at start so the first status counts them too)."""
        self._system_tokens = self.accounting.count_text(system_prompt)
        self._tools_tokens = self.accounting.count_tools(tools)
        self.deps.prompt_tokens = self._system_tokens + self._tools_tokens
        mcp = [tool for tool in tools if _is_mcp_tool(tool)]
        self._mcp_tools_tokens = self.accounting.count_tools(mcp) if mcp else 0

    def _used(self) -> Used:
        return self.accounting.used(self._system_tokens, self._tools_tokens)

    def status(self) -> ContextStatus:
        used = self._used()
        if self.window > 0:
            # The context as the next request sends it, the figure its tier is judged on: a
            # 40 KB output on an 8k window showed 157 % and Truncate, for a request of 67 %
            # that no tier acted on (and the reply to it measured 67 %).
            sent = self._sent_usage("", result_cap_chars(self.window, self.settings.context))
            used = replace(used, tokens=min(used.tokens, sent))
        totals = self.accounting.totals()
        branch = self.accounting.branch_position()
        window = self.window
        pct = round(100.0 * used.tokens / window, 1) if window else 0.0
        return ContextStatus(
            model=self.model,
            window=window,
            used=used.tokens,
            pct=pct,
            tier=self.engine.auto_tier(used.tokens, window) if window else Tier.NONE,
            estimated=used.estimated,
            session_input_tokens=totals.input_tokens,
            session_output_tokens=totals.output_tokens,
            session_cost=totals.cost,
            session_cache_read_tokens=totals.cache_read_tokens,
            session_cache_write_tokens=totals.cache_write_tokens,
            compactions=self.accounting.view().compactions_on_path,
            paused=self.paused,
            branch_index=branch.index,
            branch_count=branch.count,
            problem=self.problem,
            mcp_tools=self._mcp_tools_tokens,
        )

    def record_usage(self, entry: MessageEntry) -> None:
        """An assistant entry with usage was appended: its usage anchors the count."""
        self.engine.ingest(entry)

    def record_side_call(self, purpose: str, usage: Usage, note: str = "") -> bool:
        """A model call outside the conversation whose output is not kept in the log (the
        memory save before a summary, a summary whose compaction was not applied): recorded
        now (``Session.record_model_call``) and reported like a reply's. False when the log
        refused it."""
        try:
            self.session.record_model_call(purpose, usage, note)
        except (SessionError, OSError):
            return False
        self.emit(UsageReported.of(usage))
        return True

    def set_model(self, model: str, window: int, max_output: int = 0) -> None:
        """Another model (``/model``): a new window is a user action, so a pause ends."""
        if window != self.window:
            self.compactor.new_window()
        self.model = model
        self.window = window
        self.max_output = max_output
        self.deps.window = window
        self.deps.reserve = reply_reserve(window, self.settings.context, max_output)

    # -- before every model call -----------------------------------------------------------------

    async def prepare(
        self,
        system_prompt: str,
        tools: list[dict[str, Any]],
        pending_input: str = "",
        *,
        compact: bool = True,
    ) -> list[Message]:
        """Compact if a tier applies, run the pre-flight check, and return the messages to send.

        ``pending_input`` is text about to be sent that is not in the session yet; it counts in
        the estimate only (the agent normally appends the user message first). ``compact=False``
        sends the context as it is, trimmed but never compacted: the pre-compaction memory save
        must see the turns a compaction is about to take away. Raises :class:`ContextTooLarge`
        when the request would not fit the window even after all of that.
        """
        cs = self.settings.context
        self.note_prompt(system_prompt, tools)
        if self.window <= 0:  # an unknown window: nothing to measure against
            messages, self.last_dropped = self._cap(self.engine.assemble(system_prompt))
            return messages
        cap = result_cap_chars(self.window, cs)
        judged = self._sent_usage(pending_input, cap)
        compacted_at = await self.compactor.before_request(compact=compact, judged=judged)
        messages = self.engine.assemble(system_prompt)
        check = self._preflight(messages, pending_input, cap)
        self.last_preflight = check
        must_compact = check.route in (Route.COMPACT_ONLY, Route.COMPACT_THEN_TRUNCATE)
        if compact and must_compact and await self.compactor.make_room(compacted_at):
            messages = self.engine.assemble(system_prompt)
            check = self._preflight(messages, pending_input, cap)
        self.last_truncated = 0
        if (
            check.route is not Route.FITS
            or self.compactor.force_truncate
            or self._over_budget_whole(pending_input)
        ):
            messages, self.last_truncated = truncate_tool_results(messages, cap)
            if compact:  # a side request (the memory save) leaves the flag for the real one
                self.compactor.force_truncate = False
        messages, self.last_dropped = self._cap(messages)
        self.emit(StatusChanged(self.status()))
        if compact:
            self._refuse_if_too_large(check, pending_input)
        return messages

    def _cap(self, messages: Sequence[Message]) -> tuple[list[Message], int]:
        """The message cap; its note names what the left-out messages did, by code."""
        entries, root = self.accounting.view().entries, self.session.header.cwd
        return cap_messages(
            messages,
            self.settings.context.max_messages,
            describe=lambda gone: facts.dropped_facts(entries, gone, root, self.window),
        )

    def _preflight(self, messages: Sequence[Message], pending: str, cap: int) -> Preflight:
        margin = self.settings.context.safety_margin
        need, budget = self._need(pending), budget_for(self.window, self.reserve)
        # What cutting oversized outputs frees of the estimated part only: those the provider's
        # figure measured were sent cut already. Counted again, four 20 KB outputs on an 8k
        # window (automatic compaction paused) "fit by truncation" and a 12.5k-token request
        # went out: each cut output was taken off a figure that had it cut.
        reducible = int(self._estimated_cut_frees(cap) * margin)
        return Preflight(choose_route(need, budget, reducible), need, budget, reducible)

    def _need(self, pending: str) -> int:
        """The next request by the pre-flight estimate: the provider's figure, and what came
        after it (and ``pending``) times the safety margin."""
        used = self._used()
        pending_tokens = self.accounting.count(pending) if pending else 0
        estimated = used.tokens - used.base + pending_tokens
        return used.base + int(estimated * self.settings.context.safety_margin)

    def _sent_usage(self, pending: str, cap: int) -> int:
        """The usage the automatic tiers are judged on: the request as the pre-flight check
        will send it. When it will cut oversized tool output (the request does not fit whole),
        what the cut frees does not count: judged whole, one large output on a half-full
        window ran a Truncate (three turns kept, no summary) that the cut made needless, and
        from the next reply on, whose figure measured the cut request, no tier applied.
        Outputs a provider figure already measured as sent are not counted again."""
        used = self._used().tokens
        if not (
            self._need(pending) > budget_for(self.window, self.reserve)
            or self.compactor.force_truncate
            or self._over_budget_whole(pending)
        ):
            return used
        return used - self._estimated_cut_frees(cap)

    def _estimated_cut_frees(self, cap: int) -> int:
        """What the pre-flight cut of oversized tool outputs takes off the part of the context
        no provider figure measured (a figure measured the request as sent: cut)."""
        acc = self.accounting
        if self._cut_memo_count is not acc.count:  # an exact tokenizer took over the counts
            self._cut_memo_count = acc.count
            self._cut_memo.clear()
        entries = acc.estimated_entries()
        return cut_frees(entries, acc.view(), cap, acc.count, self._cut_memo)

    def _over_budget_whole(self, pending: str) -> bool:
        """The request over the budget when all of it is estimated. A reply's figure measured
        the request it answered, which this check may have sent with oversized outputs cut;
        they are whole in the context, so by that figure the next request "fits" and they went
        whole (34.6k tokens on a 32k window). Judged this way they are cut in every request
        that needs it, the same way each time (the prompt cache keeps it), in every process."""
        pending_tokens = self.accounting.count(pending) if pending else 0
        whole = self._system_tokens + self._tools_tokens + self.accounting.messages_tokens()
        return whole + pending_tokens > budget_for(self.window, self.reserve)

    def _refuse_if_too_large(self, check: Preflight, pending: str) -> None:
        """The estimate without its margin, less what truncation freed, against the whole
        window: past it no provider takes the request, so it is not sent."""
        pending_tokens = self.accounting.count(pending) if pending else 0
        margin = self.settings.context.safety_margin
        size = self._used().tokens + pending_tokens - int(check.reducible / margin)
        if size > self.window:
            raise ContextTooLarge(
                f"The next request (about {size:,} tokens) does not fit the {self.window:,}-token "
                "context window of "
                f"{self.model or 'the model'}, and compaction could not free enough, so it was "
                "not sent. Run /compact (or /compact truncate), undo the step that added the "
                "large output, or start a new session."
            )

    # -- compaction (the compactor's) ------------------------------------------------------------

    async def compact(
        self, tier: Tier | None = None, *, manual: bool = True, instructions: str = ""
    ) -> CompactionEntry | None:
        """Compact now (``/compact``, ``agentsh compact``); the tier defaults to the one the
        context is in, else Summarize (always Summarize when ``instructions`` steer the
        summary). A manual compaction resets anti-thrashing."""
        return await self.compactor.compact(tier, manual=manual, instructions=instructions)

    async def on_overflow(self) -> bool:
        """The provider said the request was too long: compact at the next tier (or truncate
        oversized tool results next time). False when nothing could be freed."""
        return await self.compactor.on_overflow()

    def needs_memory_flush(self) -> bool:
        """True when the next ``prepare`` is about to summarize and the (opt-in) pre-compaction
        memory save has not run yet: the agent may give the model one turn with the memory tool,
        then call :meth:`mark_memory_flushed`."""
        return self.compactor.needs_memory_flush()

    def mark_memory_flushed(self) -> None:
        self.compactor.mark_memory_flushed()

    # -- agentsh context ---------------------------------------------------------------------------

    def breakdown(
        self, system_prompt: str, tools: list[dict[str, Any]], memory: str = ""
    ) -> ContextBreakdown:
        """Per-part token counts of the current context and what each tier would do now.
        ``memory`` is the memory part of the system prompt, counted apart when given."""
        self.note_prompt(system_prompt, tools)
        acc = self.accounting
        view = acc.view()
        tokens = acc.tokens_by_entry()
        memory_tokens = acc.count(memory) if memory and memory in system_prompt else 0
        system_tokens = max(0, self._system_tokens - memory_tokens)
        tool_results = sum(
            t for e, t in zip(view.entries, tokens, strict=True) if e.TYPE == "toolResult"
        )
        messages = sum(tokens) - tool_results
        summary = acc.summary_tokens(view.summary)
        used = self._used()
        previews = tuple(self.engine.preview(tier, used.tokens) for tier in tiers.ORDER[1:])
        status = self.status()
        return ContextBreakdown(
            model=self.model,
            window=self.window,
            engine=self.engine.name,
            system=system_tokens,
            tools=self._tools_tokens,
            memory=memory_tokens,
            summary=summary,
            messages=messages,
            tool_results=tool_results,
            estimated_total=self._system_tokens + self._tools_tokens + summary + sum(tokens),
            used=used.tokens,
            estimated=used.estimated,
            pct=status.pct,
            tier=status.tier,
            entries=len(view.entries),
            turns=len(turn_starts(view.entries)),
            compactions=view.compactions_on_path,
            paused=self.paused,
            problem=status.problem,
            previews=previews,
            mcp_tools=self._mcp_tools_tokens,
        )


def _is_mcp_tool(schema: dict[str, Any]) -> bool:
    """Whether a tool schema came from an MCP server: their names, and only theirs, start
    with ``mcp_`` (``mcp__server__tool`` and ``mcp_search``; see agentsh.mcp.names)."""
    function = schema.get("function")
    name = function.get("name", "") if isinstance(function, dict) else ""
    return isinstance(name, str) and name.startswith("mcp_")
