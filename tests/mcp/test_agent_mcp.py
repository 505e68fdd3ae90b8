"""MCP tools inside the agent: ordinary tool calls in the log, approvals, secrets, the budget,
and a project's servers that do not start unless the project is trusted."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentsh import trust
from agentsh.agent import Agent
from agentsh.agent_assembly import build_agent
from agentsh.cli import main
from agentsh.config import ApprovalMode, load_environment
from agentsh.events import (
    ApprovalDecision,
    ApprovalRequest,
    Event,
    Notice,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnOutcome,
)
from agentsh.mcp.servers_config import spec_from_acp
from agentsh.mcp.state import ServerState
from agentsh.paths import UserPaths
from agentsh.session.entries import ToolResultEntry
from agentsh.session.session import Session
from agentsh.tools.rules import ToolRules
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ScriptedServer, text, tool_call
from tests.mcp.conftest import FAKE_SERVER, STARTUP_TIMEOUT_S, pids_in

pytestmark = pytest.mark.asyncio

SECRET = "s3cret-token-0123456789"

AgentFactory = Callable[..., Agent]


def fake_entry(*extra: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    import sys

    entry: dict[str, Any] = {"command": sys.executable, "args": [str(FAKE_SERVER), *extra]}
    if env:
        entry["env"] = env
    return entry


def write_user_servers(home: Path, servers: dict[str, Any], toml: str = "") -> None:
    config = home / "config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    if toml:
        (config / "config.toml").write_text(toml)


@pytest.fixture
def make_agent(
    scripted_server: ScriptedServer, project: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[AgentFactory]:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    created: list[Agent] = []

    def factory(
        approval: ApprovalMode = ApprovalMode.ALL, interactive: bool = True, **extra: Any
    ) -> Agent:
        env = load_environment(project)
        fast = dataclasses.replace(env.settings.model, retry_base_delay_s=0.01)
        mcp = dataclasses.replace(env.settings.mcp, startup_timeout_s=STARTUP_TIMEOUT_S)
        settings = dataclasses.replace(env.settings, model=fast, mcp=mcp)
        env = dataclasses.replace(env, config=dataclasses.replace(env.config, settings=settings))
        session = Session.create(env.user.project_sessions_dir(project), project)
        agent = build_agent(
            env,
            session,
            model=TEST_MODEL,
            api_base=scripted_server.base_url,
            approval=approval,
            interactive=interactive,
            cwd=project,
            **extra,
        )
        created.append(agent)
        return agent

    yield factory
    for agent in created:
        agent.close()


async def collect(events: AsyncIterator[Event]) -> list[Event]:
    return [event async for event in events]


def tool_names(request_body: Any) -> list[str]:
    return [t["function"]["name"] for t in request_body.get("tools", [])]


async def test_an_mcp_call_is_an_ordinary_tool_call_with_secrets_redacted(
    make_agent: AgentFactory,
    scripted_server: ScriptedServer,
    agentsh_home: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_user_servers(agentsh_home, {"fake": fake_entry(env={"API_TOKEN": SECRET})})
    scripted_server.script(
        tool_call("mcp__fake__echo", {"text": "hello"}),
        tool_call("mcp__fake__env_value", {"name": "API_TOKEN"}),
        tool_call("mcp__fake__echo", {"text": 5}),
        text("done"),
    )
    agent = make_agent(rules=ToolRules.parse(deny=["mcp__fake__crash"]))
    events = await collect(agent.run("use the fake server"))
    assert isinstance(events[-1], TurnEnded) and events[-1].text == "done"
    offered = tool_names(scripted_server.requests[0].body)
    assert "mcp__fake__echo" in offered
    assert "mcp__fake__crash" not in offered  # a bare deny rule takes a tool away
    results = [e for e in agent.session.current_path() if isinstance(e, ToolResultEntry)]
    assert [(r.tool_name, r.is_error) for r in results] == [
        ("mcp__fake__echo", False),
        ("mcp__fake__env_value", False),
        ("mcp__fake__echo", True),
    ]
    assert results[0].content == "hello"
    # The server was given the token; what it echoed never reaches the log or the model.
    assert results[1].content == "[redacted]"
    assert SECRET not in agent.session.path.read_text() if agent.session.path else True
    assert SECRET not in json.dumps([r.body for r in scripted_server.requests])
    # Arguments are checked against the server's schema before the call.
    assert (
        results[2].content
        == "Invalid arguments for mcp__fake__echo: text: 5 is not of type 'string'"
    )
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [f.name for f in finished] == [r.tool_name for r in results]
    # The definitions count in the context, apart in the status and in `agentsh context`,
    # which reads the tool lists kept in the cache instead of starting the server.
    status = agent.status()
    assert 0 < status.mcp_tools < status.used
    assert "fake" in json.loads((agentsh_home / "cache" / "mcp-tools.json").read_text())["servers"]
    assert main(["context", agent.session.id, "--json"]) == 0
    breakdown = json.loads(capsys.readouterr().out)
    assert 0.8 < breakdown["mcp_tools"] / status.mcp_tools < 1.25
    assert breakdown["tools"] > breakdown["mcp_tools"]
    # Esc during a hanging MCP call: the call is cancelled on the server, the turn ends.
    scripted_server.script(tool_call("mcp__fake__hang", {"seconds": 60}), text("never sent"))
    started = time.monotonic()
    ended: list[TurnEnded] = []
    async for event in agent.run("hang"):
        if isinstance(event, ToolStarted):
            asyncio.get_running_loop().call_later(0.2, agent.cancel)
        if isinstance(event, TurnEnded):
            ended.append(event)
    assert ended[0].outcome is TurnOutcome.ABORTED and time.monotonic() - started < 15
    last = [e for e in agent.session.current_path() if isinstance(e, ToolResultEntry)][-1]
    assert last.is_error and last.content.startswith("Cancelled by the user")


async def test_without_approval_a_headless_mcp_call_is_denied(
    make_agent: AgentFactory, scripted_server: ScriptedServer, agentsh_home: Path
) -> None:
    write_user_servers(agentsh_home, {"fake": fake_entry()})
    scripted_server.script(tool_call("mcp__fake__echo", {"text": "x"}), text("ok"))
    agent = make_agent(ApprovalMode.ASK, interactive=False)
    await collect(agent.run("try"))
    (result,) = [e for e in agent.session.current_path() if isinstance(e, ToolResultEntry)]
    assert result.is_error and result.content.startswith("Denied: fake: echo text=x.")


async def test_a_call_to_a_server_that_did_not_start_says_so(
    make_agent: AgentFactory, scripted_server: ScriptedServer, agentsh_home: Path
) -> None:
    # Its tools were never listed: the model heard only "Unknown tool", and could not tell
    # the user that the server is down, nor why.
    write_user_servers(agentsh_home, {"ghost": {"command": "no-such-cmd-xyz"}})
    scripted_server.script(tool_call("mcp__ghost__lookup", {"q": "x"}), text("ok"))
    agent = make_agent()
    agent.settle_mcp(30)
    await collect(agent.run("look it up"))
    (result,) = [e for e in agent.session.current_path() if isinstance(e, ToolResultEntry)]
    assert result.is_error and result.content == (
        "mcp__ghost__lookup cannot be called: MCP server 'ghost' is down (cannot run "
        "'no-such-cmd-xyz': command not found), so its tools are not available now. It is "
        "being started again in the background; do not retry the call in this reply, tell "
        "the user."
    )
    # Started again, as a crashed server is at its next call (here it fails once more).
    assert agent.mcp is not None
    deadline = time.monotonic() + 10
    while (status := agent.mcp.status("ghost")) is None or status.restarts < 1:
        assert time.monotonic() < deadline, "the failed server was not started again"
        await asyncio.sleep(0.05)


async def test_allow_for_the_session_covers_that_tool_from_then_on(
    make_agent: AgentFactory, scripted_server: ScriptedServer, agentsh_home: Path
) -> None:
    write_user_servers(agentsh_home, {"fake": fake_entry()})
    scripted_server.script(
        tool_call("mcp__fake__echo", {"text": "one"}),
        tool_call("mcp__fake__echo", {"text": "two"}),
        text("ok"),
    )
    agent = make_agent(ApprovalMode.ASK)
    asked: list[ApprovalRequest] = []
    async for event in agent.run("echo twice"):
        if isinstance(event, ApprovalRequest):
            asked.append(event)
            assert "MCP server 'fake'" in event.detail and '"text": "one"' in event.detail
            event.decision.set_result(ApprovalDecision.ALLOW_SESSION)
    assert len(asked) == 1
    contents = [e.content for e in agent.session.current_path() if isinstance(e, ToolResultEntry)]
    assert contents == ["one", "two"]
    # /mcp: what each server costs; disabled for the session, its tools leave; enabled, back.
    overview = agent.mcp_overview()
    assert [(s.name, s.state) for s in overview.servers] == [("fake", ServerState.READY)]
    assert overview.tokens["fake"] > 0 and not overview.deferred
    changed = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_change() -> None:
        loop.call_soon_threadsafe(changed.set)

    agent.watch_mcp(on_change)
    for enabled, state in ((False, ServerState.DISABLED), (True, ServerState.READY)):
        agent.set_mcp_server("fake", enabled=enabled)
        while agent.mcp_overview().servers[0].state is not state:
            changed.clear()
            await asyncio.wait_for(changed.wait(), 30)
        assert (agent.tools_changed().mcp_tools > 0) is enabled


async def test_a_trusted_projects_tools_over_the_budget_wait_behind_mcp_search(
    make_agent: AgentFactory, scripted_server: ScriptedServer, agentsh_home: Path, project: Path
) -> None:
    write_user_servers(agentsh_home, {}, toml="[mcp]\ntool_budget = 0.0001\n")
    # The server is the project's, and the user trusted the project as it is.
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"fake": fake_entry()}}))
    trust.grant(UserPaths.from_env(), trust.check_project(UserPaths.from_env(), project))
    scripted_server.script(
        tool_call("mcp_search", {"query": "echo text back"}),
        tool_call("mcp__fake__echo", {"text": "found it"}),
        text("ok"),
    )
    agent = make_agent()
    await collect(agent.run("find an echo tool"))
    first = tool_names(scripted_server.requests[0].body)
    assert "mcp_search" in first and not any(n.startswith("mcp__") for n in first)
    search = next(
        t
        for t in scripted_server.requests[0].body["tools"]
        if t["function"]["name"] == "mcp_search"
    )
    assert "mcp__fake__echo" in search["function"]["description"]
    second = tool_names(scripted_server.requests[1].body)
    assert "mcp__fake__echo" in second and "mcp__fake__crash" not in second
    results = [e for e in agent.session.current_path() if isinstance(e, ToolResultEntry)]
    assert "## mcp__fake__echo" in results[0].content and '"text"' in results[0].content
    assert results[1].content == "found it"


async def test_an_untrusted_projects_mcp_json_starts_nothing_an_acp_clients_servers_do(
    make_agent: AgentFactory, scripted_server: ScriptedServer, project: Path, tmp_path: Path
) -> None:
    pid_dir = tmp_path / "pids"
    (project / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"evil": fake_entry("--pid-dir", str(pid_dir))}})
    )
    scripted_server.script(
        tool_call("mcp__evil__echo", {"text": "x"}),
        tool_call("mcp__editor__echo", {"text": "from the client"}),
        text("ok"),
    )
    # What an ACP server does with session/new's mcpServers (issue 20).
    client_server = spec_from_acp({"name": "editor", **fake_entry(), "env": []})
    agent = make_agent(mcp_servers=[client_server])
    events = await collect(agent.run("hi"))
    notices = [e.text for e in events if isinstance(e, Notice)]
    # The front end's line about the untrusted folder names .mcp.json (its trust check lists
    # the file); the agent does not say it a second time.
    assert ".mcp.json" in agent.env.trust.notice()
    assert not any("were not started" in n for n in notices)
    assert agent.mcp is not None and agent.mcp.names == ("editor",)
    evil, editor = [e for e in agent.session.current_path() if isinstance(e, ToolResultEntry)]
    assert evil.is_error and evil.content.startswith("Unknown tool 'mcp__evil__echo'")
    assert (editor.content, editor.is_error) == ("from the client", False)
    assert pids_in(pid_dir) == []
    # /mcp says where the project's server went, rather than nothing at all.
    assert agent.mcp_overview().untrusted == ("evil",)
