"""MCP tool definitions' share of the context: what three real servers' tools cost the model.

Builds the real agent (as the TUI and ``-p`` do) in a temp project three times, in one run:
with no MCP server (the baseline: system prompt and built-in tools), with three stdio servers
(the fake test server, ``mcp-server-time`` and ``mcp-server-git``), and with the same three
and ``mcp.tool_budget`` set below their cost, so ``mcp_search`` stands in for them. For each it
prints the context used before the first message, the MCP definitions' tokens and their share
of the window, as the status bar and ``/mcp`` count them. Token counts do not depend on the
machine's load, so one run is enough.

    .venv/bin/python benchmarks/bench_mcp_definitions.py

The last line is ``mcp_definitions_share: <percent of the window> %`` (three servers, offered
in full).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from benchlib import ROOT, git_project

from tests.fakes.server import ScriptedServer

FAKE = ROOT / "tests" / "fakes" / "mcp_server.py"
SERVERS = {
    "fake": {"command": sys.executable, "args": [str(FAKE)]},
    "time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]},
    "git": {"command": sys.executable, "args": ["-m", "mcp_server_git"]},
}


def measure(
    base: Path, name: str, servers: Mapping[str, object], toml: str, api_base: str
) -> float:
    """Print one configuration's figures; return the MCP definitions' share of the window."""
    from agentsh.agent_assembly import build_agent
    from agentsh.config import ApprovalMode, load_environment
    from agentsh.session.session import Session

    home = base / name
    (home / "config").mkdir(parents=True)
    if servers:
        (home / "config" / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    (home / "config" / "config.toml").write_text(f"[mcp]\nstartup_timeout_s = 120\n{toml}")
    os.environ["AGENTSH_HOME"] = str(home)
    project = base / "project"
    env = load_environment(project)
    session = Session.create(env.user.project_sessions_dir(project), project)
    agent = build_agent(
        env,
        session,
        model="openai/gpt-4o",
        api_base=api_base,
        approval=ApprovalMode.ALL,
        cwd=project,
    )
    try:
        agent.settle_mcp(180)
        status = agent.tools_changed()
        overview = agent.mcp_overview()
        ready = [s.name for s in overview.servers if s.state.value == "ready"]
        if sorted(ready) != sorted(servers):
            raise SystemExit(f"not every server started: {ready}")
        tools = sum(len(s.tools) for s in overview.servers)
        share = 100 * status.mcp_tools / status.window
        offered = "mcp_search" if overview.deferred else f"{tools} tools"
        print(
            f"{name:<14} context before the first message {status.used:>6} tokens   "
            f"MCP definitions {status.mcp_tools:>5} tokens ({share:.2f}% of {status.window}, "
            f"{offered})"
        )
        return share
    finally:
        agent.close()


def main() -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ["AGENTSH_NO_OLLAMA_PROBE"] = "1"
    os.environ["OPENAI_API_KEY"] = "sk-bench"
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer() as model:
        base = Path(tmp)
        git_project(base / "project")
        os.chdir(base / "project")
        measure(base, "none", {}, "", model.base_url)
        share = measure(base, "three", SERVERS, "", model.base_url)
        measure(base, "three-deferred", SERVERS, "tool_budget = 0.001\n", model.base_url)
    print(f"mcp_definitions_share: {share:.2f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
