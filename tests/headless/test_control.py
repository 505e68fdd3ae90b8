"""Control requests of a program driving ``agentsh -p --input-format stream-json``
(agentsh/headless/control.py), answered in the shapes the Claude Agent SDK's types give, asked
through the SDK's own ``ClaudeSDKClient``."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    ToolUseBlock,
)
from claude_agent_sdk.types import McpStdioServerConfig

from tests.fakes.fixtures import FAKE_KEY
from tests.fakes.server import ScriptedServer, text, tool_call
from tests.headless.test_agent_sdk_query import _cli
from tests.mcp.conftest import FAKE_SERVER

WINDOW = 128_000  # the scripted test model's, as litellm's cost map has none for it


def test_get_context_usage_answers_claude_codes_breakdown_from_the_accounting(
    tmp_path: Path, scripted_server: ScriptedServer, project: Path, agentsh_home: Path
) -> None:
    """ClaudeSDKClient.get_context_usage() after a turn: categories that add up (the used ones
    to totalTokens, all of them to the window), the AGENTS.md files and curated memory in the
    system prompt, each MCP tool's cost, where automatic compaction starts. It answered two
    status-bar figures before (MCP tools, and the rest as "Messages")."""
    (project / "AGENTS.md").write_text("Run the tests with `make check`. " * 20 + "\n")
    user_file = agentsh_home / "config" / "AGENTS.md"
    user_file.parent.mkdir(parents=True, exist_ok=True)
    user_file.write_text("Answer in short sentences.\n")
    # The fake server gets a minute to start: at load 16 the 10 s default ran out (seen 4 runs
    # of 5), its tools were missing and so was the "MCP tools" category.
    (user_file.parent / "config.toml").write_text("[mcp]\nstartup_timeout_s = 60.0\n")
    memory = agentsh_home / "data" / "memory" / "USER.md"
    memory.parent.mkdir(parents=True, exist_ok=True)
    memory.write_text("The user reads diffs before merging.\n")
    scripted_server.script(text("the answer " * 200))
    fake: McpStdioServerConfig = {"command": sys.executable, "args": [str(FAKE_SERVER)]}
    options = ClaudeAgentOptions(
        cli_path=str(_cli(tmp_path, scripted_server)),
        cwd=str(project),
        mcp_servers={"fake": fake},
        extra_args={"trust-project": None},
        env={"OPENAI_API_KEY": FAKE_KEY, "AGENTSH_HOME": str(agentsh_home)},
    )

    async def run() -> tuple[list[Any], dict[str, Any]]:
        async with ClaudeSDKClient(options) as client:
            await client.query("explain the layout " * 50)
            messages = [m async for m in client.receive_response()]
            usage = await client.get_context_usage()
        return messages, dict(usage)

    messages, usage = anyio.run(run)
    assert isinstance(messages[-1], ResultMessage) and not messages[-1].is_error
    names = [c["name"] for c in usage["categories"]]
    assert names == [
        "System prompt",
        "System tools",
        "MCP tools",
        "Memory files",
        "Messages",
        "Autocompact buffer",
        "Free space",
    ]
    tokens = {c["name"]: c["tokens"] for c in usage["categories"]}
    assert all(c["color"] for c in usage["categories"])
    assert all(t > 0 for t in tokens.values()), json.dumps(usage)
    used = sum(t for n, t in tokens.items() if n not in ("Autocompact buffer", "Free space"))
    assert usage["totalTokens"] == used
    assert (usage["maxTokens"], usage["rawMaxTokens"]) == (WINDOW, WINDOW)
    assert sum(tokens.values()) == WINDOW
    assert usage["percentage"] == round(100 * used / WINDOW, 1)
    # [context] move_to_workspace_at: the first tier starts at 80 % of the window.
    assert usage["isAutoCompactEnabled"] is True
    assert usage["autoCompactThreshold"] == int(0.8 * WINDOW)
    assert tokens["Autocompact buffer"] == WINDOW - usage["autoCompactThreshold"]
    # The prompt (~200 tokens) and the reply (~400) are the messages.
    assert tokens["Messages"] > 500
    files = {f["path"]: f for f in usage["memoryFiles"]}
    assert files[str(project / "AGENTS.md")]["type"] == "Project"
    assert files[str(user_file)]["type"] == "User"
    assert files[str(memory)]["type"] == "User"
    assert files[str(project / "AGENTS.md")]["tokens"] > files[str(user_file)]["tokens"] > 0
    assert sum(f["tokens"] for f in usage["memoryFiles"]) <= tokens["Memory files"]
    tools = {t["name"]: t for t in usage["mcpTools"]}
    assert tools["mcp__fake__echo"]["serverName"] == "fake"
    assert tools["mcp__fake__echo"]["isLoaded"] is True
    # each counted alone (as Claude Code does): near the whole list's count, not equal to it
    each = sum(t["tokens"] for t in usage["mcpTools"])
    assert abs(each - tokens["MCP tools"]) < 0.1 * tokens["MCP tools"]
    assert usage["model"].startswith("openai/")
    # agentsh's own breakdown rides along (`agentsh context --json`'s fields).
    assert usage["agentsh"]["tier"] == "none" and usage["agentsh"]["turns"] == 1


def test_get_context_usage_lists_the_nested_agents_md_the_agent_loaded(
    tmp_path: Path, scripted_server: ScriptedServer, project: Path, agentsh_home: Path
) -> None:
    """An AGENTS.md below the working folder joins the context with the first read of a file
    under it: memoryFiles lists it beside the root's, and its tokens count as memory files, not
    messages (it was missing: only the start-up files were listed)."""
    (project / "AGENTS.md").write_text("Root rules.\n")
    (project / "pkg").mkdir()
    (project / "pkg" / "AGENTS.md").write_text("Package rules: keep functions pure. " * 30)
    (project / "pkg" / "mod.py").write_text("x = 1\n")
    scripted_server.script(tool_call("read", {"path": "pkg/mod.py"}), text("read it"))
    options = ClaudeAgentOptions(
        cli_path=str(_cli(tmp_path, scripted_server)),
        cwd=str(project),
        allowed_tools=["Read"],
        extra_args={"trust-project": None},
        env={"OPENAI_API_KEY": FAKE_KEY, "AGENTSH_HOME": str(agentsh_home)},
    )

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        async with ClaudeSDKClient(options) as client:
            before = await client.get_context_usage()
            await client.query("read pkg/mod.py")
            messages = [m async for m in client.receive_response()]
            assert isinstance(messages[-1], ResultMessage) and not messages[-1].is_error
            after = await client.get_context_usage()
        return dict(before), dict(after)

    before, after = anyio.run(run)
    nested = str(project / "pkg" / "AGENTS.md")
    assert nested not in {f["path"] for f in before["memoryFiles"]}
    files = {f["path"]: f for f in after["memoryFiles"]}
    assert str(project / "AGENTS.md") in files
    assert files[nested]["type"] == "Project" and files[nested]["tokens"] > 100
    tokens = {c["name"]: c["tokens"] for c in after["categories"]}
    assert sum(f["tokens"] for f in after["memoryFiles"]) <= tokens["Memory files"]
    assert (
        tokens["Memory files"]
        >= files[nested]["tokens"] + files[str(project / "AGENTS.md")]["tokens"]
    )
    assert "Package rules" in str(scripted_server.requests[1].messages)


def test_mcp_definitions_behind_mcp_search_are_listed_deferred_and_not_counted() -> None:
    """Over the MCP budget the model gets ``mcp_search`` instead of the definitions: they are
    listed as Claude Code lists its deferred tools, outside the used total. Without automatic
    compaction there is no buffer and no threshold."""
    from agentsh.context.breakdown import ContextBreakdown, ContextUsage, CountedTool
    from agentsh.events import Tier
    from agentsh.headless.control import context_usage

    breakdown = ContextBreakdown(
        *("openai/m", 10_000, "tiered", 300, 900, 50, 0, 400, 100, 1_800, 2_000),
        *(False, 20.0, Tier.NONE, 4, 1, 0, False, ""),
        mcp_tools=120,  # mcp_search's definition and the one tool it loaded
    )
    tools = (
        CountedTool("mcp__big__one", "big", 60, loaded=True),
        CountedTool("mcp__big__two", "big", 4_000, loaded=False),
    )
    answer = context_usage(ContextUsage(breakdown, mcp_tools=tools))
    categories = {c["name"]: c for c in answer["categories"]}
    assert categories["MCP tools (deferred)"] == {
        "name": "MCP tools (deferred)",
        "tokens": 4_000,
        "color": "inactive",
        "isDeferred": True,
    }
    assert categories["MCP tools"]["tokens"] == 120
    assert categories["System tools"]["tokens"] == 900 - 120
    assert (
        answer["totalTokens"]
        == 2_000
        == sum(
            c["tokens"]
            for c in answer["categories"]
            if c["name"] not in ("Free space",) and not c.get("isDeferred")
        )
    )
    assert categories["Free space"]["tokens"] == 8_000
    assert "Autocompact buffer" not in categories
    assert answer["isAutoCompactEnabled"] is False and "autoCompactThreshold" not in answer
    assert [t["isLoaded"] for t in answer["mcpTools"]] == [True, False]


def test_an_interrupt_while_a_command_runs_ends_the_turn_as_aborted_tools(
    tmp_path: Path, scripted_server: ScriptedServer, project: Path, agentsh_home: Path
) -> None:
    """ClaudeSDKClient.interrupt() during a tool: the result says ``aborted_tools`` (hosts
    tell an interrupted turn from a failed one by it), and the next query runs."""
    scripted_server.script(tool_call("bash", {"command": "sleep 300"}), text("after"))
    options = ClaudeAgentOptions(
        cli_path=str(_cli(tmp_path, scripted_server)),
        cwd=str(project),
        permission_mode="bypassPermissions",
        env={"OPENAI_API_KEY": FAKE_KEY, "AGENTSH_HOME": str(agentsh_home)},
    )

    async def run() -> tuple[ResultMessage, ResultMessage]:
        async with ClaudeSDKClient(options) as client:
            await client.query("wait a minute")
            async for message in client.receive_messages():
                if isinstance(message, AssistantMessage) and any(
                    isinstance(block, ToolUseBlock) for block in message.content
                ):
                    break
            await anyio.sleep(0.5)  # the command is running
            await client.interrupt()
            stopped = [m async for m in client.receive_response()][-1]
            await client.query("go on")
            after = [m async for m in client.receive_response()][-1]
        assert isinstance(stopped, ResultMessage) and isinstance(after, ResultMessage)
        return stopped, after

    started = time.monotonic()
    stopped, after = anyio.run(run)
    assert time.monotonic() - started < 200  # the command did not run its five minutes
    assert (stopped.subtype, stopped.terminal_reason) == ("error_during_execution", "aborted_tools")
    assert (after.result, after.terminal_reason) == ("after", "completed")
