"""Token accounting of a session's current context, at O(new entries) per turn.

Each entry's token count is a pure function of its content (and of the pruning a compaction
applied to it), so counts are cached per entry and never recomputed; the context view is
extended in place as entries are appended and rebuilt only when the leaf jumps (a branch
switch) or a compaction lands. The provider's reported usage on the newest reply anchors the
figure: ``used`` = that reply's prompt + completion tokens + the estimate of what came after it.
Until a reply anchors it the figure is flagged ``estimated``: in a new session it is the estimate
of system prompt + tool schemas + messages; right after a compaction it is the compaction's
``tokensAfter`` (the anchored figure it started from, less the estimate of what left) plus the
estimate of what came after the record. Staying on the provider's scale matters: where the
provider counts more than our estimate, falling back to the bare estimate would make every
compaction look like a large shrink, and anti-thrashing would never hold.

Session totals (tokens, cache reads and writes, and cost over every model call the file records:
replies, summaries and branch summaries, all branches) are summed the same way, incrementally
over the tree's nodes, which only ever grow.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentsh.context.convert import entry_message, summary_message
from agentsh.context.view import ContextEntry, ContextView, build_view, is_sent
from agentsh.session.entries import (
    AnyEntry,
    BranchSummaryEntry,
    CompactionEntry,
    MessageEntry,
    ModelCallEntry,
    Role,
    ToolResultEntry,
    Usage,
)
from agentsh.session.session import Session
from agentsh.session.tree import BranchPosition

Counter = Callable[[str], int]

# Per-message framing the providers add (role markers, separators); small, but a 300-message
# context is off by ~1,200 tokens without it.
MESSAGE_OVERHEAD = 4
TOOL_CALL_OVERHEAD = 8
# How far up from a new leaf the view is extended in place before a full rebuild is cheaper.
_EXTEND_LIMIT = 256


@dataclass(frozen=True, slots=True)
class Totals:
    """Usage summed over every reply in the session file (all branches)."""

    input_tokens: int = 0  # every prompt token, cache reads included
    output_tokens: int = 0
    cost: float = 0.0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Used:
    """The current context size and whether a provider figure anchors it."""

    tokens: int
    estimated: bool
    anchor_id: str | None  # the reply whose usage anchors the figure
    # The part of ``tokens`` that stands on a provider figure (the anchor's usage, or the
    # compaction's ``tokensAfter``); the rest is estimated and gets the pre-flight margin.
    base: int = 0


class Accounting:
    def __init__(self, session: Session, count: Counter) -> None:
        self.session = session
        self.count = count
        self._entry_tokens: dict[Any, int] = {}
        self._text_tokens: dict[str, int] = {}
        self._view: ContextView | None = None
        self._tokens: list[int] = []  # parallel to view.entries
        self._summary_tokens = 0
        self._messages_total = 0
        self._anchor_index = -1  # index in view.entries of the anchoring reply
        self._after_anchor = 0  # estimated tokens of the entries after the anchor
        self._tail_total = 0  # estimated tokens of the entries after the compaction record
        self._branch: BranchPosition | None = None
        self._records_seen = 0
        self._totals = Totals()
        self._fence = -1  # tokens of the summary's fence (header, tags, footer), once counted

    # -- counting ---------------------------------------------------------------------------

    def use_counter(self, count: Counter) -> None:
        """Count with ``count`` from now on (an exact tokenizer has loaded); no count made with
        the old one is kept."""
        self.count = count
        self._fence = -1
        self._entry_tokens.clear()
        self._text_tokens.clear()
        self._view = None

    def count_text(self, text: str) -> int:
        """Count a standalone text (system prompt, tool schemas), remembering the last few."""
        cached = self._text_tokens.get(text)
        if cached is None:
            cached = self.count(text)
            if len(self._text_tokens) > 16:
                self._text_tokens.clear()
            self._text_tokens[text] = cached
        return cached

    def count_tools(self, tools: Sequence[dict[str, Any]]) -> int:
        if not tools:
            return 0
        return self.count_text(json.dumps(list(tools), separators=(",", ":"), sort_keys=True))

    def entry_tokens(self, entry: ContextEntry, view: ContextView) -> int:
        """Tokens of one entry as the model sees it (pruned content when pruned)."""
        key: Any = entry.id
        match entry:
            case ToolResultEntry():
                replaced = view.replacements.get(entry.id)
                if replaced is not None:
                    key = (entry.id, replaced)
            case MessageEntry(tool_calls=calls) if calls and view.argument_replacements:
                replaced_args = tuple(view.argument_replacements.get(c.id, "") for c in calls)
                if any(replaced_args):
                    key = (entry.id, replaced_args)
        cached = self._entry_tokens.get(key)
        if cached is None:
            cached = self._measure(entry, view)
            self._entry_tokens[key] = cached
        return cached

    def _measure(self, entry: ContextEntry, view: ContextView) -> int:
        match entry:
            case ToolResultEntry():
                return MESSAGE_OVERHEAD + self.count(view.result_content(entry))
            case MessageEntry():
                tokens = MESSAGE_OVERHEAD + self.count(entry.content)
                for call in entry.tool_calls:
                    tokens += TOOL_CALL_OVERHEAD + self.count(call.name)
                    tokens += self.count(view.call_arguments(call))
                return tokens
            case BranchSummaryEntry():
                # As sent: the note and the fence around it (taken for 20 tokens).
                return MESSAGE_OVERHEAD + self.count(str(entry_message(entry, view)["content"]))
        raise TypeError(f"not a context entry: {entry!r}")  # pragma: no cover

    def summary_tokens(self, summary: str) -> int:
        """The summary message as sent: the summary in its fence (header, tags, footer; they
        were taken for 60 tokens, ~100 by the estimate)."""
        if not summary.strip():
            return 0
        if self._fence < 0:
            self._fence = self.count(str(summary_message("")["content"]))
        return MESSAGE_OVERHEAD + self._fence + self.count(summary)

    # -- the view ---------------------------------------------------------------------------

    def view(self) -> ContextView:
        """The current context view, extended in place when the leaf only moved forward."""
        leaf = self.session.leaf_id
        view = self._view
        if view is not None and view.leaf_id == leaf:
            return view
        added = self._appended_since(view)
        if view is None or added is None:
            return self._rebuild()
        for entry in added:
            if isinstance(entry, CompactionEntry):
                return self._rebuild()
        for entry in added:
            self._branch_after_append(entry.id)
            if is_sent(entry):
                view.entries.append(entry)
                self._push(view, entry)
        view.leaf_id = leaf
        return view

    def _appended_since(self, view: ContextView | None) -> list[AnyEntry] | None:
        """The nodes appended below the cached leaf, oldest first; None if the leaf jumped."""
        if view is None or view.leaf_id is None:
            return None
        nodes = self.session.tree.nodes
        added: list[AnyEntry] = []
        current = self.session.leaf_id
        while current is not None and current != view.leaf_id:
            if len(added) >= _EXTEND_LIMIT:
                return None
            node = nodes.get(current)
            if node is None:
                return None
            added.append(node)
            current = node.parent_id
        if current is None:
            return None
        added.reverse()
        return added

    def _rebuild(self) -> ContextView:
        view = build_view(self.session.current_path())
        self._view = view
        self._tokens = []
        self._messages_total = 0
        self._anchor_index = -1
        self._after_anchor = 0
        self._tail_total = 0
        self._summary_tokens = self.summary_tokens(view.summary)
        for entry in view.entries:
            self._push(view, entry)
        self._branch = None
        return view

    def _push(self, view: ContextView, entry: ContextEntry) -> None:
        """Account for ``entry``, the newest of ``view.entries``."""
        tokens = self.entry_tokens(entry, view)
        self._tokens.append(tokens)
        self._messages_total += tokens
        index = len(self._tokens) - 1
        if index >= view.tail_start:
            self._tail_total += tokens
        if (
            index >= view.tail_start
            and isinstance(entry, MessageEntry)
            and entry.role is Role.ASSISTANT
            and _anchors(entry.usage)
        ):
            self._anchor_index = index
            self._after_anchor = 0
        else:
            self._after_anchor += tokens

    # -- figures ----------------------------------------------------------------------------

    def tokens_by_entry(self) -> list[int]:
        """Token counts parallel to ``view().entries``."""
        self.view()
        return self._tokens

    def messages_tokens(self) -> int:
        """Estimated tokens of the conversation part (summary block + entries)."""
        self.view()
        return self._summary_tokens + self._messages_total

    def used(self, system_tokens: int, tools_tokens: int) -> Used:
        view = self.view()
        if self._anchor_index >= 0:
            anchor = view.entries[self._anchor_index]
            assert isinstance(anchor, MessageEntry) and anchor.usage is not None
            base = anchor.usage.context_tokens
            return Used(base + self._after_anchor, estimated=False, anchor_id=anchor.id, base=base)
        compaction = view.compaction
        if compaction is not None and compaction.tokens_after > 0:
            base = compaction.tokens_after
            return Used(base + self._tail_total, estimated=True, anchor_id=None, base=base)
        total = system_tokens + tools_tokens + self._summary_tokens + self._messages_total
        return Used(total, estimated=True, anchor_id=None)

    def estimated_entries(self) -> list[ContextEntry]:
        """The entries :meth:`used` counts by the estimate, as they are in the log (no
        provider figure measured them as sent): those after the anchoring reply, else those
        after the compaction record, else all."""
        view = self.view()
        if self._anchor_index >= 0:
            return view.entries[self._anchor_index + 1 :]
        if view.compaction is not None and view.compaction.tokens_after > 0:
            return view.entries[view.tail_start :]
        return view.entries

    def used_before_last_request(self) -> int | None:
        """What :meth:`used` measured when the newest request on the path was prepared: the
        newest provider figure before it (or the compaction's count) plus the estimate of the
        sent entries between. Every assistant entry answers a request, also a failed reply
        that carries no usage. None when no request followed the newest compaction (the one
        right after it was decided before it ran), or nothing anchored the figure."""
        view = self.view()
        path = self.session.current_path()
        start, used, first = 0, None, False
        for index in range(len(path) - 1, -1, -1):
            entry = path[index]
            if isinstance(entry, CompactionEntry):
                start, used = index + 1, entry.tokens_after
                first = not entry.manual  # the request the compacting prepare decided
                break
        figure: int | None = None
        for entry in path[start:]:
            if isinstance(entry, MessageEntry) and entry.role is Role.ASSISTANT:
                if not first:
                    figure = used
                first = False
                if _anchors(entry.usage):
                    assert entry.usage is not None
                    used = entry.usage.context_tokens
                    continue
            if used is not None and is_sent(entry):
                used += self.entry_tokens(entry, view)
        return figure

    def branch_position(self) -> BranchPosition:
        self.view()
        if self._branch is None:
            self._branch = self.session.branch_position()
        return self._branch

    def _branch_after_append(self, entry_id: str) -> None:
        # Appending only creates a fork where the new entry got a sibling; then the nearest fork
        # above the leaf is its parent. Otherwise the position is unchanged.
        if self._branch is not None and len(self.session.tree.siblings(entry_id)) > 1:
            self._branch = None

    def totals(self) -> Totals:
        """Every model call the file records: replies, and the summary and branch-summary
        calls (a compaction or branch summary entry carries its call's usage), and calls
        whose output was not kept (``modelCall`` records)."""
        records = self.session.tree.records
        if len(records) != self._records_seen:
            t = self._totals
            inp, out, cost = t.input_tokens, t.output_tokens, t.cost
            read, write = t.cache_read_tokens, t.cache_write_tokens
            if len(records) < self._records_seen:  # a different tree (never shrinks otherwise)
                inp, out, cost, read, write, self._records_seen = 0, 0, 0.0, 0, 0, 0
            for node in itertools.islice(records, self._records_seen, None):
                if isinstance(
                    node, MessageEntry | CompactionEntry | BranchSummaryEntry | ModelCallEntry
                ):
                    usage = node.usage
                    if usage is not None:
                        inp += usage.input_tokens + usage.cache_read_tokens
                        out += usage.output_tokens
                        cost += usage.cost
                        read += usage.cache_read_tokens
                        write += usage.cache_write_tokens
            self._records_seen = len(records)
            self._totals = Totals(inp, out, cost, read, write)
        return self._totals

    def invalidate(self) -> None:
        """Forget the view (the counts per entry stay valid: they depend on content only)."""
        self._view = None


def _anchors(usage: Usage | None) -> bool:
    """A provider's figure (never agentsh's estimate for a reply cut off mid-stream)."""
    return usage is not None and not usage.estimated and usage.context_tokens > 0
