"""The tools each MCP server listed last, kept so a command can count them without starting it.

``agentsh context`` shows where a session's tokens go, and MCP tool definitions are part of
that; starting every server for a read-only command would be slow and would run programs for
nothing. So each time a server is ready, the manager records its tool list in the cache dir,
with the command line it was started with (as configured); :class:`CachedTools` serves those
lists for the servers configured now, when the command line still matches.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentsh.fsutil import atomic_write
from agentsh.mcp.names import assign_names
from agentsh.mcp.servers_config import ServerSpec
from agentsh.mcp.state import RemoteTool, ServerStatus
from agentsh.tools.base import ToolResult

_FORMAT = 1
_MAX_BYTES = 8 * 1024 * 1024


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            data = json.loads(handle.read(_MAX_BYTES))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        return {}
    servers = data.get("servers")
    return servers if isinstance(servers, dict) else {}


def record(path: Path, status: ServerStatus) -> None:
    """Keep ``status``'s tool list (a ready server's) in the cache file; never raises."""
    servers = _read(path)
    servers[status.name] = {
        "command": status.command,
        "tools": [
            {
                "name": tool.remote_name,
                "description": tool.description,
                "input_schema": dict(tool.input_schema),
                "read_only": tool.read_only,
            }
            for tool in status.tools
        ],
    }
    data = json.dumps({"format": _FORMAT, "servers": servers}, ensure_ascii=False)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data.encode("utf-8"), mode=0o600)


class CachedTools:
    """The last known tools of ``specs`` (a tool provider for counting, not for calling)."""

    def __init__(self, specs: Sequence[ServerSpec], path: Path) -> None:
        self._specs = {spec.name: spec for spec in specs if spec.enabled}
        cached = _read(path)
        listed: list[RemoteTool] = []
        for name, spec in self._specs.items():
            entry = cached.get(name)
            if not isinstance(entry, Mapping) or entry.get("command") != spec.describe():
                continue
            for tool in entry.get("tools", []):
                with contextlib.suppress(KeyError, TypeError, ValueError):
                    listed.append(
                        RemoteTool(
                            server=name,
                            remote_name=str(tool["name"]),
                            name="",
                            description=str(tool.get("description", "")),
                            input_schema=dict(tool["input_schema"]),
                            read_only=bool(tool.get("read_only", False)),
                        )
                    )
        names = assign_names(((t.server, t.remote_name) for t in listed), self._specs)
        self._tools = tuple(
            sorted(
                (_named(t, names[(t.server, t.remote_name)]) for t in listed),
                key=lambda t: t.name,
            )
        )
        self._by_name = {t.name: t for t in self._tools}

    @property
    def known(self) -> tuple[str, ...]:
        """The servers whose tools are known."""
        return tuple(sorted({t.server for t in self._tools}))

    def tools(self) -> tuple[RemoteTool, ...]:
        return self._tools

    def find(self, name: str) -> RemoteTool | None:
        return self._by_name.get(name)

    def spec(self, server: str) -> ServerSpec | None:
        return self._specs.get(server)

    def statuses(self) -> tuple[ServerStatus, ...]:
        return ()

    async def call(
        self,
        tool: RemoteTool,
        arguments: Mapping[str, Any],
        cancelled: Any,
        on_progress: Any = None,
    ) -> ToolResult:
        return ToolResult(f"MCP server '{tool.server}' is not running here.", is_error=True)


def _named(tool: RemoteTool, name: str) -> RemoteTool:
    from dataclasses import replace

    return replace(tool, name=name)
