"""The chat as a projection of the session's current path: entries -> view items.

The log is the truth (DESIGN.md): the chat never keeps its own copy of a conversation. A
resume, a branch switch or a remount after scrolling rebuilds widgets from these items, which
are computed from ``session.current_path()``. A tool call and its result become one
:class:`ToolItem`; everything else maps one entry to one item. The entries a compaction took
out of the model's context are folded into one :class:`ArchiveItem` where they stood (the log
keeps them, so the chat can show them again, marked as archived). Where the path goes through
a fork, a :class:`BranchItem` says which branch it is (``branch 2/3``). Pure data, no widgets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from agentsh.session.entries import (
    AnyEntry,
    BranchSummaryEntry,
    CompactionEntry,
    MessageEntry,
    ModelChangeEntry,
    Role,
    StopReason,
    ToolResultEntry,
    UnknownEntry,
)

if TYPE_CHECKING:
    from agentsh.session.session import Session
    from agentsh.session.tree import SessionTree


@dataclass(frozen=True, slots=True)
class UserItem:
    entry_id: str
    text: str


@dataclass(frozen=True, slots=True)
class AssistantItem:
    entry_id: str
    text: str
    aborted: bool = False
    error: str = ""


@dataclass(frozen=True, slots=True)
class ToolItem:
    call_id: str
    name: str
    summary: str
    output: str = ""
    is_error: bool = False
    diff: str = ""
    finished: bool = False
    entry_id: str = ""  # the tool result's entry (empty while it runs)
    message_id: str = ""  # the assistant entry that made the call (empty while live)


@dataclass(frozen=True, slots=True)
class CompactionItem:
    entry_id: str
    tier: str
    tokens_before: int
    tokens_after: int
    summary: str


@dataclass(frozen=True, slots=True)
class NoteItem:
    """A line that is not a message: a model change, a branch summary, an unknown entry."""

    entry_id: str
    text: str
    kind: str = "info"  # info | warning | error


@dataclass(frozen=True, slots=True)
class ArchiveItem:
    """The entries one compaction took out of the model's context, folded into one line."""

    compaction_id: str
    tier: str
    entry_ids: tuple[str, ...]  # every path entry it covers, to fold rows shown live
    items: tuple[ChatItem, ...]  # what the chat shows when the archive is expanded
    turns: int  # user messages among them


@dataclass(frozen=True, slots=True)
class BranchItem:
    """The path goes through a fork here: the next entry starts branch ``index`` of ``count``."""

    entry_id: str  # the first entry of this branch
    index: int
    count: int
    nearest: bool = False  # the fork nearest the leaf: the one Alt+Left/Right switch at


ChatItem = (
    UserItem | AssistantItem | ToolItem | CompactionItem | NoteItem | ArchiveItem | BranchItem
)


@dataclass(frozen=True, slots=True)
class CompactionSpan:
    """A compaction on the path and the path slice ``[start, end)`` it archived.

    A compaction archives what lies before its first kept entry and was still in the context,
    so an earlier compaction's archive is never counted again; a prune-only compaction (it kept
    the previous first kept entry) archives nothing."""

    entry: CompactionEntry
    index: int  # where the compaction record stands on the path
    start: int
    end: int

    @property
    def archived(self) -> int:
        return self.end - self.start


def compaction_spans(path: Sequence[AnyEntry]) -> list[CompactionSpan]:
    """Every compaction on ``path`` (root first), oldest first, with what it archived."""
    spans: list[CompactionSpan] = []
    positions: dict[str, int] = {}
    kept_from = 0
    for index, entry in enumerate(path):
        if isinstance(entry, CompactionEntry):
            # A damaged first_kept_id (not before the record) keeps everything, like the view.
            kept = positions.get(entry.first_kept_id, kept_from)
            start, end = kept_from, max(kept, kept_from)
            spans.append(CompactionSpan(entry, index, start, end))
            kept_from = end
        positions[entry.id] = index
    return spans


def item_entry_ids(item: ChatItem) -> tuple[str, ...]:
    """The log entries a chat item shows (empty for a note that is not in the log)."""
    match item:
        case ToolItem():
            return tuple(i for i in (item.message_id, item.entry_id) if i)
        case ArchiveItem():
            return item.entry_ids
        case CompactionItem() | NoteItem() | UserItem() | AssistantItem():
            return (item.entry_id,) if item.entry_id else ()
        case BranchItem():
            return ()  # a marker between entries, not an entry


def tool_summary(name: str, arguments: dict[str, object]) -> str:
    """The block header for a stored call: tool name and its main argument."""
    for key in ("command", "cmd", "path", "file_path", "pattern", "query", "glob", "action"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            first = value.strip().splitlines()[0] if value.strip() else value
            return f"{name}: {first[:120]}"
    return name


def project_session(session: Session) -> list[ChatItem]:
    """The chat of a session: its current path, with a marker at every fork it goes through."""
    return project(session.current_path(), tree=session.tree)


def branch_marks(entries: Sequence[AnyEntry], tree: SessionTree) -> dict[str, BranchItem]:
    """A :class:`BranchItem` for each entry of the path that has siblings (a fork above it)."""
    marks: dict[str, BranchItem] = {}
    last = ""
    for entry in entries:
        siblings = tree.children_of(entry.parent_id)
        if len(siblings) > 1 and entry.id in tree.nodes:
            marks[entry.id] = BranchItem(entry.id, siblings.index(entry.id) + 1, len(siblings))
            last = entry.id
    if last:
        marks[last] = replace(marks[last], nearest=True)
    return marks


def project(
    entries: Sequence[AnyEntry], *, fold: bool = True, tree: SessionTree | None = None
) -> list[ChatItem]:
    """View items for a path of entries (root first); ``fold`` folds archived entries; with
    the ``tree``, a :class:`BranchItem` marks each fork the path goes through."""
    results: dict[str, ToolResultEntry] = {
        e.tool_call_id: e for e in entries if isinstance(e, ToolResultEntry)
    }
    marks = branch_marks(entries, tree) if tree is not None else {}
    spans = [s for s in compaction_spans(entries) if s.archived] if fold else []
    if not spans:
        return _items(entries, results, marks)
    items: list[ChatItem] = []
    done = 0
    for span in spans:
        items.extend(_items(entries[done : span.start], results, marks))
        items.append(_archive(entries, span, results, marks))
        done = span.end
    items.extend(_items(entries[done:], results, marks))
    return items


def archive_item(path: Sequence[AnyEntry], compaction_id: str) -> ArchiveItem | None:
    """The folded line for the compaction ``compaction_id`` on ``path`` (None: it archived
    nothing, or it is not on the path)."""
    for span in compaction_spans(path):
        if span.entry.id == compaction_id and span.archived:
            results = {e.tool_call_id: e for e in path if isinstance(e, ToolResultEntry)}
            return _archive(path, span, results)
    return None


def _archive(
    path: Sequence[AnyEntry],
    span: CompactionSpan,
    results: dict[str, ToolResultEntry],
    marks: Mapping[str, BranchItem] | None = None,
) -> ArchiveItem:
    covered = path[span.start : span.end]
    return ArchiveItem(
        compaction_id=span.entry.id,
        tier=span.entry.tier,
        entry_ids=tuple(e.id for e in covered),
        items=tuple(_items(covered, results, marks or {})),
        turns=sum(1 for e in covered if isinstance(e, MessageEntry) and e.role is Role.USER),
    )


def _items(
    entries: Sequence[AnyEntry],
    results: dict[str, ToolResultEntry],
    marks: Mapping[str, BranchItem],
) -> list[ChatItem]:
    items: list[ChatItem] = []
    for entry in entries:
        if marks and (mark := marks.get(entry.id)) is not None:
            items.append(mark)
        match entry:
            case MessageEntry(role=Role.USER):
                items.append(UserItem(entry.id, entry.content))
            case MessageEntry():
                aborted = entry.stop_reason is StopReason.ABORTED
                if entry.content or aborted or entry.error or not entry.tool_calls:
                    items.append(AssistantItem(entry.id, entry.content, aborted, entry.error or ""))
                for call in entry.tool_calls:
                    result = results.get(call.id)
                    items.append(
                        ToolItem(
                            call_id=call.id,
                            name=call.name,
                            summary=tool_summary(call.name, call.parsed_arguments()),
                            output=result.content if result else "",
                            is_error=result.is_error if result else False,
                            diff=str(result.details.get("diff", "")) if result else "",
                            finished=result is not None,
                            entry_id=result.id if result else "",
                            message_id=entry.id,
                        )
                    )
            case ToolResultEntry():
                continue  # shown with its call
            case CompactionEntry():
                items.append(
                    CompactionItem(
                        entry.id,
                        entry.tier,
                        entry.tokens_before,
                        entry.tokens_after,
                        entry.summary,
                    )
                )
            case ModelChangeEntry():
                items.append(NoteItem(entry.id, f"model changed to {entry.model}"))
            case BranchSummaryEntry():
                items.append(NoteItem(entry.id, f"branch summary: {entry.summary}"))
            case UnknownEntry():
                items.append(
                    NoteItem(entry.id, f"unknown entry type {entry.type_name!r}", "warning")
                )
            case _:
                continue
    return items
