"""The MCP servers an editor passes with ``session/new`` and ``session/load``.

Editors hand every agent the user's MCP servers, so each agent need not be configured apart.
agentsh starts them through its own MCP client (:mod:`agentsh.mcp`), beside the servers of its
configuration (one the editor passes wins a name clash). Each entry is read by
:func:`agentsh.mcp.servers_config.spec_from_acp` (values taken literally, names and URLs
checked); a bad one is a line of warning in the thread, not a failed session.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentsh.mcp.servers_config import ServerSpec, spec_from_acp

#: at most this many of the editor's servers are started (each may be a process)
MAX_SERVERS = 64


def client_servers(servers: Sequence[Any]) -> tuple[list[ServerSpec], list[str]]:
    """The editor's ``servers`` (the ``acp`` package's models) as agentsh server specs, and a
    problem for each one agentsh cannot take: malformed, a name given twice (the first one
    is used), or past :data:`MAX_SERVERS`."""
    specs: dict[str, ServerSpec] = {}
    problems: list[str] = []
    for server in servers:
        entry = server.model_dump() if hasattr(server, "model_dump") else server
        try:
            spec = spec_from_acp(entry)
        except (ValueError, TypeError, AttributeError) as exc:
            problems.append(f"the editor's {exc}; not started")
            continue
        if spec.name in specs:
            problems.append(
                f"the editor's MCP server {spec.name!r} is given twice; the first is used"
            )
        elif len(specs) == MAX_SERVERS:
            problems.append(
                f"the editor passed more than {MAX_SERVERS} MCP servers; {spec.name!r} and "
                "those after it are not started"
            )
            break
        else:
            specs[spec.name] = spec
    return list(specs.values()), problems
