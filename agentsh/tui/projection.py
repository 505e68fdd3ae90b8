"""The chat as a projection of the session's current path: entries -> view items.

The log is the truth (DESIGN.md): the chat never keeps its own copy of a conversation. A
resume, a branch switch or a remount after scrolling rebuilds widgets from these items, which
are computed from ``session.current_path()``. A tool call and its result become one
:class:`ToolItem`; everything else maps one entry to one item. Pure data, no widgets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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


ChatItem = UserItem | AssistantItem | ToolItem | CompactionItem | NoteItem


def tool_summary(name: str, arguments: dict[str, object]) -> str:
    """The block header for a stored call: tool name and its main argument."""
    for key in ("command", "cmd", "path", "file_path", "pattern", "query", "glob", "action"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            first = value.strip().splitlines()[0] if value.strip() else value
            return f"{name}: {first[:120]}"
    return name


def project(entries: Sequence[AnyEntry]) -> list[ChatItem]:
    """View items for a path of entries (root first)."""
    results: dict[str, ToolResultEntry] = {
        e.tool_call_id: e for e in entries if isinstance(e, ToolResultEntry)
    }
    items: list[ChatItem] = []
    for entry in entries:
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
