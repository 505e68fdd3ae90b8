"""The chat is a projection of the session path: entries -> view items."""

from __future__ import annotations

import json

from agentsh.session.entries import CompactionEntry, Role, StopReason, ToolCall
from agentsh.session.session import Session
from agentsh.tui.projection import (
    AssistantItem,
    CompactionItem,
    ToolItem,
    UserItem,
    project,
    tool_summary,
)


def test_a_tool_call_and_its_result_become_one_block_item(tmp_path) -> None:
    s = Session.create(None, tmp_path)
    s.append_message(Role.USER, "run the tests")
    call = ToolCall("c1", "bash", json.dumps({"command": "pytest -q\nmore"}))
    s.append_message(Role.ASSISTANT, "", tool_calls=(call,), stop_reason=StopReason.TOOL_CALLS)
    s.append_tool_result("c1", "bash", "3 passed", details={"diff": ""})
    s.append_message(Role.ASSISTANT, "All green.", stop_reason=StopReason.STOP)
    items = project(s.current_path())
    assert [type(i) for i in items] == [UserItem, ToolItem, AssistantItem]
    tool = items[1]
    assert isinstance(tool, ToolItem)
    assert tool.summary == "bash: pytest -q" and tool.output == "3 passed" and tool.finished


def test_an_aborted_reply_is_kept_and_marked(tmp_path) -> None:
    s = Session.create(None, tmp_path)
    s.append_message(Role.USER, "hi")
    s.append_message(Role.ASSISTANT, "half an ans", stop_reason=StopReason.ABORTED)
    assert project(s.current_path())[-1] == AssistantItem(s.leaf_id or "", "half an ans", True)


def test_a_compaction_is_one_item(tmp_path) -> None:
    s = Session.create(None, tmp_path)
    u = s.append_message(Role.USER, "hi")
    s.append(
        CompactionEntry(
            id=s.new_id(), parent_id=u.id, tier="summarize", summary="S", first_kept_id=u.id,
            tokens_before=100, tokens_after=10,
        )
    )  # fmt: skip
    item = project(s.current_path())[-1]
    assert isinstance(item, CompactionItem) and item.tokens_before == 100


def test_the_header_uses_the_main_argument() -> None:
    assert tool_summary("read", {"path": "a.py", "offset": 3}) == "read: a.py"
    assert tool_summary("ls", {}) == "ls"
