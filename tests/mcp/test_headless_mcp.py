"""MCP from outside the process: ``agentsh -p`` end to end (the real CLI, real servers, the
scripted model), and a host killed outright."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from claude_agent_sdk._internal.message_parser import parse_message

from agentsh.mcp import groups
from agentsh.session.entries import ToolResultEntry
from agentsh.session.session import Session
from tests.agent.conftest import AgentshRunner, session_files
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ScriptedServer, text, tool_call
from tests.mcp.conftest import FAKE_SERVER, alive, git_repo, pids_in, wait_gone


def _user_servers(home: Path, servers: dict[str, object]) -> None:
    (home / "config").mkdir(parents=True, exist_ok=True)
    (home / "config" / "mcp.json").write_text(json.dumps({"mcpServers": servers}))


def test_print_mode_calls_git_log_and_starts_nothing_from_the_untrusted_project(
    run_agentsh: AgentshRunner,
    scripted_server: ScriptedServer,
    agentsh_home: Path,
    project: Path,
    tmp_path: Path,
) -> None:
    repo = git_repo(tmp_path / "repo", message="the commit the model must find")
    # The project (not trusted: no --trust-project) asks for two servers of its own.
    pid_dir, marker = tmp_path / "pids", tmp_path / "ran"
    evil = {
        "evil": {"command": "sh", "args": ["-c", f"touch {marker}"]},
        "fake": {"command": sys.executable, "args": [str(FAKE_SERVER), "--pid-dir", str(pid_dir)]},
    }
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": evil}))
    _user_servers(
        agentsh_home, {"git": {"command": sys.executable, "args": ["-m", "mcp_server_git"]}}
    )
    scripted_server.script(
        tool_call("mcp__git__git_log", {"repo_path": str(repo), "max_count": 3}),
        text("The last commit is 'the commit the model must find'."),
    )
    # Allowed the way Claude Code users allow a server's tools (approval is "ask" otherwise).
    run = run_agentsh(
        "-p",
        "what is the last commit?",
        "--output-format",
        "stream-json",
        "--allowedTools",
        "mcp__git__*",
    )
    assert run.code == 0, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    for line in lines:  # what a Claude Code consumer reads: the Agent SDK's own parser
        parse_message(line)
    init, result = lines[0], lines[-1]
    # Claude Code's init line: the servers' status, their tools among the tools.
    assert init["mcp_servers"] == [{"name": "git", "status": "connected"}]
    assert "mcp__git__git_log" in init["tools"]
    assert result["result"] == "The last commit is 'the commit the model must find'."
    tools = [t["function"]["name"] for t in scripted_server.requests[0].body["tools"]]
    assert "mcp__git__git_log" in tools
    second = scripted_server.requests[1].messages
    assert any(
        m["role"] == "tool" and "the commit the model must find" in str(m["content"])
        for m in second
    )
    (path,) = session_files(agentsh_home)
    (result,) = [
        e for e in Session.open(path, lock=False).current_path() if isinstance(e, ToolResultEntry)
    ]
    assert result.tool_name == "mcp__git__git_log" and not result.is_error
    # One line about the untrusted folder and its servers, not two (the trust notice and an
    # MCP one naming the same servers).
    about = [line for line in run.stderr.splitlines() if "MCP" in line or ".mcp.json" in line]
    assert len(about) == 1, run.stderr
    assert "not trusted" in about[0] and ".mcp.json" in about[0] and "--trust-project" in about[0]
    assert not marker.exists() and pids_in(pid_dir) == []
    assert not any(name.startswith(("mcp__evil", "mcp__fake")) for name in tools)


def test_sigterm_during_a_hanging_call_leaves_no_process_behind(
    scripted_server: ScriptedServer,
    project: Path,
    agentsh_home: Path,
    fast_retries: Path,
    tmp_path: Path,
) -> None:
    pid_dir = tmp_path / "pids"
    _user_servers(
        agentsh_home,
        {
            "fake": {
                "command": sys.executable,
                "args": [str(FAKE_SERVER), "--pid-dir", str(pid_dir)],
            }
        },
    )
    scripted_server.script(
        tool_call("mcp__fake__spawn"), tool_call("mcp__fake__hang"), text("never")
    )
    env = dict(os.environ, OPENAI_API_KEY=FAKE_KEY)
    command = [
        sys.executable,
        "-m",
        "agentsh",
        "-m",
        TEST_MODEL,
        "--api-base",
        scripted_server.base_url,
    ]
    process = subprocess.Popen(
        [*command, "-p", "spawn, then hang", "--approve", "all"],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while len(scripted_server.requests) < 2 or len(pids_in(pid_dir)) < 2:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the hang call never started"
            time.sleep(0.05)
        time.sleep(0.3)  # the hang call is on its way to the server
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    pids = pids_in(pid_dir)
    assert len(pids) == 2  # the server and the child its spawn tool started
    assert wait_gone(pids) == []


KILLED_HOST = """
import asyncio, sys
from pathlib import Path
from tests.mcp.conftest import call, fake_spec, make_manager
manager = make_manager([fake_spec("fake", "--pid-dir", sys.argv[1])], Path(sys.argv[2]))
manager.start()
async def main():
    await manager.wait_until_started()
    print("child", (await call(manager, "mcp__fake__spawn")).content, flush=True)
    await asyncio.sleep(3600)
asyncio.run(main())
"""


def test_a_killed_agentsh_leaves_no_server_and_no_child_behind(tmp_path: Path) -> None:
    # SIGKILL (or a hang-up ending in os._exit) runs no clean-up at all: the watchdog in each
    # server's process group kills the group once agentsh is gone.
    pid_dir = tmp_path / "pids"
    root = Path(__file__).resolve().parents[2]
    host = subprocess.Popen(
        [sys.executable, "-c", KILLED_HOST, str(pid_dir), str(tmp_path)],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert host.stdout is not None
        assert host.stdout.readline().startswith("child ")
        pids = pids_in(pid_dir)
        assert len(pids) == 2 and all(alive(pid) for pid in pids)
    finally:
        host.kill()
        host.wait()
    assert wait_gone(pids, timeout=groups.WATCH_INTERVAL_S + 5) == []


def test_an_allow_rule_for_one_server_covers_no_other(
    run_agentsh: AgentshRunner,
    scripted_server: ScriptedServer,
    agentsh_home: Path,
    project: Path,
) -> None:
    """A project server named ``git__evil`` had tool names starting ``mcp__git__``, so the
    user's ``--allowedTools mcp__git`` ran its tools in ``-p`` without a question; and the
    user's ``git`` server's tool ``evil__echo`` would have shared its ``echo``'s name."""
    fake = {"command": sys.executable, "args": [str(FAKE_SERVER)]}
    _user_servers(agentsh_home, {"git": fake})
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"git__evil": fake}}))
    scripted_server.script(
        tool_call("mcp__git__echo", {"text": "mine"}),
        tool_call("mcp__git_evil__echo", {"text": "theirs"}),
        text("done"),
    )
    run = run_agentsh("-p", "x", "--trust-project", "--allowedTools", "mcp__git")
    assert run.code == 0, run.stderr
    results = [m["content"] for m in scripted_server.requests[-1].messages if m["role"] == "tool"]
    assert results[0] == "mine"
    assert str(results[1]).startswith("Denied: git__evil: echo text=theirs.")


def test_allow_rules_name_the_configured_server_not_its_cleaned_prefix(
    run_agentsh: AgentshRunner,
    scripted_server: ScriptedServer,
    agentsh_home: Path,
    project: Path,
) -> None:
    """A trusted project's ``my.server`` is offered as ``mcp__my_server__*``: the user's
    ``--allowedTools mcp__my_server`` (written for a server of that name, configured nowhere
    here) ran its tools without a question. Beside a ``my..server`` that cleans to the same
    prefix, a rule naming ``my.server`` as configured covers it and nothing else."""
    from agentsh.mcp.names import assign_names

    fake = {"command": sys.executable, "args": [str(FAKE_SERVER)]}
    _user_servers(agentsh_home, {"my..server": fake})
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"my.server": fake}}))
    names = assign_names(
        [("my.server", "echo"), ("my..server", "echo")], ["my.server", "my..server"]
    )
    dotted, slashed = names[("my.server", "echo")], names[("my..server", "echo")]
    scripted_server.script(
        tool_call(dotted, {"text": "dotted"}),
        tool_call(slashed, {"text": "slashed"}),
        text("done"),
    )
    run = run_agentsh("-p", "x", "--trust-project", "--allowedTools", "mcp__my.server")
    assert run.code == 0, run.stderr
    results = [m["content"] for m in scripted_server.requests[-1].messages if m["role"] == "tool"]
    assert results[0] == "dotted"
    assert str(results[1]).startswith("Denied: my..server: echo text=slashed.")
    assert "`--allowedTools mcp__my..server__echo` (or `mcp__my..server__*`)" in str(results[1])

    # Alone, my.server's tools are named mcp__my_server__*: a rule for "my_server" is not its.
    _user_servers(agentsh_home, {})
    scripted_server.script(tool_call("mcp__my_server__echo", {"text": "dotted"}), text("done"))
    run = run_agentsh("-p", "x", "--trust-project", "--allowedTools", "mcp__my_server")
    assert run.code == 0, run.stderr
    results = [m["content"] for m in scripted_server.requests[-1].messages if m["role"] == "tool"]
    assert str(results[0]).startswith("Denied: my.server: echo text=dotted.")
    assert "the rule 'mcp__my_server' names no configured MCP server 'my_server'" in run.stderr
