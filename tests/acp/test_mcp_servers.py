"""The MCP servers an editor passes, as agentsh takes them (before any is started)."""

from __future__ import annotations

from acp.schema import HttpMcpServer, McpServerStdio

from agentsh.acp.mcp_servers import MAX_SERVERS, client_servers


def _stdio(name: str, command: str = "server") -> McpServerStdio:
    return McpServerStdio(name=name, command=command, args=[], env=[])


def test_a_name_given_twice_starts_the_first_and_says_so() -> None:
    # Both were kept: the manager then started the last one under the name, silently.
    specs, problems = client_servers([_stdio("git", "first"), _stdio("git", "second")])
    assert [(s.name, s.command) for s in specs] == [("git", "first")]
    assert problems == ["the editor's MCP server 'git' is given twice; the first is used"]


def test_a_flood_of_servers_is_cut() -> None:
    # Each one may be a process started on the user's machine.
    given: list[McpServerStdio | HttpMcpServer] = [_stdio(f"s{n}") for n in range(MAX_SERVERS + 50)]
    given.append(HttpMcpServer(name="late", url="http://127.0.0.1:1/mcp", headers=[], type="http"))
    specs, problems = client_servers(given)
    assert len(specs) == MAX_SERVERS
    assert problems == [
        f"the editor passed more than {MAX_SERVERS} MCP servers; 's{MAX_SERVERS}' and those "
        "after it are not started"
    ]
