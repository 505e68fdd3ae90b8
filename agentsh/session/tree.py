"""The conversation tree of one session: nodes, children, the leaf, labels, paths.

Built once from the loaded entries (validating duplicate ids, orphans and cycles) and then kept
up to date in O(1) per appended entry. The leaf is, in file order, the last node appended or
the target of the newest ``leaf`` record, whichever came later. Every walk is iterative, so a
100,000-entry linear session cannot hit the recursion limit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from agentsh.session.entries import (
    AnyEntry,
    BranchSummaryEntry,
    CompactionEntry,
    LabelEntry,
    LeafEntry,
    MessageEntry,
    ModelChangeEntry,
    ToolResultEntry,
    UnknownEntry,
)
from agentsh.session.log import LoadProblem

# The entry types that are always tree nodes (a type test is cheaper than the property).
_NODE_TYPES = frozenset(
    {MessageEntry, ToolResultEntry, CompactionEntry, BranchSummaryEntry, ModelChangeEntry}
)


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
        #: every accepted entry, nodes and annotations, in file order (for export and --tree)
        self.records: list[AnyEntry] = []
        #: the file line of each record (0 for one appended since the load); parallel list
        self.record_lines: list[int] = []
        self._annotation_ids: set[str] = set()

    # -- building ---------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        entries: Sequence[AnyEntry],
        line_numbers: Sequence[int] | None = None,
        damaged: Mapping[str, str | None] | None = None,
    ) -> tuple[SessionTree, list[LoadProblem]]:
        """Validate and index entries; returns the tree and one problem per defect found.

        ``damaged`` maps the ids of lines the reader had to skip to their parents: entries
        below such a line are attached to its parent instead of being lost as orphans.
        """
        lines = list(line_numbers) if line_numbers is not None else [0] * len(entries)
        if not damaged:
            healthy = cls._build_healthy(entries, lines)
            if healthy is not None:
                return healthy, []
        tree = cls()
        problems: list[LoadProblem] = []

        kept: list[int] = []  # indexes into entries
        seen: set[str] = set()
        for index, entry in enumerate(entries):
            if entry.id in seen:
                problems.append(
                    LoadProblem(lines[index], f"duplicate id {entry.id}; this later copy skipped")
                )
                continue
            seen.add(entry.id)
            kept.append(index)

        candidates: dict[str, AnyEntry] = {}
        line_of: dict[str, int] = {}
        for index in kept:
            entry = entries[index]
            if entry.is_node:
                candidates[entry.id] = entry
                line_of[entry.id] = lines[index]
        if damaged:
            _reattach(candidates, damaged)

        # Fast path: our writer only appends children after their parents, so one pass in file
        # order validates everything in a healthy file. Whatever is left needs the slow walk.
        valid: set[str] = set()
        rest: list[str] = []
        for entry_id, entry in candidates.items():
            parent = entry.parent_id
            if parent is None or parent in valid:
                valid.add(entry_id)
            else:
                rest.append(entry_id)
        invalid: set[str] = set()
        if rest:
            _resolve(candidates, rest, valid, invalid, line_of, problems)

        for index in kept:
            entry = entries[index]
            if entry.is_node:
                node = candidates[entry.id]
                if node.id in valid:
                    tree._add(node, lines[index])
                continue
            target = getattr(entry, "target_id", None)
            if not hasattr(entry, "target_id") or isinstance(entry, UnknownEntry) or target is None:
                # An annotation of a kind this version does not know is kept as it is; one that
                # points nowhere (a name, a model call) or a leaf record without a target ("start
                # over") is valid by definition.
                tree._add(entry, lines[index])
            elif target in valid:
                tree._add(entry, lines[index])
            elif target not in invalid:  # an entry skipped above was reported already
                kind = entry.TYPE or "annotation"
                problems.append(
                    LoadProblem(
                        lines[index],
                        f"{kind} record {entry.id} points at unknown entry {target}; skipped",
                    )
                )
        return tree, problems

    @classmethod
    def _build_healthy(cls, entries: Sequence[AnyEntry], lines: list[int]) -> SessionTree | None:
        """One pass for a file without defects (the usual case, and what makes a 100,000-entry
        load fast); None as soon as anything needs the careful path."""
        tree = cls()
        nodes = tree.nodes
        children = tree.children
        annotations = tree._annotation_ids
        leaf: str | None = None
        node_types = _NODE_TYPES
        for entry in entries:
            entry_id = entry.id
            if entry_id in nodes or entry_id in annotations:
                return None
            if type(entry) in node_types or (type(entry) is UnknownEntry and entry.is_node):
                parent = entry.parent_id
                if parent is not None and parent not in nodes:
                    return None
                nodes[entry_id] = entry
                children[parent].append(entry_id)
                children[entry_id] = []
                leaf = entry_id
                continue
            target = getattr(entry, "target_id", None)
            if target is not None and target not in nodes and type(entry) is not UnknownEntry:
                return None
            annotations.add(entry_id)
            if isinstance(entry, LeafEntry):
                leaf = target
            elif isinstance(entry, LabelEntry):
                if entry.label:
                    tree.labels[entry.target_id] = entry.label
                else:
                    tree.labels.pop(entry.target_id, None)
        tree.leaf_id = leaf
        tree.records = list(entries)
        tree.record_lines = lines
        return tree

    def _add(self, entry: AnyEntry, line: int) -> None:
        self.records.append(entry)
        self.record_lines.append(line)
        if isinstance(entry, LabelEntry):
            self._annotation_ids.add(entry.id)
            if entry.label:
                self.labels[entry.target_id] = entry.label
            else:
                self.labels.pop(entry.target_id, None)
        elif isinstance(entry, LeafEntry):
            self._annotation_ids.add(entry.id)
            self.leaf_id = entry.target_id
        elif not entry.is_node:  # an unknown kind of annotation: kept, changes nothing
            self._annotation_ids.add(entry.id)
        else:
            entry_id = entry.id
            self.nodes[entry_id] = entry
            siblings = self.children.get(entry.parent_id)
            if siblings is None:
                self.children[entry.parent_id] = [entry_id]
            else:
                siblings.append(entry_id)
            self.children.setdefault(entry_id, [])  # may exist: children listed first
            self.leaf_id = entry_id

    def add(self, entry: AnyEntry) -> None:
        """Apply one freshly appended entry (the caller has checked its parent exists)."""
        self._add(entry, 0)

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
        """Ids from the root down to ``to_id`` (default: the leaf; empty when there is none)."""
        current = self.leaf_id if to_id is None else to_id
        nodes = self.nodes
        ids: list[str] = []
        while current is not None:
            ids.append(current)
            current = nodes[current].parent_id
        ids.reverse()
        return ids

    def path(self, to_id: str | None = None) -> list[AnyEntry]:
        nodes = self.nodes
        return [nodes[i] for i in self.path_ids(to_id)]

    def branch_points(self) -> list[str]:
        """Entries with more than one child, in file order."""
        return [eid for eid, kids in self.children.items() if eid is not None and len(kids) > 1]

    def deepest_leaf(self, entry_id: str) -> str:
        """Follow the newest child down from ``entry_id`` (where a branch switch lands)."""
        current = entry_id
        while kids := self.children.get(current):
            current = kids[-1]
        return current

    def leaves(self) -> list[str]:
        """Every node without children (one per branch), in file order."""
        return [eid for eid in self.nodes if not self.children.get(eid)]

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


def _reattach(candidates: dict[str, AnyEntry], damaged: Mapping[str, str | None]) -> None:
    """Give entries whose parent line was damaged that line's own parent (transitively)."""
    for entry_id, entry in candidates.items():
        parent = entry.parent_id
        if parent is None or parent in candidates or parent not in damaged:
            continue
        hops: set[str] = set()
        while parent is not None and parent not in candidates and parent in damaged:
            if parent in hops:
                break  # damaged lines pointing at each other: leave it to orphan detection
            hops.add(parent)
            parent = damaged[parent]
        if parent is None or parent in candidates:
            candidates[entry_id] = replace(entry, parent_id=parent)


def _resolve(
    candidates: dict[str, AnyEntry],
    pending: list[str],
    valid: set[str],
    invalid: set[str],
    line_of: dict[str, int],
    problems: list[LoadProblem],
) -> None:
    """Walk each unresolved entry up to a root; report each orphan subtree and cycle once,
    with how many entries below it were lost with it."""
    blame: dict[str, int] = {}  # invalid id -> index of the problem that explains it
    causes: list[tuple[int, str, int]] = []  # (line, message, entries it names) per problem
    for start in pending:
        if start in valid or start in invalid:
            continue
        chain: list[str] = []
        on_chain: set[str] = set()
        current: str | None = start
        cause = -1
        while True:
            if current is None or current in valid:
                break
            if current in invalid:
                cause = blame[current]
                break
            if current in on_chain:
                loop = chain[chain.index(current) :]
                cause = len(causes)
                causes.append(
                    (
                        line_of[current],
                        "entries " + " -> ".join([*loop, current]) + " form a cycle",
                        len(loop),
                    )
                )
                break
            entry = candidates.get(current)
            if entry is None:
                orphan = chain[-1]
                cause = len(causes)
                causes.append(
                    (line_of[orphan], f"entry {orphan} has a missing parent {current} (orphan)", 1)
                )
                break
            chain.append(current)
            on_chain.add(current)
            current = entry.parent_id
        if cause < 0:
            valid.update(chain)
        else:
            invalid.update(chain)
            for entry_id in chain:
                blame[entry_id] = cause
    counts = [0] * len(causes)
    for cause in blame.values():
        counts[cause] += 1
    for (line, message, own), count in zip(causes, counts, strict=True):
        below = count - own  # the entries the problem names are part of its count
        extra = f", with {below} entr{'y' if below == 1 else 'ies'} below it" if below else ""
        problems.append(LoadProblem(line, f"{message}; skipped{extra}"))
