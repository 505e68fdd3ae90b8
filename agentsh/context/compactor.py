"""When and how a compaction runs, for :class:`agentsh.context.manager.ContextManager`.

:class:`Compactor` decides, before each model call, whether a tier's compaction starts on its
own (and says once when it is skipped or held back), runs the pre-flight net when a request
would not fit, the next tier after a provider's overflow error, and ``/compact``; it reports
each run (started, finished or failed, the summary call's usage) and keeps the state between
runs: a failure held until the next turn, the memory save done, and anti-thrashing
(:mod:`agentsh.context.pause`, read again from the log). What a compaction keeps and how it
shrinks the context is the engine's (:mod:`agentsh.context.engine`).
"""

from __future__ import annotations

from collections.abc import Callable

from agentsh.config import Settings
from agentsh.context import tiers
from agentsh.context.accounting import Accounting
from agentsh.context.engine_protocol import CompactionOutcome, ContextEngine, EngineDeps, Plan
from agentsh.context.pause import Pause
from agentsh.context.preflight import reducible_tokens, result_cap_chars
from agentsh.context.view import is_sent
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
from agentsh.session.entries import AnyEntry, CompactionEntry, MessageEntry, Role
from agentsh.session.session import Session
from agentsh.values import Usage

_PAUSED_NOTE = "automatic compaction is paused: only a request that would not fit is compacted"


class Compactor:
    """Runs the compactions of one context and keeps the state between them."""

    def __init__(
        self,
        session: Session,
        settings: Settings,
        engine: ContextEngine,
        deps: EngineDeps,
        *,
        used: Callable[[], int],
        status: Callable[[], ContextStatus],
        emit: Callable[[Event], None],
        record_side_call: Callable[[str, Usage, str], bool],
    ) -> None:
        self.session = session
        self.settings = settings
        self.engine = engine
        self.deps = deps
        self.accounting: Accounting = deps.accounting
        self._used = used
        self._status = status
        self.emit = emit
        self._record_side_call = record_side_call
        self.problem = ""
        self.force_truncate = False  # truncate oversized tool results at the next request
        self._failed_turn: str | None = None
        self._memory_flushed = False
        self.pause = Pause(settings.context)
        self._pause_view: object = None  # the context view the pause was read for
        # The tier whose "skipped" or "paused" notice was already given in this context state
        # (no compaction since): this process's, or the last one's, read from the log at the
        # first request (with the token counter the decisions use by then).
        self._declined: Tier | None = None
        self._declined_read = False

    @property
    def window(self) -> int:
        return self.deps.window

    # -- anti-thrashing ---------------------------------------------------------------------------

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

    def _entry_tokens(self, entry: AnyEntry) -> int:
        return self.accounting.entry_tokens(entry, self.accounting.view()) if is_sent(entry) else 0

    def _in_tier(self, used: int) -> bool:
        return self.window > 0 and self.engine.auto_tier(used, self.window) is not Tier.NONE

    def new_window(self) -> None:
        """Another model's window is a user action: a pause ends."""
        self.pause.reset()

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
        return not self.failed_this_turn()

    def failed_this_turn(self) -> bool:
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

    # -- before a model call ----------------------------------------------------------------------

    async def before_request(self, *, compact: bool, judged: int | None = None) -> Tier | None:
        """The automatic tier, run when one applies and may run: its tier when it compacted.
        ``compact=False`` (a side request) only reads the state. ``judged``: the usage the
        tier is judged on, when the request will be sent smaller than the context (the
        pre-flight check's truncation of oversized tool output)."""
        if not self._declined_read:
            self._declined_read = True
            self._declined = self._tier_told_from_log()
        used = self._used()
        tier = self.engine.auto_tier(min(used, judged) if judged is not None else used, self.window)
        self._read_pause()
        if compact and self.pause.watching:
            self._watch(tier, used)
        if tier is Tier.NONE:
            self._declined = None
        elif compact and self._may_compact_automatically():
            pct = 100.0 * used / self.window
            if await self._automatic(tier, used, f"context at {pct:.0f}%") is not None:
                return tier
        elif compact and self.paused and not self.pause.told:
            self.pause.told = True  # once a pause: its notice said why, this says where
            pct = 100.0 * used / self.window
            self.emit(
                Notice(
                    NoticeLevel.INFO,
                    f"{tier.label} not run at {pct:.0f}%: automatic compaction is paused "
                    "(anti-thrashing); /compact resumes it.",
                )
            )
        return None

    async def make_room(self, compacted_at: Tier | None) -> bool:
        """The pre-flight net: the request does not fit as it is, so this acts when paused and
        with ``auto_compact`` off too. True when a compaction was applied."""
        if self.failed_this_turn():
            return False
        current = self.engine.auto_tier(self._used(), self.window)
        target = (
            tiers.next_tier(compacted_at)
            if compacted_at is not None
            else max(current, Tier.MOVE_TO_WORKSPACE, key=tiers.severity)
        )
        done = await self._forced(
            target, reason="pre-flight: the next request would not fit the window"
        )
        return done is not None

    # -- on request ----------------------------------------------------------------------------

    async def compact(
        self, tier: Tier | None = None, *, manual: bool = True, instructions: str = ""
    ) -> CompactionEntry | None:
        """See :meth:`agentsh.context.manager.ContextManager.compact`."""
        if tier is None or tier is Tier.NONE:
            current = self.engine.auto_tier(self._used(), self.window)
            tier = current if current is not Tier.NONE and not instructions else Tier.SUMMARIZE
        if manual:
            self.pause.reset()
        used = self._used()
        plan = self.engine.plan(tier, used_before=used, stop_at_prune=False)
        if not plan.changes:
            self.emit(CompactionFailed(tier, plan.blocker))
            self.emit(StatusChanged(self._status()))
            return None
        outcome = await self._apply(
            plan, used, manual=manual, reason="requested", instructions=instructions
        )
        return outcome.entry

    async def on_overflow(self) -> bool:
        """See :meth:`agentsh.context.manager.ContextManager.on_overflow`."""
        current = self.engine.auto_tier(self._used(), self.window)
        entry = await self._forced(
            tiers.next_tier(current), reason="the provider said the context is too long"
        )
        if entry is not None:
            return True
        messages = self.engine.assemble("")
        cap = result_cap_chars(self.window, self.settings.context)
        if reducible_tokens(messages, cap, self.accounting.count) > 0:
            self.force_truncate = True
            return True
        return False

    def needs_memory_flush(self) -> bool:
        """See :meth:`agentsh.context.manager.ContextManager.needs_memory_flush`."""
        if not self.settings.context.pre_compaction_memory_save or self._memory_flushed:
            return False
        if not self._may_compact_automatically():
            return False
        used = self._used()
        if self.engine.auto_tier(used, self.window) is not Tier.SUMMARIZE:
            return False
        plan = self.engine.plan(Tier.SUMMARIZE, used_before=used, stop_at_prune=True)
        # (judged after pruning, it may be a MoveToWorkspace: no summary, nothing to save for)
        summarizes = plan.tier is Tier.SUMMARIZE and plan.cut is not None
        return summarizes and self._frees_enough(plan, used)

    def mark_memory_flushed(self) -> None:
        self._memory_flushed = True

    # -- running one ----------------------------------------------------------------------------

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
        used = self._used()
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
            self.emit(StatusChanged(self._status()))
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
                archive_file=outcome.archive_file,
                summary_file=outcome.summary_file,
            )
        )
        self.emit(StatusChanged(self._status()))
        return outcome

    def _record_unapplied(self, outcome: CompactionOutcome) -> None:
        """A compaction not applied (refused, failed) after its summary call was made: the
        call is recorded on its own, not left for a compaction that may never come."""
        usage = self.deps.side_usage
        if usage is None:
            return
        why = outcome.error or outcome.note or "the compaction was not applied"
        if self._record_side_call("compaction summary", usage, why):
            self.deps.side_usage = None
