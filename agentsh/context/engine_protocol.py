"""The context engine's seam: the :class:`ContextEngine` protocol and the values it trades in.

The manager (:mod:`agentsh.context.manager`) holds an engine through this protocol and reads
its :class:`Plan`, :class:`CompactionOutcome` and :class:`TierPreview`; the engines themselves
(:mod:`agentsh.context.engine`) implement it. :class:`EngineDeps` is what an engine works with,
:data:`Summarize` how it calls the summary model.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agentsh.config import ContextSettings
from agentsh.context.accounting import Accounting
from agentsh.context.cut import Cut
from agentsh.context.prune import PruneResult
from agentsh.context.repair import Message
from agentsh.context.summary_model import SummaryLimits
from agentsh.context.view import ContextView
from agentsh.context.workspace import Workspace
from agentsh.events import Tier
from agentsh.session.entries import AnyEntry, CompactionEntry
from agentsh.session.session import Session
from agentsh.values import StopReason, Usage


@dataclass(frozen=True, slots=True)
class SummaryReply:
    """A summary model's answer with the usage of the call (counted in the session totals).
    ``cut_off``: the model stopped at its output limit, so the summary's end is missing."""

    text: str
    usage: Usage | None = None
    cut_off: bool = False
    tools_called: tuple[str, ...] = ()  # names of tools it called instead of answering

    @classmethod
    def of(cls, completion: Any) -> SummaryReply:
        """From a model client's completion (``text``, ``usage``, ``stop_reason``,
        ``tool_calls``)."""
        stop = getattr(completion, "stop_reason", None)
        names = tuple(str(c.name) for c in getattr(completion, "tool_calls", ()))
        return cls(completion.text, completion.usage, stop is StopReason.LENGTH, names)


Summarize = Callable[[list[dict[str, Any]], int], Awaitable[str | SummaryReply]]

PROVISIONAL = "(provisional)"  # the id of a compaction shown pruned before it is written


# -- results -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompactionOutcome:
    """What one compaction attempt did; ``entry`` is None when the context did not change."""

    tier: Tier  # the tier applied (a failed summary reports MoveToWorkspace)
    entry: CompactionEntry | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    workspace_file: str = ""  # the summary's file after a Summarize, else the archive's
    note: str = ""
    error: str = ""  # why nothing changed, when something went wrong
    archive_file: str = ""  # the turns taken out, verbatim ("" when none left: pruning only)

    @property
    def summary_file(self) -> str:
        """The summary's own file, "" when none was written (see ``CompactionFinished``)."""
        if self.archive_file and self.workspace_file != self.archive_file:
            return self.workspace_file
        return ""

    @property
    def saved_fraction(self) -> float:
        if self.entry is None or self.tokens_before <= 0:
            return 0.0
        return max(0.0, (self.tokens_before - self.tokens_after) / self.tokens_before)


@dataclass(frozen=True, slots=True)
class TierPreview:
    """What compacting at ``tier`` would do right now (no model call, nothing written)."""

    tier: Tier
    keep_turns: int
    kept_entries: int
    removed_entries: int
    kept_tokens: int
    frees_tokens: int  # estimate; a summary's own size is estimated too
    prune_only: bool
    note: str = ""


@dataclass(frozen=True, slots=True)
class Plan:
    """A compaction before it is written: what leaves, and roughly what it frees."""

    tier: Tier
    cut: Cut | None  # None: prune only
    pruned: PruneResult | None
    view: ContextView  # with the pruning applied
    tokens: list[int]  # parallel to view.entries, pruning applied
    frees: int  # estimated tokens freed (a summary's own size estimated)
    blocker: str = ""  # why it frees nothing, when it does not
    prune_frees: int = 0  # of which the pruning, estimated
    note: str = ""  # said with the compaction (a lighter tier judged after pruning)

    @property
    def previous(self) -> CompactionEntry | None:
        """The compaction in force now (the view's own is a provisional copy when pruned)."""
        return (
            self.view.compaction
            if self.view.compaction and self.view.compaction.id != PROVISIONAL
            else None
        )

    @property
    def changes(self) -> bool:
        """Whether applying it would change the context at all."""
        return self.cut is not None or (self.pruned is not None and self.pruned.changed)


# -- the engine seam ---------------------------------------------------------------------------


class ContextEngine(Protocol):
    """A context policy: what is sent, and how the context shrinks."""

    name: str

    def ingest(self, entry: AnyEntry) -> None:
        """An entry was appended to the session (engines may index it)."""
        ...

    def assemble(self, system_prompt: str) -> list[Message]:
        """The messages of the next request (repaired: no orphan tool call or result)."""
        ...

    def auto_tier(self, used: int, window: int) -> Tier:
        """The tier automatic compaction should run at for this usage (NONE: do nothing)."""
        ...

    def plan(self, tier: Tier, *, used_before: int, stop_at_prune: bool) -> Plan:
        """What compacting at ``tier`` would do; ``stop_at_prune``: pruning alone may do."""
        ...

    async def compact(
        self, plan: Plan, *, used_before: int, manual: bool, instructions: str = ""
    ) -> CompactionOutcome:
        """Apply ``plan`` (made just before); writes before it forgets."""
        ...

    def preview(self, tier: Tier, used_before: int) -> TierPreview: ...


@dataclass(slots=True)
class EngineDeps:
    """What an engine works with; shared with the manager, which owns the model facts."""

    session: Session
    settings: ContextSettings
    accounting: Accounting
    workspace: Workspace
    summarize: Summarize
    window: int
    reserve: int = 0  # the reply reserve (preflight.reply_reserve)
    prompt_tokens: int = 0  # agentsh's system prompt and tool schemas, as last measured
    on_file_written: Callable[[Path], None] | None = None
    files_written: list[str] = field(default_factory=list)
    side_usage: Usage | None = None  # model calls to carry on the next compaction entry
    paused: str = ""  # why automatic compaction is paused, for the entry of one run meanwhile
    # The summary model's limits (window, max output), when it is another model: blocking
    # (litellm's figures), so called from a thread at the first summary.
    summary_limits: Callable[[int], SummaryLimits] | None = None
