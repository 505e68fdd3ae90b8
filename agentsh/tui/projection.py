"""The chat as a projection of the session's current path: entries -> view items.

The log is the truth (DESIGN.md): the chat never keeps its own copy of a conversation. A
resume, a branch switch or a remount after scrolling rebuilds widgets from these items, which
are computed from ``session.current_path()``. A tool call and its result become one
:class:`ToolItem`; everything else maps one entry to one item. The entries a compaction took
out of the model's context are folded into one :class:`ArchiveItem` where they stood (the log
keeps them, so the chat can show them again, marked as archived). Where the path goes through
a fork, a :class:`BranchItem` says which branch it is (``branch 2/3``). Pure data, no widgets.

There is one mapping from entries to items (:func:`items_for`, with :func:`tool_item` for a call
and its result). :func:`project` applies it to a whole path at once (opening a session, a branch
switch, an expanded archive); :class:`Projector` applies it one appended entry at a time, as a
turn writes them, and says what changed, so the live chat and a reloaded one are the same list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
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
from agentsh.termsafe import one_line
from agentsh.values import ToolCall

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
class ApprovalItem:
    """An approval prompt once answered, as the one line it collapses to: ``bash: make:
    allowed once``. Live the prompt becomes it; a reload reads it from the answer its tool
    result records; both are drawn from this item alone."""

    entry_id: str  # the tool result recording the answer ("" until logged; a cancelled ask)
    summary: str
    outcome: str  # "allowed once", "denied", "not answered: the turn was cancelled", ...
    denied: bool = False

    @property
    def text(self) -> str:
        return one_line(f"{self.summary}: {self.outcome}")  # both may come from the log

    @property
    def withdrawn(self) -> bool:
        """Never answered: the turn was cancelled while it waited. Its row draws nothing:
        the "turn cancelled" line under the call says it once."""
        return self.outcome == APPROVAL_OUTCOMES["cancelled"]


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
    UserItem
    | AssistantItem
    | ToolItem
    | CompactionItem
    | NoteItem
    | ApprovalItem
    | ArchiveItem
    | BranchItem
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
        case CompactionItem() | NoteItem() | ApprovalItem() | UserItem() | AssistantItem():
            return (item.entry_id,) if item.entry_id else ()
        case BranchItem():
            return ()  # a marker between entries, not an entry


def call_summary(call: ToolCall) -> str:
    """A call's header: what its tool wrote when it ran (stored with the call), or for a log
    written before that was kept, the tool's name and its main argument."""
    return call.summary or tool_summary(call.name, call.parsed_arguments())


def tool_summary(name: str, arguments: dict[str, object]) -> str:
    """The header of a call logged without its summary: tool name and its main argument."""
    for key in ("command", "cmd", "pattern", "query", "path", "file_path", "glob", "action"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            first = value.strip().splitlines()[0] if value.strip() else value
            return f"{name}: {first[:120]}"
    return name


def project_session(session: Session) -> list[ChatItem]:
    """The chat of a session: its current path, with a marker at every fork it goes through."""
    return project(session.current_path(), tree=session.tree)


def projector_for(session: Session) -> Projector:
    """A :class:`Projector` that continues :func:`project_session` as entries are appended."""
    path = session.current_path()
    return Projector(path, branch_marks(path, session.tree))


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
        archive = _archive(entries, span, results, marks)
        if not archive.items:  # only results of calls archived before: nothing to fold
            continue
        items.extend(_items(entries[done : span.start], results, marks))
        items.append(archive)
        done = span.end
    items.extend(_items(entries[done:], results, marks))
    return items


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
    results: Mapping[str, ToolResultEntry],
    marks: Mapping[str, BranchItem],
) -> list[ChatItem]:
    items: list[ChatItem] = []
    for entry in entries:
        if marks and (mark := marks.get(entry.id)) is not None:
            items.append(mark)
        items.extend(items_for(entry, results))
    return items


def items_for(entry: AnyEntry, results: Mapping[str, ToolResultEntry]) -> list[ChatItem]:
    """What the chat shows for one entry (``results``: tool results by call id, as far as they
    are known): one item, several for a reply that made tool calls, none for a tool result
    (it is shown with its call) or an annotation."""
    match entry:
        case MessageEntry(role=Role.USER):
            return [UserItem(entry.id, entry.content)]
        case MessageEntry():
            items: list[ChatItem] = []
            aborted = entry.stop_reason is StopReason.ABORTED
            if entry.content or aborted or entry.error or not entry.tool_calls:
                items.append(AssistantItem(entry.id, entry.content, aborted, entry.error or ""))
            for call in entry.tool_calls:
                result = results.get(call.id)
                items.append(tool_item(call, entry.id, result))
                items.extend(approval_items(result))
            if any(cancelled_here(results.get(call.id)) for call in entry.tool_calls):
                items.append(NoteItem("", TURN_CANCELLED, "warning"))
            return items
        case CompactionEntry():
            return [
                CompactionItem(
                    entry.id, entry.tier, entry.tokens_before, entry.tokens_after, entry.summary
                )
            ]
        case ModelChangeEntry():
            return [NoteItem(entry.id, model_changed(entry.model))]
        case BranchSummaryEntry():
            return [NoteItem(entry.id, f"branch summary: {entry.summary}")]
        case UnknownEntry():
            return [NoteItem(entry.id, f"unknown entry type {entry.type_name!r}", "warning")]
    return []  # a tool result (shown with its call), a label or leaf record


#: the line under a turn cancelled with no reply to mark aborted (Esc at an approval, or
#: while a tool ran), live and reloaded
TURN_CANCELLED = "turn cancelled"
#: what the agent answers for a call the cancel left unrun (turn.py); its block shows no body
#: for it, as "turn cancelled" under the call says it
NOT_RUN_CANCELLED = "not run: the user cancelled the turn"
#: ... or stopped as it ran
_CANCELLED_RESULTS = (NOT_RUN_CANCELLED, "stopped while it ran (the user")


def cancelled_here(result: ToolResultEntry | None) -> bool:
    """The turn was cancelled at this call: it was never run, or stopped as it ran, because
    the user cancelled (a command's result says it was ``aborted``). A quit or an editor gone
    is not a cancel the chat marks; nor is a call's own error."""
    if result is None or not result.is_error:
        return False
    return result.details.get("aborted") is True or result.content.startswith(_CANCELLED_RESULTS)


def model_changed(model: str) -> str:
    """The one wording of a model switch, live and reloaded."""
    return f"model changed to {model}"


def model_switch_items(session: Session, model: str) -> list[ChatItem]:
    """What the chat shows for a ``/model`` switch: the items of the change it logged, as a
    reload shows them. A session with nothing in it yet logs no change; the same line then
    stands for it (and goes with the session, as nothing else in it does)."""
    leaf = session.leaf_id
    entry = session.get(leaf) if leaf is not None else None
    if isinstance(entry, ModelChangeEntry) and entry.model == model:
        return items_for(entry, {})
    return [NoteItem("", model_changed(model))]


#: what the user answered to an approval, as the prompt says it once answered
APPROVAL_OUTCOMES = {
    "allow_once": "allowed once",
    "allow_session": "allowed for this session",
    "allow_group": "allowed for this session, with {group}",
    "deny": "denied",
    "cancelled": "not answered: the turn was cancelled",  # the turn ended while it waited
}


def approval_outcome(decision: str, group: str = "") -> str:
    """``allowed once``, ``denied``, ... (``decision``: an ``ApprovalDecision`` value)."""
    return APPROVAL_OUTCOMES[decision].format(group=group)


def approval_items(result: ToolResultEntry | None) -> list[ApprovalItem]:
    """The answered approvals a tool result records (``details["approvals"]``), each the line
    its prompt collapsed to: ``bash: make: allowed once``. The log is read as untrusted: an
    answer that is not one of the five, or not text, is left out; a log written before the
    answers were kept has none."""
    recorded = result.details.get("approvals") if result is not None else None
    if result is None or not isinstance(recorded, list):
        return []
    items: list[ApprovalItem] = []
    for answer in recorded:
        if not isinstance(answer, dict):
            continue
        decision, summary, group = (answer.get(k, "") for k in ("decision", "summary", "group"))
        if not isinstance(decision, str) or decision not in APPROVAL_OUTCOMES:
            continue
        if not isinstance(summary, str):
            continue
        group = group if isinstance(group, str) else ""
        items.append(approval_item(result.id, summary, decision, group))
    return items


def approval_item(entry_id: str, summary: str, decision: str, group: str = "") -> ApprovalItem:
    """The line an answered approval prompt collapses to (``decision``: an
    ``ApprovalDecision`` value), live and reloaded."""
    return ApprovalItem(entry_id, summary, approval_outcome(decision, group), decision == "deny")


def tool_item(call: ToolCall, message_id: str, result: ToolResultEntry | None) -> ToolItem:
    """A tool call as one block: the call from its reply, the outcome from its result."""
    return ToolItem(
        call_id=call.id,
        name=call.name,
        summary=call_summary(call),
        output=result.content if result else "",
        is_error=result.is_error if result else False,
        diff=str(result.details.get("diff", "")) if result else "",
        finished=result is not None,
        entry_id=result.id if result else "",
        message_id=message_id,
    )


# -- one entry at a time -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Added:
    """Show ``item`` after everything shown so far."""

    item: ChatItem


@dataclass(frozen=True, slots=True)
class Finished:
    """The tool call ``item.call_id`` has its result: its block shows ``item`` now, and its
    answered approvals (``approvals``) read as the log keeps them."""

    item: ToolItem
    approvals: tuple[ApprovalItem, ...] = ()


@dataclass(frozen=True, slots=True)
class Folded:
    """A compaction archived the entries ``item.entry_ids``: their items become one line."""

    item: ArchiveItem


Change = Added | Finished | Folded


class Projector:
    """The items of a path, kept up to date as entries are appended to it.

    Built from the path the chat was loaded with (and the fork markers it was shown with);
    :meth:`add` takes each entry a turn writes and returns what changed. Applying the changes
    to the loaded items gives exactly what :func:`project` gives for the longer path, except a
    marker for a fork the turn itself made (its first message on a new branch): the
    controller re-projects after such a turn."""

    def __init__(
        self, path: Iterable[AnyEntry] = (), marks: Mapping[str, BranchItem] | None = None
    ) -> None:
        self.marks: Mapping[str, BranchItem] = marks or {}
        self.path: list[AnyEntry] = []
        self._positions: dict[str, int] = {}
        self._results: dict[str, ToolResultEntry] = {}
        self._calls: dict[str, tuple[ToolCall, str]] = {}  # call id -> (call, its reply's id)
        self._kept_from = 0  # where the context began after the newest compaction
        for entry in path:
            self._take(entry)

    def _take(self, entry: AnyEntry) -> None:
        if isinstance(entry, CompactionEntry):
            kept = self._positions.get(entry.first_kept_id, self._kept_from)
            self._kept_from = max(kept, self._kept_from)
        elif isinstance(entry, ToolResultEntry):
            self._results[entry.tool_call_id] = entry
        elif isinstance(entry, MessageEntry):
            for call in entry.tool_calls:
                self._calls[call.id] = (call, entry.id)
        self._positions[entry.id] = len(self.path)
        self.path.append(entry)

    def add(self, entry: AnyEntry) -> list[Change]:
        """Take one appended entry (a node of the path; annotations change nothing)."""
        if not entry.is_node or entry.id in self._positions:
            return []
        start = self._kept_from
        self._take(entry)
        if isinstance(entry, ToolResultEntry):
            found = self._calls.get(entry.tool_call_id)
            if found is None:
                return []
            return [Finished(tool_item(found[0], found[1], entry), tuple(approval_items(entry)))]
        changes: list[Change] = [Added(item) for item in items_for(entry, self._results)]
        if isinstance(entry, CompactionEntry) and self._kept_from > start:
            span = CompactionSpan(entry, len(self.path) - 1, start, self._kept_from)
            archive = _archive(self.path, span, self._results, self.marks)
            if archive.items:  # as project(): an archive with nothing to show is not one
                changes.append(Folded(archive))
        return changes
