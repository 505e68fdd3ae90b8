"""The tree: paths, children, siblings, branch points, the leaf rule, and validation."""

from __future__ import annotations

from agentsh.session.entries import AnyEntry, LabelEntry, LeafEntry, MessageEntry, Role
from agentsh.session.tree import BranchPosition, SessionTree


def msg(entry_id: str, parent: str | None, role: Role = Role.USER) -> MessageEntry:
    return MessageEntry(id=entry_id, parent_id=parent, role=role, content=entry_id)


def leaf(entry_id: str, target: str | None) -> LeafEntry:
    return LeafEntry(id=entry_id, parent_id=None, target_id=target)


def build(*entries: AnyEntry) -> SessionTree:
    tree, problems = SessionTree.build(list(entries))
    assert problems == []
    return tree


#   r ─ a ─ b ─ c
#           └── d ─ e
#   └── f
FORKED = (
    msg("r", None),
    msg("a", "r"),
    msg("b", "a"),
    msg("c", "b"),
    msg("d", "a"),
    msg("e", "d"),
    msg("f", "r"),
)


def test_path_runs_from_the_root_to_the_leaf() -> None:
    tree = build(*FORKED)
    assert tree.leaf_id == "f"  # the last node appended
    assert tree.path_ids() == ["r", "f"]
    assert tree.path_ids("e") == ["r", "a", "d", "e"]
    assert [e.id for e in tree.path("c")] == ["r", "a", "b", "c"]


def test_children_siblings_and_branch_points_are_in_file_order() -> None:
    tree = build(*FORKED)
    assert tree.roots == ["r"]
    assert tree.children_of("r") == ["a", "f"]
    assert tree.children_of("a") == ["b", "d"]
    assert tree.children_of("c") == []
    assert tree.siblings("d") == ["b", "d"]
    assert tree.siblings("r") == ["r"]
    assert tree.branch_points() == ["r", "a"]
    assert tree.leaves() == ["c", "e", "f"]
    assert tree.parent("e") == "d"
    assert len(tree) == 7


def test_deepest_leaf_follows_the_newest_child() -> None:
    tree = build(*FORKED)
    assert tree.deepest_leaf("a") == "e"
    assert tree.deepest_leaf("r") == "f"
    assert tree.deepest_leaf("c") == "c"


def test_branch_position_counts_at_the_nearest_fork() -> None:
    tree = build(*FORKED)
    assert tree.branch_position("e") == BranchPosition("a", 2, 2)
    assert tree.branch_position("c") == BranchPosition("a", 1, 2)
    assert tree.branch_position("f") == BranchPosition("r", 2, 2)
    assert build(msg("x", None), msg("y", "x")).branch_position() == BranchPosition(None, 1, 1)


def test_leaf_is_the_newest_of_last_append_and_leaf_record() -> None:
    assert build(*FORKED, leaf("l1", "c")).leaf_id == "c"
    assert build(*FORKED, leaf("l1", "c"), msg("g", "e")).leaf_id == "g"
    assert build(*FORKED, leaf("l1", "c"), leaf("l2", "b")).leaf_id == "b"
    start_over = build(*FORKED, leaf("l1", None))
    assert start_over.leaf_id is None and start_over.path_ids() == []


def test_labels_set_replace_and_clear() -> None:
    def label(entry_id: str, target: str, text: str) -> LabelEntry:
        return LabelEntry(id=entry_id, parent_id=None, target_id=target, label=text)

    tree = build(*FORKED, label("l1", "a", "one"), label("l2", "b", "two"), label("l3", "a", "uno"))
    assert tree.labels == {"a": "uno", "b": "two"}
    assert build(*FORKED, label("l1", "a", "one"), label("l2", "a", "")).labels == {}
    # Labels and leaf records are annotations: the shape of the conversation does not change.
    assert "l1" not in tree.nodes and tree.has_id("l1")


def test_a_long_linear_session_walks_without_recursion() -> None:
    entries: list[AnyEntry] = [msg("n0", None)]
    entries += [msg(f"n{i}", f"n{i - 1}") for i in range(1, 50_000)]
    tree = build(*entries)
    assert len(tree.path_ids()) == 50_000
    assert tree.branch_position().count == 1


def test_children_listed_before_their_parent_still_load() -> None:
    # Another writer (or a hand edit) may not keep parents first: the careful path handles it.
    tree, problems = SessionTree.build([msg("b", "a"), msg("a", None), leaf("l", "b")])
    assert problems == [] and tree.path_ids() == ["a", "b"]


def test_the_fast_node_type_table_agrees_with_is_node() -> None:
    # The one-pass loader decides "node or annotation" by type; a new entry type must be
    # classified the same way the is_node property does.
    from agentsh.session import entries
    from agentsh.session import tree as tree_module

    for cls in entries.Entry.__subclasses__():
        # (slots=True leaves the pre-slots copy of each class among the subclasses)
        if issubclass(cls, entries.UnknownEntry) or getattr(entries, cls.__name__) is not cls:
            continue
        is_annotation = cls.is_node is not entries.Entry.is_node
        assert (cls in tree_module._NODE_TYPES) is not is_annotation, cls.__name__
