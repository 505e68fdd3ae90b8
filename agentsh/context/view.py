"""The context view: what of a session's current path the model sees, before conversion.

The path root -> leaf is filtered to the entries a model is sent (user and assistant messages,
tool results, branch summaries) and the newest compaction on it is applied: everything before
its ``first_kept_id`` is replaced by its summary, and its ``replacements`` (pruned tool outputs)
and ``argument_replacements`` (shortened tool-call arguments) apply to what is kept. Unknown
entries, model changes and compaction records themselves are never sent; an assistant reply that
failed or was cancelled before it produced anything is skipped.

A view is a cached projection owned by :class:`agentsh.context.accounting.Accounting`, which
extends it in place as entries are appended; everyone else treats it as read-only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeGuard

from agentsh.session.entries import (
    AnyEntry,
    BranchSummaryEntry,
    CompactionEntry,
    MessageEntry,
    Role,
    ToolCall,
    ToolResultEntry,
)

ContextEntry = MessageEntry | ToolResultEntry | BranchSummaryEntry


@dataclass(slots=True)
class ContextView:
    """The entries the model sees, in order, with the compaction that shaped them."""

    compaction: CompactionEntry | None = None
    entries: list[ContextEntry] = field(default_factory=list)
    leaf_id: str | None = None
    # Tool-call ids whose result entry lies before the cut (their call cannot normally be kept,
    # but if it is, the placeholder says why the result is missing).
    cut_result_ids: frozenset[str] = frozenset()
    compactions_on_path: int = 0
    # entries[:tail_start] were kept from before the compaction record; entries[tail_start:]
    # came after it. Only a reply in the tail can anchor the count: an older reply's usage
    # measured the context before the compaction.
    tail_start: int = 0

    @property
    def summary(self) -> str:
        return self.compaction.summary if self.compaction is not None else ""

    @property
    def replacements(self) -> dict[str, str]:
        return self.compaction.replacements if self.compaction is not None else {}

    @property
    def argument_replacements(self) -> dict[str, str]:
        return self.compaction.argument_replacements if self.compaction is not None else {}

    def result_content(self, entry: ToolResultEntry) -> str:
        """The tool output as the model sees it (pruned when a compaction replaced it)."""
        return self.replacements.get(entry.id, entry.content)

    def call_arguments(self, call: ToolCall) -> str:
        return self.argument_replacements.get(call.id, call.arguments)


def is_sent(entry: AnyEntry) -> TypeGuard[ContextEntry]:
    """Whether an entry of the path becomes a message for the model."""
    match entry:
        case MessageEntry(role=Role.ASSISTANT):
            # A failed or cancelled reply keeps what was received, if anything was; an empty
            # assistant message is rejected by some providers and tells the model nothing.
            return bool(entry.content.strip() or entry.tool_calls)
        case MessageEntry():
            return True
        case ToolResultEntry() | BranchSummaryEntry():
            return True
        case _:
            return False


def build_view(path: Sequence[AnyEntry]) -> ContextView:
    """Project a full path (root first) into a view."""
    view = ContextView(leaf_id=path[-1].id if path else None)
    view.compactions_on_path = sum(1 for e in path if isinstance(e, CompactionEntry))
    compaction_index = next(
        (i for i in range(len(path) - 1, -1, -1) if isinstance(path[i], CompactionEntry)), None
    )
    if compaction_index is None:
        view.entries = [e for e in path if is_sent(e)]
        return view
    compaction = path[compaction_index]
    assert isinstance(compaction, CompactionEntry)
    view.compaction = compaction
    kept_at = _index_of(path, compaction.first_kept_id, compaction_index)
    # A damaged first_kept_id (not on the path before the record) keeps everything: losing
    # nothing is the safe reading.
    start = kept_at if kept_at is not None else 0
    view.cut_result_ids = frozenset(
        e.tool_call_id for e in path[:start] if isinstance(e, ToolResultEntry)
    )
    kept = [e for e in path[start:compaction_index] if is_sent(e)]
    tail = [e for e in path[compaction_index + 1 :] if is_sent(e)]
    view.entries = kept + tail
    view.tail_start = len(kept)
    return view


def _index_of(path: Sequence[AnyEntry], entry_id: str, before: int) -> int | None:
    for index in range(before):
        if path[index].id == entry_id:
            return index
    return None


def turn_starts(entries: Sequence[ContextEntry]) -> list[int]:
    """Indices of the user messages that open turns (a turn runs to the next user message)."""
    return [i for i, e in enumerate(entries) if isinstance(e, MessageEntry) and e.role is Role.USER]


def last_user_text(entries: Iterable[ContextEntry]) -> str:
    text = ""
    for entry in entries:
        if isinstance(entry, MessageEntry) and entry.role is Role.USER:
            text = entry.content
    return text
