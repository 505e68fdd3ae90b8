"""The chat is a projection of the session path: entries -> view items."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agentsh.agent_assembly import build_agent
from agentsh.config import ApprovalMode, load_environment
from agentsh.events import ToolStarted
from agentsh.session.entries import (
    CompactionEntry,
    MessageEntry,
    Role,
    StopReason,
    ToolCall,
)
from agentsh.session.entry_parse import entry_from_json
from agentsh.session.session import Session
from agentsh.tui.projection import (
    AssistantItem,
    ChatItem,
    CompactionItem,
    ToolItem,
    UserItem,
    project,
    tool_summary,
)
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ScriptedServer, text, tool_call


def test_a_tool_call_and_its_result_become_one_block_item(tmp_path: Path) -> None:
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


def test_an_aborted_reply_is_kept_and_marked(tmp_path: Path) -> None:
    s = Session.create(None, tmp_path)
    s.append_message(Role.USER, "hi")
    s.append_message(Role.ASSISTANT, "half an ans", stop_reason=StopReason.ABORTED)
    assert project(s.current_path())[-1] == AssistantItem(s.leaf_id or "", "half an ans", True)


def test_a_compaction_is_one_item(tmp_path: Path) -> None:
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


def test_a_header_logged_without_one_uses_the_main_argument() -> None:
    assert tool_summary("read", {"path": "a.py", "offset": 3}) == "read: a.py"
    assert tool_summary("grep", {"pattern": "x", "path": "src"}) == "grep: x"
    assert tool_summary("ls", {}) == "ls"


# -- live headers == resumed headers -------------------------------------------------------------

# Every tool, with each shape of arguments its header reads differently (and two calls no tool
# can run). The live header is ToolStarted.summary; the resumed one is the projection of the
# session file read back from disk.
CALLS: list[tuple[str, dict[str, object] | str]] = [
    ("read", {"path": "a.py"}),
    ("read", {"path": "a.py", "offset": 10, "limit": 11}),
    ("read", {"path": "a.py", "offset": 3}),
    ("read", {"path": "a.py", "limit": 2}),
    ("write", {"path": "new.txt", "content": "hello\n"}),
    ("edit", {"path": "a.py", "old_text": "x = 1", "new_text": "x = 2"}),
    ("edit", {"path": "a.py", "old_text": "y", "new_text": "z", "replace_all": True}),
    ("bash", {"command": "echo hi"}),
    ("bash", {"command": "echo one\necho two"}),
    ("bash", {"command": "echo " + "x" * 150, "timeout": 5}),
    ("grep", {"pattern": "needle"}),
    ("grep", {"pattern": "needle", "path": "src", "glob": "*.py"}),
    ("grep", {"pattern": "needle", "path": "src", "ignore_case": True, "context": 1}),
    ("find", {"pattern": "*.py"}),
    ("find", {"pattern": "*.py", "path": "src"}),
    ("ls", {}),
    ("ls", {"path": "src"}),
    ("memory", {"action": "add", "content": "The tests run with pytest -q"}),
    ("memory", {"action": "replace", "old_text": "pytest -q", "content": "pytest -q -x"}),
    ("memory", {"action": "remove", "target": "user", "old_text": "nothing like this"}),
    ("memory_search", {"query": "how are tests run"}),
    ("memory_get", {"path": ".agentsh/memory/MEMORY.md"}),
    ("memory_get", {"path": ".agentsh/memory/MEMORY.md", "from_line": 2, "lines": 3}),
    ("no_such_tool", {"x": 1}),
    ("read", {"offset": "not a number"}),
]


@pytest.mark.asyncio
async def test_every_tool_header_is_the_same_live_and_after_resume(
    scripted_server: ScriptedServer, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    (project / "a.py").write_text("x = 1\ny = 2\n" + "pass\n" * 30)
    (project / "src").mkdir()
    (project / "src" / "b.py").write_text("needle = 1\n")
    config = project / ".agentsh" / "config.toml"
    config.parent.mkdir()
    config.write_text('[search]\nembedding = "none"\n')
    env = load_environment(project)
    session = Session.create(env.user.project_sessions_dir(project), project)
    scripted_server.script(
        *(tool_call(name, arguments, id=f"c{i}") for i, (name, arguments) in enumerate(CALLS)),
        text("done"),
    )
    agent = build_agent(
        env,
        session,
        model=TEST_MODEL,
        api_base=scripted_server.base_url,
        approval=ApprovalMode.ALL,
        cwd=project,
    )
    try:
        live = {e.call_id: e.summary async for e in agent.run("go") if isinstance(e, ToolStarted)}
    finally:
        agent.close()
    assert session.path is not None
    with Session.open(session.path, lock=False) as reopened:
        resumed = {i.call_id: i.summary for i in project_items(reopened) if isinstance(i, ToolItem)}
    assert len(live) == len(CALLS)
    assert resumed == live
    assert live["c1"] == "read: a.py:10-20" and live["c11"] == "grep: needle in src (*.py)"


# An MCP server's tools write their own headers (server, tool, arguments): the same check.
FAKE_MCP_SERVER = Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py"
MCP_CALLS: list[tuple[str, dict[str, object] | str]] = [
    ("mcp__fake__echo", {"text": "hello"}),
    ("mcp__fake__echo", {"text": "a long line " * 30}),
    ("mcp__fake__echo", {"text": 5}),  # fails the server's schema
    ("mcp__fake__mixed", {}),
    ("mcp__fake__lines", {"count": 3}),
    ("mcp__fake__hang", {"seconds": 0}),
]


@pytest.mark.asyncio
async def test_every_mcp_tool_header_is_the_same_live_and_after_resume(
    scripted_server: ScriptedServer,
    project: Path,
    agentsh_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    config = agentsh_home / "config"
    config.mkdir(parents=True, exist_ok=True)
    # The turn waits for the server's start before its first request, up to its start-up
    # timeout: 10 s by default, which a loaded machine's Python start and mcp import can
    # exceed; the model's calls then named an unknown tool (mcp__fake__echo in the header).
    server = {"command": sys.executable, "args": [str(FAKE_MCP_SERVER)], "startup_timeout_s": 60}
    (config / "mcp.json").write_text(json.dumps({"mcpServers": {"fake": server}}))
    env = load_environment(project)
    session = Session.create(env.user.project_sessions_dir(project), project)
    scripted_server.script(
        *(tool_call(name, arguments, id=f"m{i}") for i, (name, arguments) in enumerate(MCP_CALLS)),
        text("done"),
    )
    agent = build_agent(
        env,
        session,
        model=TEST_MODEL,
        api_base=scripted_server.base_url,
        approval=ApprovalMode.ALL,
        cwd=project,
    )
    try:
        live = {e.call_id: e.summary async for e in agent.run("go") if isinstance(e, ToolStarted)}
    finally:
        agent.close()
    assert session.path is not None
    with Session.open(session.path, lock=False) as reopened:
        resumed = {i.call_id: i.summary for i in project_items(reopened) if isinstance(i, ToolItem)}
    assert len(live) == len(MCP_CALLS)
    assert resumed == live
    assert live["m0"] == "fake: echo text=hello" and live["m3"] == "fake: mixed"


def project_items(session: Session) -> list[ChatItem]:
    return project(session.current_path(), tree=session.tree)


def test_a_call_logged_before_headers_were_kept_still_gets_one(tmp_path: Path) -> None:
    """Old logs have no stored header: the tool's name and its main argument stand in."""
    call = {"id": "c1", "name": "grep", "arguments": json.dumps({"pattern": "x", "path": "s"})}
    line = {
        "type": "message", "id": "m1", "parentId": None, "timestamp": "", "role": "assistant",
        "content": "", "toolCalls": [call],
    }  # fmt: skip
    entry = entry_from_json(line)
    assert isinstance(entry, MessageEntry) and entry.tool_calls[0].summary == ""
    (item,) = project([entry])
    assert isinstance(item, ToolItem) and item.summary == "grep: x" and not item.finished
    stored = entry_from_json({**line, "toolCalls": [{**call, "summary": "S"}]})
    assert isinstance(stored, MessageEntry) and stored.tool_calls[0].summary == "S"
    assert stored.to_json()["toolCalls"][0]["summary"] == "S"
    assert "summary" not in entry.to_json()["toolCalls"][0]


def test_approvals_a_result_records_are_read_as_untrusted(tmp_path: Path) -> None:
    """Only the five answers (the four keys and "cancelled"), as text, become lines; an old
    log without them shows none, and a hostile one (a list where text belongs, an unknown
    answer) neither crashes nor shows."""
    from agentsh.tui.projection import ApprovalItem, approval_items

    s = Session.create(tmp_path, tmp_path)
    good = {"decision": "allow_group", "summary": "git: push\x1b[2J", "group": "every\x1btool"}
    withdrawn = {"decision": "cancelled", "summary": "bash: ls"}  # the turn ended first
    recorded = [good, {"decision": ["deny"]}, {"decision": "yes", "summary": "x"}, "deny", 7,
                withdrawn]  # fmt: skip
    result = s.append_tool_result("c1", "bash", "ok", details={"approvals": recorded})
    old = s.append_tool_result("c2", "bash", "ok")
    odd = s.append_tool_result("c3", "bash", "ok", details={"approvals": {"decision": "deny"}})
    items = approval_items(result)
    assert [i.text for i in items] == [
        "git: push\\x1b[2J: allowed for this session, with every\\x1btool",
        "bash: ls: not answered: the turn was cancelled",
    ]
    assert items == [
        ApprovalItem(result.id, good["summary"], "allowed for this session, with every\x1btool"),
        ApprovalItem(result.id, "bash: ls", "not answered: the turn was cancelled"),
    ]
    assert approval_items(old) == approval_items(odd) == approval_items(None) == []
