"""Which files each point of a conversation stands for: checkpoint records over the tree.

A ``checkpoint`` record says "while the conversation was at entry X, the files were at journal
position N". The files of an entry are those of its own newest record, or else of its nearest
ancestor that has one — counting only the records an ancestor had *before* the next entry of
the path was added, so an entry keeps the files it was made with even if the conversation
later came back to that ancestor and the files changed there. The index is built once from
the session's records and then follows appends incrementally (records are append-only).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentsh.session.entries import CheckpointEntry
from agentsh.session.tree import SessionTree

#: the reason of the record that says "these files were restored to this entry"
RESTORED = "restored"


@dataclass(frozen=True, slots=True)
class Mark:
    """What the tree pane shows beside an entry whose checkpoint changed files."""

    files: tuple[str, ...]
    changed: int


class CheckpointIndex:
    def __init__(self, tree: SessionTree) -> None:
        self.tree = tree
        self._position: dict[str, int] = {}
        self._by_target: dict[str, list[tuple[int, CheckpointEntry]]] = {}
        self._records: list[CheckpointEntry] = []
        self._seen = 0

    def refresh(self) -> None:
        records = self.tree.records
        for index in range(self._seen, len(records)):
            record = records[index]
            self._position[record.id] = index
            if isinstance(record, CheckpointEntry):
                self._by_target.setdefault(record.target_id, []).append((index, record))
                self._records.append(record)
        self._seen = len(records)

    def records(self) -> list[CheckpointEntry]:
        """Every checkpoint record, in file order."""
        self.refresh()
        return list(self._records)

    def of(self, entry_id: str) -> list[CheckpointEntry]:
        """The records that target ``entry_id`` itself, oldest first."""
        self.refresh()
        return [record for _, record in self._by_target.get(entry_id, ())]

    def state_at(self, entry_id: str | None) -> CheckpointEntry | None:
        """The record whose files ``entry_id`` stands for; None when nothing on its path
        was checkpointed."""
        self.refresh()
        nodes = self.tree.nodes
        limit = len(self.tree.records) + 1  # the entry itself: any of its records counts
        current = entry_id
        while current is not None:
            for index, record in reversed(self._by_target.get(current, ())):
                if index < limit:
                    return record
            limit = self._position.get(current, 0)
            node = nodes.get(current)
            current = node.parent_id if node is not None else None
        return None

    def marks(self) -> dict[str, Mark]:
        """entry id -> the files changed while the conversation was there (entries that
        changed none are left out). A ``restored`` record does not count: the files it names
        were brought back to that entry, not changed by it."""
        self.refresh()
        out: dict[str, Mark] = {}
        for target, records in self._by_target.items():
            changed = [
                record for _, record in records if record.changed and record.reason != RESTORED
            ]
            if not changed:
                continue
            names: dict[str, None] = {}
            for record in changed:
                names.update(dict.fromkeys(record.files))
            total = max(len(names), max(record.changed for record in changed))
            out[target] = Mark(tuple(names), total)
        return out
