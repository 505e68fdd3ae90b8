"""The one object the agent loop talks to about its context: :class:`ContextManager`.

``prepare`` before every model call (status, automatic compaction, the pre-flight route, the
bounded-buffer guard), ``on_overflow`` after a provider's context-overflow error, ``compact``
for ``/compact``, ``status`` for the status bar and ``breakdown`` for ``agentsh context``.
Anti-thrashing (when automatic compaction pauses) is :mod:`agentsh.context.pause`'s. The
policy itself (what to keep, how to shrink) is the engine's: :mod:`agentsh.context.engine`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentsh.config import Settings
from agentsh.context import facts, tiers
from agentsh.context.accounting import Accounting, Counter, Used
from agentsh.context.breakdown import ContextBreakdown
from agentsh.context.engine import make_engine
from agentsh.context.engine_protocol import (
    CompactionOutcome,
    ContextEngine,
    EngineDeps,
    Plan,
    Summarize,
)
from agentsh.context.pause import Pause
from agentsh.context.preflight import (
    Preflight,
    Route,
    budget_for,
    cap_messages,
    choose_route,
    reducible_tokens,
    reply_reserve,
    result_cap_chars,
    truncate_tool_results,
)
from agentsh.context.repair import Message
from agentsh.context.summary_model import summary_limits
from agentsh.context.view import is_sent, turn_starts
from agentsh.context.workspace import DiskWorkspace, MemoryWorkspace, Workspace
from agentsh.errors import AgentshError
from agentsh.events import (
    CompactionFailed,
    CompactionFinished,
    CompactionStarted,
    ContextStatus,
    Event,
    Notice,
    NoticeLevel,
    StatusChanged,
    Tier,
    UsageReported,
)
from agentsh.llm.tokens import estimate_tokens
from agentsh.paths import UserPaths
from agentsh.session.entries import AnyEntry, CompactionEntry, MessageEntry, Role
from agentsh.session.log import SessionError
from agentsh.session.session import Session
from agentsh.values import Usage

_PAUSED_NOTE = "automatic compaction is paused: only a request that would not fit is compacted"


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
        self.problem = ""
        self.last_preflight: Preflight | None = None
        self.last_truncated = 0  # tool results truncated in the last request
        self.last_dropped = 0  # messages the bounded-buffer guard left out of the last request
        self._system_tokens = 0
        self._tools_tokens = 0
        self._mcp_tools_tokens = 0
        self._failed_turn: str | None = None
        self._force_truncate = False
        self._memory_flushed = False
        self.pause = Pause(cs)
        self._pause_view: object = None  # the context view the pause was read for
        # The tier whose "skipped" or "paused" notice was already given in this context state
        # (no compaction since): this process's, or the last one's, read from the log at the
        # first ``prepare`` (with the token counter the decisions use by then).
        self._declined: Tier | None = None
        self._declined_read = False

    # -- status ---------------------------------------------------------------------------------

    @property
    def paused(self) -> bool:
        """Automatic compaction paused (never when it is switched off: nothing to pause)."""
        self._read_pause()
        return self.settings.context.auto_compact and self.pause.paused

    def _read_pause(self) -> None:
        """The pause as the log has it, read again whenever the context view is rebuilt: a
        branch switch or ``/compact undo`` (a path without what paused it lifts it; usage
        compared with the figure it paused at went by two different counts), a compaction, or
        an exact tokenizer taking over the counts."""
        view = self.accounting.view()
        if view is not self._pause_view:
            self._pause_view = view
            self.pause.replay(self.session.current_path(), self._in_tier, self._entry_tokens)

    @property
    def strikes(self) -> int:
        return self.pause.strikes

    def _entry_tokens(self, entry: AnyEntry) -> int:
        return self.accounting.entry_tokens(entry, self.accounting.view()) if is_sent(entry) else 0

    def _in_tier(self, used: int) -> bool:
        return self.window > 0 and self.engine.auto_tier(used, self.window) is not Tier.NONE

    @property
    def reserve(self) -> int:
        """Tokens kept free for the reply on this window (see ``preflight.reply_reserve``)."""
        return self.deps.reserve

    def note_prompt(self, system_prompt: str, tools: Sequence[dict[str, Any]]) -> None:
        """Tell the accounting the current system prompt and tool schemas (``prepare`` does it;
        call it once at start so the first status counts them too)."""
        self._system_tokens = self.accounting.count_text(system_prompt)
        self._tools_tokens = self.accounting.count_tools(tools)
        mcp = [tool for tool in tools if _is_mcp_tool(tool)]
        self._mcp_tools_tokens = self.accounting.count_tools(mcp) if mcp else 0

    def _used(self) -> Used:
        return self.accounting.used(self._system_tokens, self._tools_tokens)

    def status(self) -> ContextStatus:
        used = self._used()
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
            self.pause.reset()
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
        if not self._declined_read:
            self._declined_read = True
            self._declined = self._tier_told_from_log()
        used = self._used()
        compacted_at: Tier | None = None
        tier = self.engine.auto_tier(used.tokens, self.window)
        self._read_pause()
        if compact and self.pause.watching:
            self._watch(tier, used.tokens)
        if tier is Tier.NONE:
            self._declined = None
        elif compact and self._may_compact_automatically():
            pct = 100.0 * used.tokens / self.window
            done = await self._automatic(tier, used.tokens, f"context at {pct:.0f}%")
            if done is not None:
                compacted_at = tier
        elif compact and self.paused and not self.pause.told:
            self.pause.told = True  # once a pause: its notice said why, this says where
            pct = 100.0 * used.tokens / self.window
            self.emit(
                Notice(
                    NoticeLevel.INFO,
                    f"{tier.label} not run at {pct:.0f}%: automatic compaction is paused "
                    "(anti-thrashing); /compact resumes it.",
                )
            )

        messages = self.engine.assemble(system_prompt)
        cap = result_cap_chars(self.window, cs)
        check = self._preflight(messages, pending_input, cap)
        self.last_preflight = check
        must_compact = check.route in (Route.COMPACT_ONLY, Route.COMPACT_THEN_TRUNCATE)
        if compact and must_compact and not self._failed_this_turn():
            # The safety net: it acts when paused and with auto_compact off too, because the
            # request does not fit as it is.
            current = self.engine.auto_tier(self._used().tokens, self.window)
            target = (
                tiers.next_tier(compacted_at)
                if compacted_at is not None
                else max(current, Tier.MOVE_TO_WORKSPACE, key=tiers.severity)
            )
            done = await self._forced(
                target, reason="pre-flight: the next request would not fit the window"
            )
            if done is not None:
                messages = self.engine.assemble(system_prompt)
                check = self._preflight(messages, pending_input, cap)
        self.last_truncated = 0
        if check.route is not Route.FITS or self._force_truncate:
            messages, self.last_truncated = truncate_tool_results(messages, cap)
            if compact:  # a side request (the memory save) leaves the flag for the real one
                self._force_truncate = False
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
        cs = self.settings.context
        used = self._used()
        pending_tokens = self.accounting.count(pending) if pending else 0
        exact, estimated = used.base, used.tokens - used.base + pending_tokens
        need = exact + int(estimated * cs.safety_margin)
        budget = budget_for(self.window, self.reserve)
        reducible = int(reducible_tokens(messages, cap, self.accounting.count) * cs.safety_margin)
        return Preflight(choose_route(need, budget, reducible), need, budget, reducible)

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

    # -- compaction -------------------------------------------------------------------------------

    async def compact(
        self, tier: Tier | None = None, *, manual: bool = True, instructions: str = ""
    ) -> CompactionEntry | None:
        """Compact now (``/compact``, ``agentsh compact``); the tier defaults to the one the
        context is in, else Summarize (always Summarize when ``instructions`` steer the
        summary). A manual compaction resets anti-thrashing."""
        if tier is None or tier is Tier.NONE:
            current = self.engine.auto_tier(self._used().tokens, self.window)
            tier = current if current is not Tier.NONE and not instructions else Tier.SUMMARIZE
        if manual:
            self.pause.reset()
        used = self._used().tokens
        plan = self.engine.plan(tier, used_before=used, stop_at_prune=False)
        if not plan.changes:
            self.emit(CompactionFailed(tier, plan.blocker))
            self.emit(StatusChanged(self.status()))
            return None
        outcome = await self._apply(
            plan, used, manual=manual, reason="requested", instructions=instructions
        )
        return outcome.entry

    async def on_overflow(self) -> bool:
        """The provider said the request was too long: compact at the next tier (or truncate
        oversized tool results next time). False when nothing could be freed."""
        current = self.engine.auto_tier(self._used().tokens, self.window)
        entry = await self._forced(
            tiers.next_tier(current), reason="the provider said the context is too long"
        )
        if entry is not None:
            return True
        messages = self.engine.assemble("")
        cap = result_cap_chars(self.window, self.settings.context)
        if reducible_tokens(messages, cap, self.accounting.count) > 0:
            self._force_truncate = True
            return True
        return False

    def needs_memory_flush(self) -> bool:
        """True when the next ``prepare`` is about to summarize and the (opt-in) pre-compaction
        memory save has not run yet: the agent may give the model one turn with the memory tool,
        then call :meth:`mark_memory_flushed`."""
        if not self.settings.context.pre_compaction_memory_save or self._memory_flushed:
            return False
        if not self._may_compact_automatically():
            return False
        used = self._used().tokens
        if self.engine.auto_tier(used, self.window) is not Tier.SUMMARIZE:
            return False
        plan = self.engine.plan(Tier.SUMMARIZE, used_before=used, stop_at_prune=True)
        return plan.cut is not None and self._frees_enough(plan, used)

    def mark_memory_flushed(self) -> None:
        self._memory_flushed = True

    async def _automatic(self, tier: Tier, used: int, reason: str) -> CompactionEntry | None:
        """A tier's compaction, unless it cannot free enough to matter: then nothing starts,
        and the user is told once (not at every call) until something changes."""
        plan = self.engine.plan(tier, used_before=used, stop_at_prune=True)
        if not self._frees_enough(plan, used):
            if self._declined is not tier:
                self._declined = tier
                why = plan.blocker or (
                    f"it would free only about {plan.frees:,} tokens, under "
                    f"{self.settings.context.strike_min_saving:.0%} of the context"
                )
                self.emit(
                    Notice(NoticeLevel.INFO, f"{tier.label} skipped: {why}. {self._next(tier)}")
                )
            return None
        self._declined = None
        return (await self._apply(plan, used, manual=False, reason=reason)).entry

    def _frees_enough(self, plan: Plan, used: int) -> bool:
        """An automatic compaction that frees under ``strike_min_saving`` would only be a
        strike: it is not worth a model call, a rewritten prompt cache, or the user's wait."""
        enough = self.settings.context.strike_min_saving * used
        return plan.changes and plan.frees >= max(1, enough)

    def _next(self, tier: Tier) -> str:
        cs = self.settings.context
        top = tiers.severity(self.engine.auto_tier(self.window, self.window))  # pi: Summarize
        later = [
            f"{t.label} at {tiers.rule(t, cs).threshold:.0%}"
            for t in tiers.ORDER[tiers.severity(tier) + 1 : top + 1]
        ]
        if not later:
            return "Run /compact to choose what leaves."
        return f"Compaction waits for {' or '.join(later)}, or /compact."

    async def _forced(self, tier: Tier, *, reason: str) -> CompactionEntry | None:
        """The first tier from ``tier`` up that shrinks the context, run now."""
        used = self._used().tokens
        for candidate in tiers.ORDER[tiers.severity(tier) :]:
            plan = self.engine.plan(candidate, used_before=used, stop_at_prune=False)
            if not plan.changes:
                continue
            outcome = await self._apply(plan, used, manual=False, reason=reason)
            if outcome.entry is not None or outcome.error:
                return outcome.entry
        return None

    async def _apply(
        self, plan: Plan, used: int, *, manual: bool, reason: str, instructions: str = ""
    ) -> CompactionOutcome:
        self.emit(CompactionStarted(plan.tier, reason))
        held = self.paused and not manual  # the pre-flight net (or an overflow) while paused
        self.deps.paused = self.pause.reason if held else ""
        outcome = await self.engine.compact(
            plan, used_before=used, manual=manual, instructions=instructions
        )
        if outcome.entry is None:
            self._record_unapplied(outcome)
            if outcome.error:
                # Nothing left the context; say why and try again at the next turn.
                self.problem = f"compaction failed: {outcome.error}"
                self._failed_turn = self._turn_key()
            elif not manual and self.pause.strike(used):  # one that frees nothing is one too
                self._say_paused()
            self.emit(CompactionFailed(outcome.tier, outcome.error or outcome.note))
            self.emit(StatusChanged(self.status()))
            return outcome
        self.problem = ""
        self._failed_turn = None
        self._memory_flushed = False
        usage = outcome.entry.usage
        if usage is not None:  # the summary call: counted like any reply
            self.emit(UsageReported.of(usage))
        if self.pause.replay(self.session.current_path(), self._in_tier, self._entry_tokens):
            self._say_paused()
        self.emit(
            CompactionFinished(
                entry_id=outcome.entry.id,
                tier=outcome.tier,
                tokens_before=outcome.tokens_before,
                tokens_after=outcome.tokens_after,
                workspace_file=outcome.workspace_file,
                note="; ".join(n for n in (outcome.note, _PAUSED_NOTE if held else "") if n),
            )
        )
        self.emit(StatusChanged(self.status()))
        return outcome

    def _record_unapplied(self, outcome: CompactionOutcome) -> None:
        """A compaction not applied (refused, failed) after its summary call was made: the
        call is recorded on its own, not left for a compaction that may never come."""
        usage = self.deps.side_usage
        if usage is None:
            return
        why = outcome.error or outcome.note or "the compaction was not applied"
        if self.record_side_call("compaction summary", usage, why):
            self.deps.side_usage = None

    # -- anti-thrashing and retries ----------------------------------------------------------------

    def _watch(self, tier: Tier, used: int) -> None:
        """Within a turn of an automatic compaction, a tier reached again pauses automatic
        compaction instead of compacting a second time (see :mod:`agentsh.context.pause`)."""
        path = self.session.current_path()
        told = self.pause.replay(path, self._in_tier, self._entry_tokens)
        if not self.pause.paused and self.pause.watching and tier is not Tier.NONE:
            self.pause.engage(used)
            told = True
        if told:
            self._declined = tier  # the pause notice says it all
            self._say_paused()

    def _say_paused(self) -> None:
        if self.settings.context.auto_compact:
            self.emit(Notice(NoticeLevel.WARNING, self.pause.notice()))

    def _may_compact_automatically(self) -> bool:
        if not self.settings.context.auto_compact or self.paused:
            return False
        return not self._failed_this_turn()

    def _failed_this_turn(self) -> bool:
        # After a failed write, try again at the next turn, not before every call of this one.
        return self._failed_turn is not None and self._failed_turn == self._turn_key()

    def _turn_key(self) -> str:
        entries = self.accounting.view().entries
        for entry in reversed(entries):
            if isinstance(entry, MessageEntry) and entry.role is Role.USER:
                return entry.id
        return ""

    def _tier_told_from_log(self) -> Tier | None:
        """The tier the process that made the last request measured before making it, when no
        compaction ran since: it said so then (a skip, or the pause), so a user running ``-p
        -c`` turn after turn is told once. Usage only grows between compactions on a path, so
        the same tier is the same state (the provider's count of that request may already be
        in the next tier, which nobody was told of yet)."""
        used = self.accounting.used_before_last_request()
        if used is None or self.window <= 0:
            return None
        tier = self.engine.auto_tier(used, self.window)
        return tier if tier is not Tier.NONE else None

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
