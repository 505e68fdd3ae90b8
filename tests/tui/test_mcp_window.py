"""``/mcp`` in the real App with the real agent and real MCP servers (the fake server over
stdio, and one that fails to start): the window lists them with their state and tools, follows
them as they change, and switches one off and on for the session; the text forms write into
the chat; the status line counts the tools once the servers are up."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from textual.widgets import OptionList

from agentsh.agent import Agent
from agentsh.config import load_environment
from agentsh.mcp.state import ServerState
from agentsh.tui.app import AgentshApp
from agentsh.tui.options import LaunchOptions
from agentsh.tui.screens.mcp_screen import McpServersScreen
from agentsh.tui.widgets.composer import CompletionMenu, PromptInput
from agentsh.tui.widgets.messages import NoteMarkdown
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ScriptedServer
from tests.mcp.conftest import FAKE_SERVER, pids_in, wait_gone
from tests.tui.conftest import MakeApp, agent_of, ready, screen_text, submit, wait_for

pytestmark = pytest.mark.asyncio

# The fake server gets a minute to start: the 10 s default ran out on a loaded machine (its
# Python start and mcp import), and the server then read "failed", not "ready".
SERVERS = {
    "fake": {
        "command": sys.executable,
        "args": [str(FAKE_SERVER), "--pid-dir", "PIDS"],
        "startup_timeout_s": 60,
    },
    "broken": {"command": sys.executable, "args": ["-c", "import sys; sys.exit('no token set')"]},
}


def _offered(app: AgentshApp) -> list[str]:
    """The tools the real agent offers the model (the TUI itself never asks)."""
    agent = agent_of(app)
    assert isinstance(agent, Agent)
    return agent.tool_names()


def _state(app: AgentshApp, name: str) -> ServerState | None:
    overview = agent_of(app).mcp_overview()
    return next((s.state for s in overview.servers if s.name == name), None)


@pytest.fixture
def app_with_servers(
    make_app: MakeApp,
    scripted_server: ScriptedServer,
    agentsh_home: Path,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> AgentshApp:
    from agentsh.tui.lifecycle import build_real_agent

    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    config = agentsh_home / "config"
    config.mkdir(parents=True, exist_ok=True)
    servers = json.loads(json.dumps(SERVERS).replace("PIDS", str(agentsh_home / "pids")))
    (config / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    options = LaunchOptions(model=TEST_MODEL, api_base=scripted_server.base_url)
    env = load_environment(project, trust_project=True)
    return make_app(factory=build_real_agent, options=options, environment=env)


async def test_the_mcp_window_follows_the_servers_and_switches_one_off_and_on(
    app_with_servers: AgentshApp, agentsh_home: Path
) -> None:
    app = app_with_servers
    async with app.run_test(size=(110, 40)) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "/mcp")  # opened while the servers may still be starting
        await wait_for(pilot, lambda: isinstance(app.screen, McpServersScreen))
        window = app.screen
        assert isinstance(window, McpServersScreen)
        await wait_for(pilot, lambda: _state(app, "fake") is ServerState.READY, limit_s=60)
        await wait_for(pilot, lambda: _state(app, "broken") is ServerState.FAILED, limit_s=60)
        # The window was told (the agent's MCP watch), without being reopened.
        await wait_for(pilot, lambda: "fake" in screen_text(app) and "ready in" in screen_text(app))
        text = screen_text(app)
        assert "failed: the server process exited" in text and "no token set" in text
        assert "tools" in text and "% of the window" in text
        # The status line counts the definitions now that the tools are offered.
        assert app.controller.status_bar.status.mcp_tools > 0
        # The highlighted server's tools are listed below the rows.
        window.query_one("#mcp-list", OptionList).highlighted = window.names.index("fake")
        await wait_for(pilot, lambda: "echo" in screen_text(app))
        await pilot.press("d")
        await wait_for(pilot, lambda: _state(app, "fake") is ServerState.DISABLED)
        await wait_for(pilot, lambda: "disabled" in screen_text(app))
        await pilot.press("r")  # a restart does not start a disabled server, and says so
        await wait_for(
            pilot, lambda: any("does not start it" in str(n.message) for n in app._notifications)
        )
        assert _state(app, "fake") is ServerState.DISABLED
        assert not [n for n in _offered(app) if n.startswith("mcp__fake__")]
        assert app.controller.status_bar.status.mcp_tools == 0
        await pilot.press("e")
        await wait_for(pilot, lambda: _state(app, "fake") is ServerState.READY, limit_s=60)
        assert "mcp__fake__echo" in _offered(app)
        await wait_for(pilot, lambda: app.controller.status_bar.status.mcp_tools > 0)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, McpServersScreen))
        # The text forms: the overview and one server's tools in the chat.
        await submit(pilot, app, "/mcp text")
        await wait_for(pilot, lambda: bool(app.query(NoteMarkdown)))
        rows = app.query(NoteMarkdown).last().text.splitlines()
        assert any(row.split()[:4] == ["fake", "user,", "stdio", "ready"] for row in rows)
        await submit(pilot, app, "/mcp fake")
        await wait_for(pilot, lambda: "- echo: " in app.query(NoteMarkdown).last().text)
        await submit(pilot, app, "/mcp restart nosuch")
        await wait_for(pilot, lambda: "No MCP server named 'nosuch'" in screen_text(app))
        # Completion offers the servers' names: as the first word, and after an action.
        menu = app.query_one(CompletionMenu)
        await pilot.press(*"/mcp f")
        assert menu.display and [c.insert for c in menu.completions] == ["fake"]
        await pilot.press("backspace", *"restart b")
        assert [c.insert for c in menu.completions] == ["broken"]
        await pilot.press("tab")
        assert app.query_one(PromptInput).text == "/mcp restart broken"
    # Leaving the App stops the servers (the one switched off and on included): no process of
    # theirs outlives it, without waiting for the interpreter's exit.
    started = pids_in(agentsh_home / "pids")
    assert len(started) == 2
    assert wait_gone(started) == []
