"""The rows of the tree pane: the session tree flattened for display, filtered and folded.

Pure data, no widgets, so it is tested alone and the benchmark can time it. A
:class:`TreeModel` turns a :class:`~agentsh.session.tree.SessionTree` into a flat list of
:class:`TreeRow` (one per shown entry, in depth-first file order) that the tree widget renders
a screenful at a time. Indentation grows only at forks: a straight run of replies stays in one
column and the branches of a fork hang below it on ``├─``/``└─`` connectors. A filter hides
entries without losing the shape: a hidden entry's children attach to its nearest shown
ancestor, so "user only" still shows where the conversation forked. Folding a fork hides
everything below it. The active path is not part of a row (it is looked up when a line is
drawn), so moving the leaf costs a path walk, not a rebuild.

Entry texts are cached by id (entries never change) and computed lazily: the rows on screen
need theirs, a search needs all of them once.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from agentsh.checkpoints.history import CheckpointIndex
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
from agentsh.session.log import gc_paused
from agentsh.session.tree import SessionTree
from agentsh.tui.projection import call_summary
from agentsh.tui.status_format import human_tokens

TEXT_CHARS = 200  # a row's text is cut here; the widget crops it to the pane's width
_CALL_LOOKUP_HOPS = 64  # how far up a tool result looks for the assistant entry that called it


class TreeFilter(StrEnum):
    """Which entries the pane shows (the keys are in :mod:`agentsh.tui.keys`)."""

    DEFAULT = "default"  # no model changes, no assistant rows that only call tools
    NO_TOOLS = "no tools"  # the default, without tool results
    USER = "user only"
    LABELLED = "labelled"
    ALL = "all"

    def next(self) -> TreeFilter:
        members = list(TreeFilter)
        return members[(members.index(self) + 1) % len(members)]


class RowKind(StrEnum):
    """What a row shows; the widget styles each kind."""

    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    ERROR = "error"
    NOTE = "note"  # compaction, branch summary, model change, unknown entry


@dataclass(frozen=True, slots=True)
class RowText:
    kind: RowKind
    role: str  # "user", "assistant" or "" (shown before the text)
    text: str
    search: str  # lower-cased text the search matches against


@dataclass(frozen=True, slots=True)
class TreeRow:
    entry_id: str
    prefix: str  # connectors and indentation
    fork: bool  # more than one shown child: a fold point (⊟ / ⊞)
    folded: bool
    branches: int  # shown children of a fork (the "(3 branches)" of a folded row)


def one_line(text: str, limit: int = TEXT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def entry_row_text(tree: SessionTree, entry: AnyEntry) -> RowText:
    """The role and one-line text of an entry, as the tree shows it."""
    match entry:
        case MessageEntry(role=Role.USER):
            return _text(RowKind.USER, "user", entry.content)
        case MessageEntry():
            calls = " ".join(f"[{call_summary(c)}]" for c in entry.tool_calls)
            body = " ".join(p for p in (one_line(entry.content), calls) if p)
            if entry.error or entry.stop_reason is StopReason.ERROR:
                return _text(RowKind.ERROR, "assistant", f"{body} ✗ {entry.error or 'error'}")
            if entry.stop_reason is StopReason.ABORTED:
                return _text(RowKind.ASSISTANT, "assistant", f"{body} (cancelled)".lstrip())
            return _text(RowKind.ASSISTANT, "assistant", body)
        case ToolResultEntry():
            call = _call_summary(tree, entry)
            if entry.is_error:
                return _text(RowKind.ERROR, "", f"[{call}] ✗ {one_line(entry.content, 80)}")
            return _text(RowKind.TOOL, "", f"[{call}]")
        case CompactionEntry():
            return _text(
                RowKind.NOTE,
                "",
                f"[compaction: {entry.tier}, {human_tokens(entry.tokens_before)} -> "
                f"{human_tokens(entry.tokens_after)}]",
            )
        case BranchSummaryEntry():
            return _text(RowKind.NOTE, "", f"[branch summary: {one_line(entry.summary, 120)}]")
        case ModelChangeEntry():
            return _text(RowKind.NOTE, "", f"[model: {entry.model}]")
        case UnknownEntry():
            return _text(RowKind.NOTE, "", f"[unknown entry: {entry.type_name}]")
    return _text(RowKind.NOTE, "", f"[{entry.TYPE}]")  # pragma: no cover - annotations


def _text(kind: RowKind, role: str, text: str) -> RowText:
    line = one_line(text)
    return RowText(kind, role, line, f"{role} {line}".lower())


def _call_summary(tree: SessionTree, result: ToolResultEntry) -> str:
    """``bash: pytest -q``: the call's main argument, found on the assistant entry above."""
    nodes = tree.nodes
    current = result.parent_id
    for _ in range(_CALL_LOOKUP_HOPS):
        if current is None:
            break
        entry = nodes.get(current)
        if entry is None:
            break
        if isinstance(entry, MessageEntry):
            for call in entry.tool_calls:
                if call.id == result.tool_call_id:
                    return call_summary(call)
            break
        current = entry.parent_id
    return result.tool_name or "tool"


class TreeModel:
    """The flat, filtered, folded rows of one session tree."""

    def __init__(self, tree: SessionTree) -> None:
        self.tree = tree
        self.filter = TreeFilter.DEFAULT
        self.query = ""
        self.folded: set[str] = set()
        self.rows: list[TreeRow] = []
        self._index: dict[str, int] = {}
        self._texts: dict[str, RowText] = {}
        self._signature: tuple[object, ...] | None = None
        self._files: CheckpointIndex | None = None
        self._marks: tuple[int, dict[str, int]] = (-1, {})

    # -- texts ------------------------------------------------------------------------------

    def text(self, entry_id: str) -> RowText:
        cached = self._texts.get(entry_id)
        if cached is None:
            cached = entry_row_text(self.tree, self.tree.nodes[entry_id])
            self._texts[entry_id] = cached
        return cached

    def label(self, entry_id: str) -> str:
        return self.tree.labels.get(entry_id, "")

    def files_changed(self, entry_id: str) -> int:
        """How many files the checkpoints at ``entry_id`` changed (the ``✎ N files`` mark;
        0: none). Read from the session's checkpoint records, again only when some were
        appended."""
        records = len(self.tree.records)
        if self._marks[0] != records:
            if self._files is None or self._files.tree is not self.tree:
                self._files = CheckpointIndex(self.tree)
            marks = self._files.marks()
            self._marks = (records, {k: mark.changed for k, mark in marks.items()})
        return self._marks[1].get(entry_id, 0)

    # -- building ---------------------------------------------------------------------------

    def set_tree(self, tree: SessionTree) -> None:
        """Show another session's tree (the folds and texts of the old one are dropped)."""
        if tree is not self.tree:
            self.tree = tree
            self.folded.clear()
            self._texts.clear()
            self._signature = None

    def rebuild(self, *, force: bool = False) -> bool:
        """Recompute the rows when the tree, labels, filter, search or folds changed.

        Returns True when the rows were rebuilt. A leaf move alone changes nothing here.
        """
        tree = self.tree
        signature = (
            id(tree),
            len(tree.nodes),
            frozenset(tree.labels.items()),  # a handful: labels are set by hand
            self._leaf_exception(),
            self.filter.value,
            self.query,
            frozenset(self.folded),
        )
        if not force and signature == self._signature:
            return False
        self._signature = signature
        # Thousands of small objects and nothing cyclic: without the pause the collector
        # would traverse the whole heap (the session's entries too) several times.
        with gc_paused(promote=True):
            children = self._shown_children()
            self.rows = self._flatten(children)
            self._index = {row.entry_id: i for i, row in enumerate(self.rows)}
        return True

    def _leaf_exception(self) -> str | None:
        """The leaf, when it is shown only because it is the leaf (a move then rebuilds)."""
        leaf = self.tree.leaf_id
        if leaf is None or self.filter not in (TreeFilter.DEFAULT, TreeFilter.NO_TOOLS):
            return None
        entry = self.tree.nodes.get(leaf)
        if entry is None or _passes(self.filter, entry, False, leaf in self.tree.labels):
            return None
        return leaf

    def _visible(self) -> set[str] | None:
        """The ids the filter and search let through; None when every entry is shown."""
        tree = self.tree
        kind = self.filter
        words = self.query.lower().split()
        if kind is TreeFilter.ALL and not words:
            return None
        leaf = tree.leaf_id
        labels = tree.labels
        shown: set[str] = set()
        for entry_id, entry in tree.nodes.items():
            if not _passes(kind, entry, entry_id == leaf, entry_id in labels):
                continue
            if words:
                haystack = self.text(entry_id).search
                label = labels.get(entry_id)
                if label:
                    haystack = f"{haystack} {label.lower()}"
                if not all(w in haystack for w in words):
                    continue
            shown.add(entry_id)
        return shown

    def _shown_children(self) -> dict[str | None, list[str]]:
        """Children in the filtered tree: a hidden entry's children go to its shown ancestor."""
        tree = self.tree
        visible = self._visible()
        if visible is None:
            return tree.children
        children: dict[str | None, list[str]] = {None: []}
        all_children = tree.children
        stack: list[tuple[str, str | None]] = [(r, None) for r in reversed(tree.roots)]
        while stack:
            entry_id, shown_parent = stack.pop()
            below = shown_parent
            if entry_id in visible:
                children[shown_parent].append(entry_id)
                children[entry_id] = []
                below = entry_id
            kids = all_children.get(entry_id)
            if kids:
                stack.extend((kid, below) for kid in reversed(kids))
        return children

    def _flatten(self, children: dict[str | None, list[str]]) -> list[TreeRow]:
        rows: list[TreeRow] = []
        folded = self.folded
        # (id, this row's prefix, the prefix its children inherit)
        stack: list[tuple[str, str, str]] = []
        _push_children(stack, children.get(None, []), "")
        while stack:
            entry_id, lead, cont = stack.pop()
            kids = children.get(entry_id) or ()
            fork = len(kids) > 1
            is_folded = fork and entry_id in folded
            rows.append(TreeRow(entry_id, lead, fork, is_folded, len(kids) if fork else 0))
            if is_folded or not kids:
                continue
            if len(kids) == 1:
                stack.append((kids[0], cont, cont))
            else:
                _push_children(stack, kids, cont)
        return rows

    # -- queries ----------------------------------------------------------------------------

    def index_of(self, entry_id: str | None) -> int | None:
        """The row of ``entry_id``, or of its nearest shown ancestor (None: none shown)."""
        nodes = self.tree.nodes
        current = entry_id
        while current is not None:
            index = self._index.get(current)
            if index is not None:
                return index
            entry = nodes.get(current)
            current = entry.parent_id if entry is not None else None
        return None

    def active_path(self) -> set[str]:
        return set(self.tree.path_ids()) if self.tree.leaf_id is not None else set()

    def fork_above(self, index: int) -> int | None:
        """The nearest fork row above row ``index`` whose branches contain it."""
        if not self.rows:
            return None
        depth = len(self.rows[index].prefix)
        for i in range(index - 1, -1, -1):
            row = self.rows[i]
            if row.fork and len(row.prefix) < depth:
                return i
            if len(row.prefix) < depth:
                depth = len(row.prefix)
        return None

    def fork_below(self, index: int) -> int | None:
        for i in range(index + 1, len(self.rows)):
            if self.rows[i].fork:
                return i
        return None


def _push_children(stack: list[tuple[str, str, str]], kids: list[str], cont: str) -> None:
    """Branches of a fork (or several roots): pushed last-first so they pop in file order."""
    if len(kids) == 1:
        stack.append((kids[0], cont, cont))
        return
    for index in range(len(kids) - 1, -1, -1):
        last = index == len(kids) - 1
        stack.append(
            (kids[index], cont + ("└─ " if last else "├─ "), cont + ("   " if last else "│  "))
        )


def _passes(kind: TreeFilter, entry: AnyEntry, is_leaf: bool, labelled: bool) -> bool:
    match kind:
        case TreeFilter.ALL:
            return True
        case TreeFilter.USER:
            return isinstance(entry, MessageEntry) and entry.role is Role.USER
        case TreeFilter.LABELLED:
            return labelled
    # DEFAULT and NO_TOOLS
    if isinstance(entry, ModelChangeEntry):
        return False
    if isinstance(entry, ToolResultEntry):
        return kind is TreeFilter.DEFAULT or is_leaf or entry.is_error
    if (
        isinstance(entry, MessageEntry)
        and entry.tool_calls
        and not entry.content.strip()
        and not entry.error
        and entry.stop_reason not in (StopReason.ABORTED, StopReason.ERROR)
    ):
        return is_leaf or labelled
    return True
