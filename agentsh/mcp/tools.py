"""MCP tools as agent tools, and ``mcp_search`` for when there are too many to send.

Each MCP tool becomes a :class:`McpTool`: its schema is the server's, its arguments are checked
against that schema, and its effect is "execute": what a server's tool does is unknown (its
read-only hint is the server's word, not a guarantee), so it asks for approval like ``bash``
and checkpoints and compaction treat it the same way.

The tool definitions cost tokens on every request. :class:`McpToolSource` offers them all
while they take at most ``mcp.tool_budget`` of the window (10 %); above that it offers one
``mcp_search`` tool instead, whose description names the servers and tools, and which returns
the schemas of the tools the model asks for and offers those from the next request on. A tool
found this way can be called at once by name: every MCP tool is callable, offered or not.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from agentsh.config import Settings
from agentsh.context.breakdown import CountedTool
from agentsh.events import ToolOutput
from agentsh.mcp.mcp_manager import tools_json
from agentsh.mcp.schema import argument_problem
from agentsh.mcp.servers_config import ServerSpec
from agentsh.mcp.state import McpOverview, RemoteTool, ServerStatus
from agentsh.tools.base import (
    Effect,
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolResult,
    param,
)

SEARCH_TOOL = "mcp_search"
DEFAULT_MATCHES = 5
MAX_MATCHES = 20
_SUMMARY_CHARS = 100
_LISTED_NAMES_CHARS = 3000  # mcp_search's description names the tools up to this length


class ToolProvider(Protocol):
    """Where MCP tools come from: the live servers (:class:`~agentsh.mcp.mcp_manager.McpManager`),
    or their last listing (:class:`~agentsh.mcp.cache.CachedTools`, for counting)."""

    def tools(self) -> tuple[RemoteTool, ...]: ...

    def find(self, name: str) -> RemoteTool | None: ...

    def spec(self, server: str) -> ServerSpec | None: ...

    def statuses(self) -> tuple[ServerStatus, ...]: ...

    async def call(
        self,
        tool: RemoteTool,
        arguments: Mapping[str, Any],
        cancelled: asyncio.Event,
        on_progress: Callable[[str], None] | None = None,
    ) -> ToolResult: ...


class McpTool(Tool):
    """One tool of one MCP server. A subclass is made per tool (:func:`make_tool`), since a
    tool's name and description are class attributes of :class:`Tool`."""

    Params: ClassVar[type[Any]] = dict

    def __init__(self, manager: ToolProvider, remote: RemoteTool) -> None:
        self.manager = manager
        self.remote = remote

    def schema(self) -> dict[str, Any]:
        return self.remote.schema()

    def parse(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(arguments, Mapping):
            raise ToolArgumentError("arguments must be a JSON object")
        problem = argument_problem(self.remote.input_schema, arguments)
        if problem:
            raise ToolArgumentError(problem)
        return dict(arguments)

    def effect(self, params: Any, ctx: ToolContext) -> Effect:
        return Effect.EXECUTE

    def summary(self, params: Any) -> str:
        shown = " ".join(
            f"{key}={_short(value)}" for key, value in (params or {}).items() if value is not None
        )
        line = f"{self.remote.server}: {self.remote.remote_name} {shown}".rstrip()
        return line if len(line) <= _SUMMARY_CHARS else line[: _SUMMARY_CHARS - 1] + "…"

    def approval_group(self) -> tuple[str, str]:
        server = self.remote.server  # the configured name: no other server can share it
        return f"mcp-server:{server}", f"every tool of MCP server '{server}'"

    def mcp_identity(self) -> tuple[str, str]:
        return self.remote.server, self.remote.remote_name

    async def approval_detail(self, params: Any, ctx: ToolContext) -> str:
        spec = self.manager.spec(self.remote.server)
        where = f" ({spec.describe()})" if spec is not None else ""
        about = self.remote.description.splitlines()[0] if self.remote.description else ""
        hint = " (the server says it only reads)" if self.remote.read_only else ""
        return (
            f"MCP server '{self.remote.server}'{where}\n"
            f"tool {self.remote.remote_name}{hint}: {about}\n"
            f"arguments:\n{json.dumps(params, indent=2, ensure_ascii=False)}"
        )

    async def run(self, params: Any, ctx: ToolContext) -> ToolResult:
        def progress(line: str) -> None:  # shown as a command's output is, not to the model
            ctx.emit(ToolOutput(ctx.call_id, line))

        return await self.manager.call(self.remote, params, ctx.cancelled, progress)


def make_tool(manager: ToolProvider, remote: RemoteTool) -> McpTool:
    cls = type(
        f"McpTool_{remote.name}",
        (McpTool,),
        {"name": remote.name, "description": remote.description},
    )
    tool: McpTool = cls(manager, remote)
    return tool


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:39] + "…"


@dataclass(frozen=True, slots=True)
class McpSearchParams:
    query: str = param(
        "Words to look for in MCP tool names and descriptions, or exact tool names "
        "(comma-separated) to load."
    )
    limit: int | None = param(
        f"How many tools to return (default {DEFAULT_MATCHES}).", None, minimum=1, maximum=20
    )


class McpSearchTool(Tool):
    name: ClassVar[str] = SEARCH_TOOL
    description: ClassVar[str] = (
        "Find tools from the connected MCP servers and load them: returns each matching "
        "tool's name, description and parameters, and makes it callable from now on."
    )
    Params: ClassVar[type[Any]] = McpSearchParams

    def __init__(self, source: McpToolSource) -> None:
        self.source = source

    def schema(self) -> dict[str, Any]:
        schema = super().schema()
        schema["function"]["description"] = f"{self.description} {self.source.catalog()}"
        return schema

    def summary(self, params: McpSearchParams) -> str:
        return f"mcp_search: {params.query}"

    async def run(self, params: McpSearchParams, ctx: ToolContext) -> ToolResult:
        limit = min(MAX_MATCHES, params.limit or DEFAULT_MATCHES)
        found = self.source.search(params.query, limit)
        if not found:
            return ToolResult(
                f"No MCP tool matches {params.query!r}. {self.source.catalog()}", is_error=True
            )
        self.source.load(tool.name for tool in found)
        parts = [
            f"{len(found)} MCP tool{'s' if len(found) != 1 else ''} loaded; call them by name:"
        ]
        for tool in found:
            parameters = json.dumps(tool.input_schema, ensure_ascii=False, separators=(",", ":"))
            parts.append(f"\n## {tool.name}\n{tool.description}\nparameters: {parameters}")
        return ToolResult("\n".join(parts))


class McpToolSource:
    """The MCP tools offered to the model, within the context budget (see the module doc)."""

    def __init__(
        self,
        manager: ToolProvider,
        settings: Settings,
        window: Callable[[], int],
        count: Callable[[str], int] | None = None,
        hidden: Callable[[Mapping[str, tuple[str, str]]], set[str]] | None = None,
        terse: Callable[[], bool] = lambda: False,
    ) -> None:
        self.manager = manager
        self.settings = settings
        self._window = window
        self._count = count
        self._hidden = hidden
        # Whether the registry sends terse definitions (a small window): the budget is weighed
        # on what would be sent, not on the servers' full-size schemas.
        self._terse = terse
        self._visible_of: tuple[tuple[RemoteTool, ...], tuple[RemoteTool, ...]] = ((), ())
        self._loaded: set[str] = set()
        self._made: dict[str, McpTool] = {}
        self._search = McpSearchTool(self)
        self._cost_of: tuple[tuple[RemoteTool, ...], bool, int] = ((), False, 0)
        self._by_server_of: tuple[tuple[RemoteTool, ...], bool, dict[str, int]] = ((), False, {})

    # -- what is offered -----------------------------------------------------------------------

    def tools(self) -> tuple[RemoteTool, ...]:
        """The servers' tools less those a deny rule takes away (computed once per list)."""
        tools = self.manager.tools()
        if self._visible_of[0] is not tools:
            identities = {t.name: (t.server, t.remote_name) for t in tools}
            hidden = self._hidden(identities) if self._hidden and tools else set()
            self._visible_of = (tools, tuple(t for t in tools if t.name not in hidden))
        return self._visible_of[1]

    def definition_tokens(self) -> int:
        """Tokens of every MCP tool definition as it would be sent (counted once per tool
        list and form)."""
        tools, terse = self.tools(), self._terse()
        if self._cost_of[0] is not tools or self._cost_of[1] is not terse:
            self._cost_of = (tools, terse, self._tokens(tools_json(tools, terse=terse)))
        return self._cost_of[2]

    def tokens_by_server(self) -> dict[str, int]:
        """Each server's share of the definitions (counted once per tool list and form)."""
        tools, terse = self.tools(), self._terse()
        if self._by_server_of[0] is not tools or self._by_server_of[1] is not terse:
            servers = sorted({t.server for t in tools})
            counts = {
                name: self._tokens(tools_json([t for t in tools if t.server == name], terse=terse))
                for name in servers
            }
            self._by_server_of = (tools, terse, counts)
        return dict(self._by_server_of[2])

    def counted(self) -> tuple[CountedTool, ...]:
        """Each tool's definition as it would be sent, with its tokens and whether it is sent
        now (over budget, only those ``mcp_search`` loaded are)."""
        tools, terse = self.tools(), self._terse()
        deferred = self.deferred()
        return tuple(
            CountedTool(
                tool.name,
                tool.server,
                self._tokens(tools_json([tool], terse=terse)),
                loaded=not deferred or tool.name in self._loaded,
            )
            for tool in tools
        )

    def _tokens(self, text: str) -> int:
        if not text:
            return 0
        if self._count is not None:
            return self._count(text)
        return int(len(text) / self.settings.context.chars_per_token)

    def overview(self) -> McpOverview:
        return McpOverview(
            servers=self.manager.statuses(),
            tokens=self.tokens_by_server(),
            budget=self.budget_tokens(),
            deferred=self.deferred(),
            window=self._window(),
        )

    def budget_tokens(self) -> int:
        return int(self.settings.mcp.tool_budget * self._window())

    def deferred(self) -> bool:
        """Whether the definitions are over budget, so ``mcp_search`` stands in for them."""
        return bool(self.tools()) and self.definition_tokens() > self.budget_tokens()

    def offered(self) -> Sequence[Tool]:
        tools = self.tools()
        if not tools:
            return []
        if self.deferred():
            return [self._search, *(self._tool(t) for t in tools if t.name in self._loaded)]
        return [self._tool(t) for t in tools]

    def find(self, name: str) -> Tool | None:
        if name == SEARCH_TOOL:
            return self._search if self.tools() else None
        remote = self.manager.find(name)
        if remote is None or remote not in self.tools():
            return None
        return self._tool(remote)

    def _tool(self, remote: RemoteTool) -> McpTool:
        tool = self._made.get(remote.name)
        if tool is None or tool.remote != remote:
            tool = self._made[remote.name] = make_tool(self.manager, remote)
        return tool

    # -- mcp_search ----------------------------------------------------------------------------

    def catalog(self) -> str:
        """The servers and tool names, for ``mcp_search``'s description (shortened if long)."""
        by_server: dict[str, list[str]] = {}
        for tool in self.tools():
            by_server.setdefault(tool.server, []).append(tool.name)
        listed = "; ".join(f"{server}: {', '.join(names)}" for server, names in by_server.items())
        if len(listed) > _LISTED_NAMES_CHARS:
            listed = "; ".join(f"{server} ({len(n)} tools)" for server, n in by_server.items())
        return f"Available: {listed}." if listed else "No MCP tool is available now."

    def search(self, query: str, limit: int) -> list[RemoteTool]:
        tools = self.tools()
        wanted = {part.strip() for part in re.split(r"[,\s]+", query) if part.strip()}
        exact = [t for t in tools if t.name in wanted or t.remote_name in wanted]
        if exact:
            return exact[:limit]
        words = [w.lower() for w in re.findall(r"[A-Za-z0-9]+", query)]
        scored: list[tuple[int, str, RemoteTool]] = []
        for tool in tools:
            name, text = tool.name.lower(), tool.description.lower()
            score = sum(3 * (word in name) + (word in text) for word in words)
            if score:
                scored.append((-score, tool.name, tool))
        return [tool for _score, _name, tool in sorted(scored)[:limit]]

    def load(self, names: Any) -> None:
        self._loaded.update(names)
