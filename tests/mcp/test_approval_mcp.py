"""Approving MCP tools: once, for the session (that tool), or every tool of its server."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsh.config import ApprovalMode, Settings
from agentsh.events import ApprovalDecision, ApprovalRequest, Event
from agentsh.mcp.state import RemoteTool
from agentsh.mcp.tools import McpTool, make_tool
from agentsh.paths import ProjectPaths, UserPaths
from agentsh.tools.approval import Approver
from agentsh.tools.base import ToolContext
from tests.mcp.conftest import ListedTools

pytestmark = pytest.mark.asyncio


def tool(server: str, name: str) -> McpTool:
    remote = RemoteTool(server, name, f"mcp__{server}__{name}", "d", {"type": "object"})
    return make_tool(ListedTools(), remote)


def context(
    tmp_path: Path, answers: list[ApprovalDecision], asked: list[ApprovalRequest]
) -> ToolContext:
    def emit(event: Event) -> None:
        assert isinstance(event, ApprovalRequest)
        asked.append(event)
        event.decision.set_result(answers.pop(0))

    home = tmp_path / "home"
    user = UserPaths(home / "c", home / "d", home / "k")
    return ToolContext(ProjectPaths(tmp_path), user, Settings(), tmp_path, emit=emit)


async def test_allowing_a_server_for_the_session_covers_its_other_tools_only(
    tmp_path: Path,
) -> None:
    approver = Approver(ApprovalMode.ASK, tmp_path, interactive=True)
    asked: list[ApprovalRequest] = []
    answers = [ApprovalDecision.ALLOW_GROUP, ApprovalDecision.ALLOW_SESSION]
    ctx = context(tmp_path, answers, asked)
    assert await approver.authorize(tool("git", "git_log"), {}, ctx) is None
    assert asked[0].group == "every tool of MCP server 'git'"
    assert await approver.authorize(tool("git", "git_commit"), {}, ctx) is None  # not asked
    assert await approver.authorize(tool("time", "now"), {}, ctx) is None  # asked: other server
    assert [r.tool for r in asked] == ["mcp__git__git_log", "mcp__time__now"]
    approver.forget_session()  # a new session asks again
    answers.append(ApprovalDecision.DENY)
    assert "declined" in (await approver.authorize(tool("git", "git_log"), {}, ctx) or "")


async def test_headless_denial_names_the_rule_that_would_allow_it(tmp_path: Path) -> None:
    approver = Approver(ApprovalMode.ASK, tmp_path, interactive=False)
    denial = await approver.authorize(tool("git", "git_log"), {}, context(tmp_path, [], []))
    assert denial is not None
    assert "`--allowedTools mcp__git__git_log` (or `mcp__git__*`)" in denial
