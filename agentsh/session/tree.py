"""The conversation tree of one session: nodes, children, the leaf, labels, paths.

Built once from the loaded entries (validating orphans and cycles) and then kept up to date in
O(1) per appended entry. Every walk is iterative, so a 100,000-entry linear session cannot hit
the recursion limit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from agentsh.session.entries import AnyEntry, LabelEntry, LeafEntry
from agentsh.session.log import LoadProblem


@dataclass(frozen=True, slots=True)
class BranchPosition:
    """Where the leaf's branch sits among its siblings at the nearest fork above it."""

    fork_id: str | None  # the entry with several children; None when there is no fork
    index: int  # 1-based
    count: int


class SessionTree:
    def __init__(self) -> None:
        self.nodes: dict[str, AnyEntry] = {}  # in file order
        self.children: dict[str | None, list[str]] = {None: []}
        self.labels: dict[str, str] = {}
        self.leaf_id: str | None = None
        self._annotation_ids: set[str] = set()

    # -- building ---------------------------------------------------------------------------

    @classmethod
    def build(cls, entries: Iterable[AnyEntry]) -> tuple[SessionTree, list[LoadProblem]]:
        """Validate and index entries; returns the tree and one problem per defect found."""
        tree = cls()
        problems: list[LoadProblem] = []
        unique: list[AnyEntry] = []
        seen: set[str] = set()
        for entry in entries:
            if entry.id in seen:
                problems.append(LoadProblem(0, f"duplicate id {entry.id}; later copy skipped"))
                continue
            seen.add(entry.id)
            unique.append(entry)
        candidates = {e.id: e for e in unique if e.is_node}
        valid = _reachable_from_roots(candidates, problems)
        # One pass in file order: a node moves the leaf to itself, a leaf record to its target.
        for entry in unique:
            if entry.is_node:
                if entry.id in valid:
                    tree.add(entry)
                continue
            target = getattr(entry, "target_id", "")
            if target not in valid:
                problems.append(
                    LoadProblem(0, f"{entry.TYPE} record {entry.id} points at unknown {target}")
                )
                continue
            tree.add(entry)
        return tree, problems

    def _add_node(self, entry: AnyEntry) -> None:
        self.nodes[entry.id] = entry
        self.children.setdefault(entry.parent_id, []).append(entry.id)
        self.children.setdefault(entry.id, [])

    def _apply_label(self, entry: LabelEntry) -> None:
        if entry.label:
            self.labels[entry.target_id] = entry.label
        else:
            self.labels.pop(entry.target_id, None)

    def add(self, entry: AnyEntry) -> None:
        """Apply one freshly appended entry (the caller has checked its parent exists)."""
        if isinstance(entry, LabelEntry):
            self._annotation_ids.add(entry.id)
            self._apply_label(entry)
        elif isinstance(entry, LeafEntry):
            self._annotation_ids.add(entry.id)
            self.leaf_id = entry.target_id
        else:
            self._add_node(entry)
            self.leaf_id = entry.id

    def has_id(self, entry_id: str) -> bool:
        return entry_id in self.nodes or entry_id in self._annotation_ids

    # -- queries ----------------------------------------------------------------------------

    def parent(self, entry_id: str) -> str | None:
        return self.nodes[entry_id].parent_id

    def children_of(self, entry_id: str | None) -> list[str]:
        return self.children.get(entry_id, [])

    @property
    def roots(self) -> list[str]:
        return self.children[None]

    def siblings(self, entry_id: str) -> list[str]:
        """All children of this entry's parent, itself included, in file order."""
        return self.children_of(self.nodes[entry_id].parent_id)

    def path_ids(self, to_id: str | None = None) -> list[str]:
        """Ids from the root down to ``to_id`` (default: the leaf)."""
        current = self.leaf_id if to_id is None else to_id
        ids: list[str] = []
        while current is not None:
            ids.append(current)
            current = self.nodes[current].parent_id
        ids.reverse()
        return ids

    def path(self, to_id: str | None = None) -> list[AnyEntry]:
        return [self.nodes[i] for i in self.path_ids(to_id)]

    def branch_points(self) -> list[str]:
        return [eid for eid, kids in self.children.items() if eid is not None and len(kids) > 1]

    def deepest_leaf(self, entry_id: str) -> str:
        """Follow the newest child down from ``entry_id`` (where a branch switch lands)."""
        current = entry_id
        while kids := self.children.get(current):
            current = kids[-1]
        return current

    def branch_position(self, leaf_id: str | None = None) -> BranchPosition:
        """The leaf's branch among its siblings at the nearest fork on its path."""
        path = self.path_ids(leaf_id)
        for depth in range(len(path) - 1, -1, -1):
            parent = self.nodes[path[depth]].parent_id
            siblings = self.children_of(parent)
            if len(siblings) > 1:
                return BranchPosition(parent, siblings.index(path[depth]) + 1, len(siblings))
        return BranchPosition(None, 1, 1)

    def __len__(self) -> int:
        return len(self.nodes)


def _reachable_from_roots(candidates: dict[str, AnyEntry], problems: list[LoadProblem]) -> set[str]:
    """Ids whose parent chain ends at a root; reports each orphan subtree and cycle once."""
    state: dict[str, bool] = {}  # id -> reaches a root
    for start in candidates:
        if start in state:
            continue
        chain: list[str] = []
        on_chain: set[str] = set()
        current: str | None = start
        verdict = True
        while True:
            if current is None:
                verdict = True
                break
            if current in state:
                verdict = state[current]
                break
            if current in on_chain:
                problems.append(LoadProblem(0, f"cycle through entry {current}; skipped"))
                verdict = False
                break
            entry = candidates.get(current)
            if entry is None:
                orphan = chain[-1]
                problems.append(
                    LoadProblem(
                        0, f"entry {orphan} has a missing parent {current} (orphan); skipped"
                    )
                )
                verdict = False
                break
            chain.append(current)
            on_chain.add(current)
            current = entry.parent_id
        for entry_id in chain:
            state[entry_id] = verdict
    return {eid for eid, ok in state.items() if ok}
