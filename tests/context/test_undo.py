"""Undoing a compaction (``/compact undo``): the uncompacted history comes back as a new leaf,
with everything said since copied after it, and the compacted branch stays in the tree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentsh.context.convert import to_messages
from agentsh.context.undo import UndoError, undo_compaction
from agentsh.context.view import build_view
from agentsh.events import Tier
from agentsh.session.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    MessageEntry,
    Role,
    ToolResultEntry,
    Usage,
)
from agentsh.session.session import Session
from tests.context.builders import Step, add_turn
from tests.context.conftest import ManagerFactory


def _turns(session: Session, count: int) -> None:
    for n in range(count):
        add_turn(
            session,
            f"request {n} " + "words " * 200,
            [Step("read", {"path": f"src/m{n}.py"}, f"contents {n} " + "line\n" * 150)],
            f"answer {n}",
            usage=Usage(input_tokens=1000 * (n + 1), output_tokens=50, cost=0.01),
        )


def _texts(session: Session) -> list[str]:
    return [
        e.content for e in build_view(session.current_path()).entries if isinstance(e, MessageEntry)
    ]


@pytest.mark.asyncio
async def test_undo_with_nothing_after_the_compaction_moves_the_leaf_back(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    _turns(memory_session, 8)
    before_leaf = memory_session.leaf_id
    before = _texts(memory_session)
    entry = await make_manager(memory_session).compact(Tier.SUMMARIZE)
    assert entry is not None and len(_texts(memory_session)) < len(before)

    result = undo_compaction(memory_session)

    assert memory_session.leaf_id == before_leaf == result.leaf_id == result.restored_to
    assert result.copied == 0 and result.compaction_id == entry.id
    assert _texts(memory_session) == before
    assert build_view(memory_session.current_path()).summary == ""
    # The compaction is still in the tree, on the branch the user left.
    assert entry.id in memory_session.tree.nodes


@pytest.mark.asyncio
async def test_undo_copies_what_came_after_onto_a_new_branch_with_the_same_tool_call_ids(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    _turns(memory_session, 8)
    before = _texts(memory_session)
    entry = await make_manager(memory_session).compact(Tier.SUMMARIZE)
    assert entry is not None
    add_turn(
        memory_session,
        "after the compaction",
        [Step("bash", {"command": "pytest -q"}, "3 passed")],
        "all green",
        usage=Usage(input_tokens=500, output_tokens=20, cost=0.5),
    )
    old_tail = memory_session.current_path()[-4:]

    result = undo_compaction(memory_session)

    path = memory_session.current_path()
    assert not any(isinstance(e, CompactionEntry) for e in path)
    new_tail = path[-4:]
    assert result.copied == 4 and result.leaf_id == new_tail[-1].id
    assert new_tail[0].parent_id == entry.parent_id
    for old, new in zip(old_tail, new_tail, strict=True):
        assert old.id != new.id and type(old) is type(new)
        if isinstance(old, MessageEntry):
            assert isinstance(new, MessageEntry)
            assert (old.role, old.content, old.tool_calls) == (
                new.role,
                new.content,
                new.tool_calls,
            )
            assert new.usage is None  # spend is not counted twice
        else:
            assert isinstance(old, ToolResultEntry) and isinstance(new, ToolResultEntry)
            assert (old.tool_call_id, old.content) == (new.tool_call_id, new.content)
    assert _texts(memory_session) == [*before, "after the compaction", "", "all green"]
    # Both branches exist: the compacted one ends at the old leaf.
    assert old_tail[-1].id in memory_session.tree.leaves()
    view = build_view(path)
    assert view.summary == ""  # the request holds no summary block, only the turns
    assert len(to_messages(view, "system")) == 1 + len(view.entries)


@pytest.mark.asyncio
async def test_undo_reverts_only_the_newest_of_two_compactions(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    manager = make_manager(memory_session)
    _turns(memory_session, 8)
    first = await manager.compact(Tier.SUMMARIZE)
    _turns(memory_session, 8)
    second = await manager.compact(Tier.SUMMARIZE)
    assert first is not None and second is not None

    result = undo_compaction(memory_session)

    view = build_view(memory_session.current_path())
    assert result.compaction_id == second.id and result.remaining_compactions == 1
    assert view.compaction is not None and view.compaction.id == first.id


def test_undo_without_a_compaction_says_so(memory_session: Session) -> None:
    memory_session.append_message(Role.USER, "hi")
    with pytest.raises(UndoError, match="no compaction"):
        undo_compaction(memory_session)


@pytest.mark.asyncio
async def test_undo_is_durable_and_a_reload_lands_on_the_restored_leaf(
    disk_session: Session, make_manager: ManagerFactory
) -> None:
    _turns(disk_session, 8)
    await make_manager(disk_session).compact(Tier.SUMMARIZE)
    disk_session.append_message(Role.USER, "one more")
    result = undo_compaction(disk_session)
    disk_session.sync()
    path = disk_session.path
    assert path is not None
    disk_session.close()
    reopened = Session.open(path)
    try:
        assert reopened.leaf_id == result.leaf_id
        assert not any(isinstance(e, CompactionEntry) for e in reopened.current_path())
        raw = path.read_text()
        lines = [json.loads(x) for x in raw.splitlines()[1:]]
        assert sum(1 for x in lines if x.get("content") == "one more") == 2  # original + copy
    finally:
        reopened.close()


def test_a_read_only_session_cannot_be_undone(tmp_path: Path) -> None:
    session = Session.create(None, tmp_path)
    session.read_only_reason = "opened as a read-only view"
    with pytest.raises(UndoError, match="read-only"):
        undo_compaction(session)


@pytest.mark.asyncio
async def test_undo_does_not_count_a_branch_summary_call_twice(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    """A branch summary attached after the compaction carries the usage of the call that wrote
    it; its copy on the restored branch kept that usage, so the session's tokens and cost
    counted the call twice after ``/compact undo``."""
    manager = make_manager(memory_session)
    _turns(memory_session, 8)
    assert await manager.compact(Tier.SUMMARIZE) is not None
    memory_session.append_branch_summary(
        memory_session.leaf_id or "",
        "the user tried another parser there",
        Usage(input_tokens=7_000, output_tokens=300, cost=0.25),
    )
    before = manager.accounting.totals()

    undo_compaction(memory_session)

    copies = [e for e in memory_session.current_path() if isinstance(e, BranchSummaryEntry)]
    assert len(copies) == 1 and copies[0].summary == "the user tried another parser there"
    assert manager.accounting.totals() == before
