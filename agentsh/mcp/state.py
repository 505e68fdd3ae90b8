"""What the rest of agentsh sees of an MCP server: frozen snapshots, no SDK types.

The manager publishes a :class:`ServerStatus` per server and a :class:`RemoteTool` per tool;
front ends (``/mcp``, ``agentsh mcp``) and the tool adapter read only these, so nothing above
the MCP loop ever holds a live SDK object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from agentsh.mcp.servers_config import Scope, Transport


class ServerState(StrEnum):
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"  # did not start, or stopped unexpectedly (``reason`` says which)
    DISABLED = "disabled"  # by its config or for this session
    STOPPED = "stopped"  # agentsh closed it


@dataclass(frozen=True, slots=True)
class RemoteTool:
    """One tool as its server listed it, with the name the model calls it by."""

    server: str
    remote_name: str
    name: str  # mcp__server__tool, provider-safe (agentsh.mcp.names)
    description: str
    input_schema: Mapping[str, Any]
    read_only: bool = False  # the server's hint; shown, never trusted for approval

    def schema(self) -> dict[str, Any]:
        """The OpenAI-style function schema, the server's JSON schema passed through."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.input_schema),
            },
        }


@dataclass(frozen=True, slots=True)
class ServerStatus:
    name: str
    scope: Scope
    transport: Transport
    command: str  # ServerSpec.describe(): as configured, no secret expanded
    state: ServerState
    reason: str = ""  # why it failed or is disabled
    tools: tuple[RemoteTool, ...] = ()
    tool_problems: tuple[str, ...] = ()  # tools left out (a bad schema), one line each
    server_version: str = ""
    ready_after_s: float | None = None  # time from launch to tools listed
    restarts: int = 0
    log_path: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class McpOverview:
    """What ``/mcp`` shows: every server, what its tool definitions cost, the budget."""

    servers: tuple[ServerStatus, ...] = ()
    tokens: Mapping[str, int] = field(default_factory=dict)  # per server, its definitions
    budget: int = 0  # tokens the definitions may take before mcp_search stands in for them
    deferred: bool = False  # they do: the model is offered mcp_search
    window: int = 0  # the model's context window, for each server's share of it
    untrusted: tuple[str, ...] = ()  # the project's servers, not started: it is not trusted

    @property
    def total_tokens(self) -> int:
        return sum(self.tokens.values())
