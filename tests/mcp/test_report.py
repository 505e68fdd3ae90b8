"""``/mcp`` as plain text: one row per server, the budget, one server's tools."""

from __future__ import annotations

import dataclasses

from agentsh.mcp.report import (
    budget_text,
    overview_text,
    restart_refusal,
    server_rows,
    server_text,
)
from agentsh.mcp.servers_config import Scope, Transport
from agentsh.mcp.state import McpOverview, RemoteTool, ServerState, ServerStatus

GIT = ServerStatus(
    "git",
    Scope.USER,
    Transport.STDIO,
    "uvx mcp-server-git",
    ServerState.READY,
    tools=(RemoteTool("git", "git_log", "", "Shows the commit logs\nmore", {"type": "object"}),),
    tool_problems=("bad: left out: its input schema is not valid",),
    ready_after_s=1.24,
    restarts=1,
)
WEB = ServerStatus(
    "web",
    Scope.PROJECT,
    Transport.HTTP,
    "http https://x.test/mcp",
    ServerState.FAILED,
    reason="did not start within 10 s | \x1b[31mred",
)


def test_the_overview_has_a_row_per_server_and_says_where_the_budget_stands() -> None:
    text = overview_text(McpOverview((GIT, WEB), {"git": 1300}, budget=12800))
    git, web = (" ".join(row.split()) for row in text.splitlines()[:2])
    assert git == "git user, stdio ready in 1.2 s, restarted 1x 1 (1 left out) tools 1.3k tokens"
    assert web == "web project, http failed: did not start within 10 s | red - tools"
    assert "take 1.3k tokens, of the budget of 12.8k" in text
    deferred = overview_text(McpOverview((GIT,), {"git": 20_000}, budget=12800, deferred=True))
    assert "over the budget of 12.8k: the model is offered mcp_search instead" in deferred
    assert overview_text(McpOverview()).startswith("No MCP servers are configured.")


def test_one_server_lists_its_tools_and_what_was_left_out() -> None:
    text = server_text(GIT, 1300)
    assert "command: uvx mcp-server-git" in text
    assert "- git_log: Shows the commit logs" in text and "more" not in text
    assert "- left out: bad: left out: its input schema is not valid" in text


def test_with_the_window_known_each_server_shows_its_share_of_it() -> None:
    overview = McpOverview((GIT, WEB), {"git": 1300}, budget=12800, window=128_000)
    assert "1.3k tokens (1.0%)" in overview_text(overview)
    assert budget_text(overview).startswith(
        "Their definitions take 1.3k tokens, 1.0% of the window"
    )
    git, web = server_rows(overview)
    assert git == (
        "git  user, stdio    ready in 1.2 s, restarted 1x             1 (1 left out) tools  "
        "1.3k tokens (1.0%)"
    )
    # Columns line up; what a server or a config file said is cleaned of escape sequences.
    assert web.index("failed:") == git.index("ready") and "\x1b" not in web
    assert "failed: did not start within 10 s | red" in web


def test_a_server_switched_off_says_so_once_and_its_tools_are_not_offered() -> None:
    off = dataclasses.replace(GIT, state=ServerState.DISABLED, reason="disabled for this session")
    text = server_text(off, 0)
    assert "disabled for this session" in text and "(disabled for" not in text
    assert "1 tools, not offered now:" in text


def test_a_restart_of_a_disabled_server_is_refused_with_the_way_to_start_it() -> None:
    """`/mcp restart NAME` said "restarting" and did nothing for a disabled server."""
    off = dataclasses.replace(GIT, state=ServerState.DISABLED, reason="disabled for this session")
    refusal = restart_refusal(McpOverview((off,)), "git")
    assert "a restart does not start it" in refusal and "/mcp enable git" in refusal
    assert restart_refusal(McpOverview((GIT,)), "git") == ""


def test_the_servers_of_an_untrusted_project_are_named_not_forgotten() -> None:
    alone = overview_text(McpOverview(untrusted=("evil",)))
    assert alone.startswith("This project's MCP servers (evil) were not started")
    assert "No MCP servers are configured" not in alone
    beside = overview_text(McpOverview((GIT,), {"git": 1300}, 12800, untrusted=("evil",)))
    assert beside.startswith("git  user, stdio") and "--trust-project" in beside
