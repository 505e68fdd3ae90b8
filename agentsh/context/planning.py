"""Planning a compaction: what would leave the context at a tier, and what it would free.

:class:`TieredPlanner` is the engines' first half (:mod:`agentsh.context.engine` applies what it
plans): SPEC §4's cheap phase first (prune old tool output, without a model call), then the cut
at a turn boundary, under the tier's kept-turn and kept-token caps. Nothing is written and no
model is called here, so the compactor can decline a plan that frees nothing before anything
starts, and ``agentsh context`` can preview every tier.

An automatic compaction judges its tier on what pruning leaves: the tier the context is in
says how much must go, but a Summarize or Truncate whose pruning alone takes the context down
to a lighter tier's range runs as that lighter tier (no summary call, more turns kept). The
context is judged as it will be sent: :func:`cut_frees` is what the pre-flight check's cut of
oversized tool output takes off a request that does not fit whole (the manager judges the tier
on it, and a compaction's "after" figure is the context after that cut).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from agentsh.context import tiers
from agentsh.context.cut import Cut, choose_cut
from agentsh.context.engine_protocol import PROVISIONAL, EngineDeps, Plan, TierPreview
from agentsh.context.preflight import budget_for, result_cap_chars, truncate_text
from agentsh.context.prune import PruneResult, prune
from agentsh.context.view import ContextEntry, ContextView, turn_starts
from agentsh.events import Tier
from agentsh.session.entries import CompactionEntry, ToolResultEntry

_FACTS_GUESS = 200  # tokens the code-kept facts add to a summary, for the estimate


class TieredPlanner:
    """What compacting at a tier would do (see the module docstring)."""

    name = "tiered"
    prunes = True

    def __init__(self, deps: EngineDeps) -> None:
        self.deps = deps

    def auto_tier(self, used: int, window: int) -> Tier:
        return tiers.tier_for(used / window if window else 0.0, self.deps.settings)

    def preview(self, tier: Tier, used_before: int) -> TierPreview:
        plan = self.plan(tier, used_before=used_before, stop_at_prune=False)
        rule = tiers.rule(tier, self.deps.settings)
        if plan.cut is None:
            return TierPreview(
                tier,
                rule.keep_turns,
                len(plan.view.entries),
                0,
                sum(plan.tokens),
                plan.frees,
                prune_only=True,
                note="nothing to cut: only pruning applies" if plan.changes else plan.blocker,
            )
        return TierPreview(
            tier,
            rule.keep_turns,
            len(plan.view.entries) - plan.cut.index,
            plan.cut.index,
            plan.cut.kept_tokens,
            plan.frees,
            prune_only=False,
            note="splits the newest turn" if plan.cut.split_turn else plan.blocker,
        )

    def plan(self, tier: Tier, *, used_before: int, stop_at_prune: bool) -> Plan:
        """What compacting at ``tier`` would do. ``stop_at_prune`` (an automatic compaction):
        pruning alone may do, and the tier is judged on what pruning leaves."""
        plan = self._plan_at(tier, used_before, stop_at_prune)
        if not stop_at_prune or plan.cut is None or plan.prune_frees <= 0 or self.deps.window <= 0:
            return plan
        return self._judged_after_pruning(plan, used_before)

    def _judged_after_pruning(self, plan: Plan, used_before: int) -> Plan:
        """SPEC §4: every tier runs the cheap phase first, and pruning that takes the context
        under the tier's threshold ends it. Pruning alone stops only at ``compact_target`` (just
        under a tier, the next turn compacted again), so the turns still go, but as the
        lightest tier the pruned context is in, with the pruning of the tier it was in: a
        Summarize at 88 % whose pruning left 68 % made a (lossy, paid) summary call where an
        archive was enough, and a Truncate at 96 % pruned to 88 % dropped turns a summary
        would have kept."""
        window = self.deps.window
        left = used_before - plan.prune_frees
        lighter = max(self.auto_tier(left, window), Tier.MOVE_TO_WORKSPACE, key=tiers.severity)
        if tiers.severity(lighter) >= tiers.severity(plan.tier):
            return plan
        keep = tiers.rule(plan.tier, self.deps.settings).keep_turns
        candidate = self._plan_at(lighter, used_before, True, prune_keep=keep)
        enough = max(1.0, self.deps.settings.strike_min_saving * used_before)
        if candidate.cut is None or candidate.frees < enough:
            return plan
        was, now = 100 * used_before / window, 100 * left / window
        return replace(
            candidate,
            note=(
                f"pruning old tool output took the context from {was:.0f}% to {now:.0f}%, "
                f"so {lighter.label} ran instead of {plan.tier.label}"
            ),
        )

    def _plan_at(
        self, tier: Tier, used_before: int, stop_at_prune: bool, prune_keep: int = 0
    ) -> Plan:
        """``tier``'s plan; ``prune_keep``: prune the outputs older than that many turns (by
        default, those older than the turns the tier keeps)."""
        acc = self.deps.accounting
        settings = self.deps.settings
        view = acc.view()
        rule = tiers.rule(tier, settings)
        pruned: PruneResult | None = None
        work_view = view
        if self.prunes:
            begins = turn_starts(view.entries)
            keep = prune_keep or rule.keep_turns
            old_before = begins[-keep] if len(begins) > keep else 0
            pruned = prune(view, old_before, settings, acc.count)
            if pruned.changed:
                work_view = _with_pruning(view, pruned)
        tokens = [acc.entry_tokens(e, work_view) for e in work_view.entries]
        before = acc.messages_tokens()
        summary_now = acc.summary_tokens(view.summary)
        pruned_only = summary_now + _FACTS_GUESS + sum(tokens)
        prune_frees = max(0, before - pruned_only) if pruned is not None and pruned.changed else 0
        # Stop at pruning when that alone takes the context down to ``compact_target`` and frees
        # enough to matter: a prune that leaves it just under a tier would only make the next
        # turn compact again (and then pause: see agentsh.context.pause).
        if (
            stop_at_prune
            and prune_frees >= settings.strike_min_saving * used_before
            and self._out_of_tiers(used_before - prune_frees)
        ):
            return Plan(tier, None, pruned, work_view, tokens, prune_frees, prune_frees=prune_frees)
        # What stays beside the kept turns: agentsh's own prompt, the tools, the summary.
        fixed = max(0, used_before - before) + self._summary_guess(tier, summary_now)
        cut = self._choose_cut(work_view, tokens, rule, fixed)
        if cut is None:
            blocker = "" if prune_frees else self._nothing_to_free(tier, work_view)
            return Plan(tier, None, pruned, work_view, tokens, prune_frees, blocker, prune_frees)
        frees = max(0, before - cut.kept_tokens - self._summary_guess(tier, summary_now))
        blocker = "" if frees else "nothing to free: the summary would be as large as what leaves"
        return Plan(tier, cut, pruned, work_view, tokens, frees, blocker, prune_frees)

    # -- planning -------------------------------------------------------------------------------

    def _nothing_to_free(self, tier: Tier, view: ContextView) -> str:
        turns = len(turn_starts(view.entries))
        keep = tiers.rule(tier, self.deps.settings).keep_turns
        if self.name == "tiered" and 1 < turns <= keep:
            return (
                f"nothing to free: the context holds {turns} turns and {tier.label} keeps "
                f"the last {keep}"
            )
        return "nothing to free: what is left is the newest turn, which must stay"

    def _out_of_tiers(self, used: int) -> bool:
        window = self.deps.window
        return window > 0 and used / window <= self.deps.settings.compact_target

    def _choose_cut(
        self, view: ContextView, tokens: Sequence[int], rule: tiers.TierRule, fixed: int
    ) -> Cut | None:
        cap = tiers.kept_tokens_cap(rule, self.deps.settings, self.deps.window, fixed)
        return choose_cut(view.entries, tokens, rule.keep_turns, cap)

    def sent_after(
        self, after: int, after_messages: int, kept: Iterable[ContextEntry], view: ContextView
    ) -> int:
        """``after`` (a compaction's figure, the kept outputs whole) as the next request will
        send it: when the kept context does not fit the budget whole (``after_messages`` of
        conversation beside agentsh's prompt and tools), the pre-flight check cuts its
        oversized tool outputs, and the figure is what that leaves. Counted whole, an 8k
        Truncate that kept one 40 KB output reported 121 % (the status bar said so until the
        next reply) for a request of 32 %, and the next request paused automatic compaction
        as "back in a tier"."""
        window = self.deps.window
        if window <= 0:
            return after
        whole = self.deps.prompt_tokens + after_messages
        if whole <= budget_for(window, self.deps.reserve):
            return after  # sent whole: nothing is cut
        cap = result_cap_chars(window, self.deps.settings)
        return max(0, after - cut_frees(kept, view, cap, self.deps.accounting.count))

    def summary_max_tokens(self, window: int | None = None) -> int:
        """The longest summary: ``summary_max_tokens``, at most a tenth of a small window
        (the session's, or ``window``: the summary model's)."""
        cap = self.deps.settings.summary_max_tokens
        window = self.deps.window if window is None else window
        return min(cap, max(256, window // 10)) if window > 0 else cap

    def _summary_guess(self, tier: Tier, summary_now: int) -> int:
        if tier is Tier.SUMMARIZE:
            return summary_now + _FACTS_GUESS + self.summary_max_tokens() // 2
        return summary_now + _FACTS_GUESS


def cut_frees(
    entries: Iterable[ContextEntry],
    view: ContextView,
    cap: int,
    count: Callable[[str], int],
    memo: dict[tuple[str, int, int], int] | None = None,
) -> int:
    """Tokens the pre-flight check's cut of oversized tool outputs (over ``cap`` characters,
    head and tail kept) takes off ``entries`` as ``view`` sends them; ``memo`` keeps each
    output's figure (the status line asks at every event)."""
    freed = 0
    for entry in entries:
        if isinstance(entry, ToolResultEntry):
            content = view.result_content(entry)
            if len(content) > cap:
                key = (entry.id, len(content), cap)
                known = memo.get(key) if memo is not None else None
                if known is None:
                    cut = truncate_text(content, cap, entry.tool_name)
                    known = max(0, count(content) - count(cut))
                    if memo is not None:
                        memo[key] = known
                freed += known
    return freed


def _with_pruning(view: ContextView, pruned: PruneResult) -> ContextView:
    """A copy of ``view`` whose compaction carries the new pruning (not written anywhere)."""
    base = view.compaction or CompactionEntry(
        id=PROVISIONAL,
        parent_id=None,
        tier="",
        summary="",
        first_kept_id="",
        tokens_before=0,
        tokens_after=0,
    )
    provisional = replace(
        base,
        replacements=pruned.replacements,
        argument_replacements=pruned.argument_replacements,
    )
    return replace(view, compaction=provisional, entries=list(view.entries))
