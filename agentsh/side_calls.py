"""Model calls beside the turn: the compaction summary the context manager asks for and the
branch summary a front end asks for (``summarize_branch``, then ``attach_branch_summary``).

Each is paid for like a turn's call (``spent_usd``, which ``--max-budget-usd`` reads) and
counted in the session: a compaction summary by the context manager, a branch summary with the
entry it is attached as (or on its own when nothing is attached), and a call cancelled before
it answered as an estimate of what was sent, priced (:func:`priced_estimate`).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from agentsh.context.engine_protocol import SummaryReply
from agentsh.events import ErrorKind
from agentsh.llm.client import LLMError
from agentsh.values import Usage

if TYPE_CHECKING:
    from agentsh.config import Environment
    from agentsh.context.manager import ContextManager
    from agentsh.llm.client import Completion, LLMClient
    from agentsh.session.entries import BranchSummaryEntry
    from agentsh.session.session import Session


#: how long a cancel waits to price what it counts (the model worker may still be loading litellm)
PRICE_WAIT_S = 2.0


async def priced_estimate(llm: LLMClient | None, usage: Usage, model: str | None = None) -> Usage:
    """``usage`` (an estimate, of a call cancelled or cut off) priced as a reply's would be, for
    ``model`` (default: the client's). In a thread, as the model worker is asked synchronously;
    at most :data:`PRICE_WAIT_S`, as Esc must not wait on it: the tokens then count unpriced."""
    if llm is None or not usage.input_tokens + usage.output_tokens:
        return usage
    try:
        cost = await asyncio.wait_for(
            asyncio.to_thread(llm.cost, usage, model or llm.model), PRICE_WAIT_S
        )
    except (Exception, asyncio.CancelledError):  # noqa: BLE001 - a second cancel, a dead worker
        return usage
    return replace(usage, cost=cost)


class SideCallHost(Protocol):
    """What a side call uses of its agent (:class:`agentsh.agent.Agent` is one)."""

    llm: LLMClient | None
    env: Environment
    session: Session
    context: ContextManager
    spent_usd: float

    async def ensure_tokenizer(self) -> None: ...

    def count(self, text: str) -> int: ...


class SideCalls:
    """One agent's side calls, and the branch summaries written but not yet attached."""

    def __init__(self, host: SideCallHost) -> None:
        self.host = host
        self._branch_usage: dict[tuple[str, str], Usage] = {}  # written, not yet attached

    async def summary(self, messages: list[dict[str, Any]], max_tokens: int) -> SummaryReply:
        """A compaction summary (the context manager's ``summarize``)."""
        host = self.host
        if host.llm is None:
            raise LLMError(ErrorKind.NO_MODEL, "No model is configured to write a summary.")
        model = host.env.settings.model.summary_model or None
        completion = await self._call("summary", messages, max_tokens, model)
        host.spent_usd += completion.usage.cost  # --max-budget-usd counts it, applied or not
        return SummaryReply.of(completion)  # cut off at its output limit: not a summary

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

        host = self.host
        if host.llm is None:
            raise LLMError(ErrorKind.NO_MODEL, "No model is configured to write a branch summary.")
        await host.ensure_tokenizer()
        settings = host.env.settings
        branch = abandoned_branch(host.session.tree, from_leaf, host.session.leaf_id)
        budget = budget_for(host.context.window, settings.context.reserve_tokens)
        entries = select_entries(branch.entries, budget, host.context.accounting.count)
        if not entries:
            return ""
        max_tokens = settings.context.branch_summary_max_tokens
        messages = branch_summary_request(entries, max_tokens=max_tokens, instructions=instructions)
        model = settings.model.summary_model or None
        completion = await self._call("branch summary", messages, max_tokens, model)
        host.spent_usd += completion.usage.cost
        text = completion.text.strip()
        if text:
            self._branch_usage[(from_leaf, text)] = completion.usage
        else:  # nothing to attach: the call is recorded on its own
            host.context.record_side_call("branch summary", completion.usage, "empty reply")
        return text

    def attach_branch_summary(self, from_leaf: str, text: str) -> BranchSummaryEntry:
        """Attach a branch summary below the leaf, with the usage of the call that wrote it
        (when :meth:`summarize_branch` did), and make it durable."""
        session = self.host.session
        usage = self._branch_usage.pop((from_leaf, text), None)
        entry = session.append_branch_summary(from_leaf, text, usage)
        session.sync()
        return entry

    async def _call(
        self, purpose: str, messages: list[dict[str, Any]], max_tokens: int, model: str | None
    ) -> Completion:
        """A summary or branch-summary call. Cancelled (Esc) before it answered, its request
        was still sent: its tokens count in the session, as an estimate (``modelCall`` record
        marked estimated), priced like a cancelled reply's, so the session's cost and
        ``--max-budget-usd`` count it."""
        host = self.host
        assert host.llm is not None
        try:
            return await host.llm.complete(messages, max_tokens=max_tokens, model=model)
        except asyncio.CancelledError:
            sent = sum(host.count(str(m.get("content") or "")) for m in messages)
            usage = await priced_estimate(host.llm, Usage(input_tokens=sent, estimated=True), model)
            host.spent_usd += usage.cost
            host.context.record_side_call(purpose, usage, "cancelled before it answered")
            raise
