"""Undoing a compaction: the context from before the newest compaction, as a new leaf.

The log is append-only, so a compaction never destroys anything: the turns it archived or
summarized are still entries on the path, only hidden from the model by the ``compaction``
record. Undoing it (``/compact undo``) therefore writes nothing but new entries. Given the
newest compaction ``C`` on the current path, whose parent is ``P``:

- nothing came after ``C``: the leaf simply moves back to ``P`` (a ``leaf`` record);
- otherwise every entry after ``C`` is copied, in order, under ``P`` (new ids, re-chained
  parents, the same content and tool-call ids), so the new leaf's path is the uncompacted
  history followed by everything said since.

The compacted branch stays in the tree (the tree pane shows both, and the user can go back).
Copies drop the usage figures (a reply's, a branch summary call's): the session totals sum
every call in the file, so a copied usage would count the same spend twice, and a reply's
figures measured the compacted context, so they must not anchor the size of the restored one.
Labels stay on the originals. An older compaction further up the path still applies: one undo
reverts one compaction.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from agentsh.errors import AgentshError
from agentsh.session.entries import (
    AnyEntry,
    BranchSummaryEntry,
    CompactionEntry,
    MessageEntry,
    UnknownEntry,
)
from agentsh.session.log import SessionError
from agentsh.session.session import Session


class UndoError(AgentshError):
    """There is no compaction to undo, or the session cannot take the new entries."""


@dataclass(frozen=True, slots=True)
class UndoResult:
    """What an undo did."""

    compaction_id: str  # the compaction that no longer applies on the new path
    tier: str
    tokens_before: int
    tokens_after: int
    restored_to: str | None  # the compaction's parent, where the new branch starts
    copied: int  # entries that came after the compaction, copied onto the new branch
    leaf_id: str | None  # the new leaf
    remaining_compactions: int  # older compactions still on the new path


def newest_compaction(path: list[AnyEntry]) -> tuple[int, CompactionEntry] | None:
    """The newest compaction on ``path`` and its index, or None."""
    for index in range(len(path) - 1, -1, -1):
        entry = path[index]
        if isinstance(entry, CompactionEntry):
            return index, entry
    return None


def undo_compaction(session: Session) -> UndoResult:
    """Restore the context from before the newest compaction on the path, as a new leaf.

    Raises :class:`UndoError` when the path has no compaction or the session is read-only.
    """
    if session.read_only_reason:
        raise UndoError(f"This session is read-only ({session.read_only_reason}).")
    path = session.current_path()
    found = newest_compaction(path)
    if found is None:
        raise UndoError("There is no compaction on this branch to undo.")
    index, compaction = found
    after = path[index + 1 :]
    parent = compaction.parent_id
    try:
        if not after:
            session.move_leaf(parent)
        else:
            for entry in after:
                parent = session.append(_copy(entry, session.new_id(), parent)).id
    except (SessionError, OSError) as exc:
        raise UndoError(f"The compaction could not be undone: {exc}") from exc
    remaining = sum(1 for e in path[:index] if isinstance(e, CompactionEntry))
    return UndoResult(
        compaction_id=compaction.id,
        tier=compaction.tier,
        tokens_before=compaction.tokens_before,
        tokens_after=compaction.tokens_after,
        restored_to=compaction.parent_id,
        copied=len(after),
        leaf_id=session.leaf_id,
        remaining_compactions=remaining,
    )


def _copy(entry: AnyEntry, new_id: str, parent_id: str | None) -> AnyEntry:
    """``entry`` under a new id and parent; content, tool-call ids and time unchanged."""
    match entry:
        case MessageEntry() | BranchSummaryEntry():
            return replace(entry, id=new_id, parent_id=parent_id, usage=None)
        case UnknownEntry():
            raw = dict(entry.raw, id=new_id, parentId=parent_id)
            return replace(entry, id=new_id, parent_id=parent_id, raw=raw)
        case _:
            return replace(entry, id=new_id, parent_id=parent_id)
