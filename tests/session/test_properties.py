"""Property tests: random appends, branches, leaf moves, labels and resumes.

After every step the file only grew (nothing before was rewritten), the tree matches a plain
model of parents/leaf/labels, and a fresh load of the file equals the session in memory.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
)

from agentsh.session.entries import Role
from agentsh.session.session import Session

TEXT = st.text(alphabet='ab \n漢é"\\{}', max_size=12)


class SessionMachine(RuleBasedStateMachine):
    nodes = Bundle("nodes")

    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="agentsh-prop-"))
        self.session = Session.create(self.folder, Path("/w"))
        self.parent: dict[str, str | None] = {}
        self.leaf: str | None = None
        self.labels: dict[str, str] = {}
        self.before = b""

    def teardown(self) -> None:
        self.session.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    @initialize(target=nodes, text=TEXT)
    def first_message(self, text: str) -> str:
        return self._append(Role.USER, text)

    def _append(self, role: Role, text: str) -> str:
        self._remember_bytes()
        entry = self.session.append_message(role, text)
        self.parent[entry.id] = self.leaf
        self.leaf = entry.id
        return entry.id

    def _remember_bytes(self) -> None:
        path = self.session.path
        self.before = path.read_bytes() if path is not None and path.exists() else b""

    @rule(target=nodes, role=st.sampled_from(list(Role)), text=TEXT)
    def append(self, role: Role, text: str) -> str:
        return self._append(role, text)

    @rule(target=nodes, call_id=st.text(alphabet="xyz", min_size=1, max_size=3), text=TEXT)
    def tool_result(self, call_id: str, text: str) -> str:
        self._remember_bytes()
        entry = self.session.append_tool_result(call_id, "bash", text, is_error=bool(len(text) % 2))
        self.parent[entry.id] = self.leaf
        self.leaf = entry.id
        return entry.id

    @rule(target=nodes, to=nodes, text=TEXT)
    def branch(self, to: str, text: str) -> str:
        """Edit-and-resend: continue from an earlier entry; the old branch stays."""
        self._remember_bytes()
        self.session.move_leaf(to)
        self.leaf = to
        return self._append(Role.USER, text)

    @rule(to=nodes)
    def move_leaf(self, to: str) -> None:
        self._remember_bytes()
        self.session.move_leaf(to)
        self.leaf = to

    @rule()
    def start_over(self) -> None:
        self._remember_bytes()
        self.session.move_leaf(None)
        self.leaf = None

    @rule(to=nodes, text=st.sampled_from(["", "keep", "try 2", " spaced  out "]))
    def label(self, to: str, text: str) -> None:
        self._remember_bytes()
        self.session.set_label(to, text)
        clean = " ".join(text.split())
        if clean:
            self.labels[to] = clean
        else:
            self.labels.pop(to, None)

    @rule()
    def resume(self) -> None:
        """Quit and resume: the reopened session carries on from the same place."""
        self._remember_bytes()
        self.session.close()
        assert self.session.path is not None
        self.session = Session.open(self.session.path)

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def never_rewrites(self) -> None:
        path = self.session.path
        if path is not None and path.exists():
            assert path.read_bytes().startswith(self.before)

    @invariant()
    def tree_matches_the_model(self) -> None:
        tree = self.session.tree
        assert {i: e.parent_id for i, e in tree.nodes.items()} == self.parent
        assert tree.leaf_id == self.leaf
        assert tree.labels == self.labels
        expected: list[str] = []
        current = self.leaf
        while current is not None:
            expected.append(current)
            current = self.parent[current]
        assert tree.path_ids() == expected[::-1]
        for node_id, entry in tree.nodes.items():
            assert node_id in tree.children_of(entry.parent_id)
            assert node_id in tree.siblings(node_id)
        assert tree.branch_points() == [
            i for i in tree.nodes if sum(1 for p in self.parent.values() if p == i) > 1
        ]

    @invariant()
    def reload_equals_memory(self) -> None:
        path = self.session.path
        if path is None or not path.exists():
            return
        loaded = Session.open(path, lock=False)
        assert loaded.problems == []
        assert loaded.tree.nodes == self.session.tree.nodes
        assert loaded.tree.children == self.session.tree.children
        assert loaded.tree.labels == self.session.tree.labels
        assert loaded.leaf_id == self.session.leaf_id
        assert [e.id for e in loaded.current_path()] == self.session.tree.path_ids()


SessionMachine.TestCase.settings = settings(max_examples=30, stateful_step_count=25, deadline=None)
test_session_operations = SessionMachine.TestCase
