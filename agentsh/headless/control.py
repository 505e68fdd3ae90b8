"""The control requests a program driving ``agentsh -p --input-format stream-json`` sends
(Claude Code's control protocol, as the Claude Agent SDK's ``ClaudeSDKClient`` speaks it).

``initialize`` succeeds; ``interrupt`` stops the running turn as Ctrl+C does;
``set_permission_mode`` switches the approval mode (not to ``bypassPermissions`` when
``--settings`` disabled it); ``set_model`` switches the model (from the
next turn when one is running; none: back to the model the run started with); ``mcp_status``
lists the MCP servers with their state and tools, ``mcp_toggle`` / ``mcp_reconnect`` disable,
enable or restart one; ``get_context_usage`` answers where the context's tokens go, in Claude
Code's categories (system prompt, system tools, MCP tools, memory files, messages, the buffer
automatic compaction keeps, free space), with each AGENTS.md (those below the working folder
loaded on a touch too, while the context holds them) and memory file, each MCP tool,
and agentsh's own breakdown (``agentsh context --json``'s fields) under ``agentsh``. Any other
request is refused by name, so the host's call raises rather than waiting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentsh.headless.stream_input import ControlRequest, control_response
from agentsh.tools.approval import PERMISSION_MODES

if TYPE_CHECKING:
    from agentsh.context.breakdown import ContextUsage, CountedFile
    from agentsh.frontend import HeadlessAPI
    from agentsh.mcp.state import ServerStatus

# agentsh's MCP server states in Claude Code's words
MCP_STATUS = {"ready": "connected", "starting": "pending", "stopped": "disabled"}


class Controls:
    """Answers control requests for one run; ``first_model`` is what ``set_model`` with no
    model goes back to."""

    def __init__(
        self,
        agent: HeadlessAPI,
        interrupt: Callable[[], None] | None = None,
        *,
        bypass_allowed: bool = True,
    ) -> None:
        self.agent = agent
        self.bypass_allowed = bypass_allowed  # False: --settings disabled bypassPermissions
        self.interrupt = interrupt or agent.cancel  # stops the running turn
        self.first_model = agent.model
        self._next_model: str | None = None  # asked for while a turn ran: from the next one

    def before_turn(self) -> None:
        """A model asked for during the last turn takes over now."""
        model, self._next_model = self._next_model, None
        if model is not None and model != self.agent.model:
            self.agent.set_model(model)

    def answer(self, request: ControlRequest) -> dict[str, Any]:
        agent, body = self.agent, request.body
        match request.subtype:
            case "initialize":
                return control_response(request)
            case "interrupt":
                self.interrupt()
                return control_response(request)
            case "set_permission_mode":  # ClaudeSDKClient.set_permission_mode
                mode = str(body.get("mode"))
                if mode not in PERMISSION_MODES:
                    return control_response(request, f"agentsh has no permission mode {mode!r}")
                if mode == "bypassPermissions" and not self.bypass_allowed:
                    return control_response(
                        request, "--settings disables bypassPermissions for this run"
                    )
                agent.set_approval_mode(PERMISSION_MODES[mode], plan=mode == "plan")
                return control_response(request)
            case "set_model":
                return self._set_model(request)
            case "mcp_status":
                servers = [server_status(s) for s in agent.mcp_overview().servers]
                return control_response(request, response={"mcpServers": servers})
            case "mcp_reconnect" | "mcp_toggle":
                return self._set_server(request)
            case "get_context_usage":
                return control_response(request, response=context_usage(agent.context_usage()))
        return control_response(request, f"agentsh does not support {request.subtype!r}")

    def _set_model(self, request: ControlRequest) -> dict[str, Any]:
        model = request.body.get("model") or self.first_model
        if not isinstance(model, str) or not model.strip():
            return control_response(request, "set_model needs a model name")
        self._next_model = model.strip()
        if not self.agent.busy:  # else the running turn keeps its model; the next one has it
            self.before_turn()
        return control_response(request)

    def _set_server(self, request: ControlRequest) -> dict[str, Any]:
        """``mcp_toggle`` (enable/disable for this run) or ``mcp_reconnect`` (restart)."""
        name = str(request.body.get("serverName", ""))
        enabled = request.body.get("enabled") if request.subtype == "mcp_toggle" else None
        if request.subtype == "mcp_toggle" and not isinstance(enabled, bool):
            return control_response(request, "mcp_toggle needs enabled: true or false")
        try:
            self.agent.set_mcp_server(name, enabled=enabled)
        except KeyError:
            return control_response(request, f"no MCP server named {name!r}")
        return control_response(request)


def context_usage(usage: ContextUsage) -> dict[str, Any]:
    """Claude Code's ``get_context_usage`` answer (the SDK's ``ContextUsageResponse``).

    The used categories add up to ``totalTokens``, the figure the status line shows (anchored
    on the provider's last reported usage): the system prompt, tool definitions and files are
    counted, and "Messages" is the rest of it (the summary, messages and tool results, on the
    provider's scale). With the buffer above the compaction point and the free space they add
    up to the window. MCP definitions ``mcp_search`` stands in for are listed apart, deferred,
    as Claude Code lists its deferred tools."""
    b = usage.breakdown
    instructions = sum(f.tokens for f in usage.instructions)
    nested = sum(f.tokens for f in usage.nested)  # in tool results: out of "Messages"
    deferred = sum(t.tokens for t in usage.mcp_tools if not t.loaded)
    counted = {
        "System prompt": (max(0, b.system - instructions), "promptBorder"),
        "System tools": (max(0, b.tools - b.mcp_tools), "inactive"),
        "MCP tools": (b.mcp_tools, "cyan_FOR_SUBAGENTS_ONLY"),
        "Memory files": (instructions + nested + b.memory, "claude"),
    }
    fixed = sum(tokens for tokens, _color in counted.values())
    counted["Messages"] = (max(0, b.used - fixed), "purple_FOR_SUBAGENTS_ONLY")
    total = sum(tokens for tokens, _color in counted.values())
    buffer = max(0, b.window - usage.compacts_at) if usage.compacts_at else 0
    categories = [
        {"name": name, "tokens": tokens, "color": color}
        for name, (tokens, color) in counted.items()
        if tokens or name != "MCP tools" or usage.mcp_tools
    ]
    if deferred:
        categories.insert(
            3,
            {"name": "MCP tools (deferred)", "tokens": deferred, "color": "inactive"}
            | {"isDeferred": True},
        )
    if buffer:
        categories.append({"name": "Autocompact buffer", "tokens": buffer, "color": "inactive"})
    free = max(0, b.window - total - buffer)
    categories.append({"name": "Free space", "tokens": free, "color": "promptBorder"})
    answer: dict[str, Any] = {
        "categories": categories,
        "totalTokens": total,
        "maxTokens": b.window,
        "rawMaxTokens": b.window,
        "percentage": round(100.0 * total / b.window, 1) if b.window else 0.0,
        "model": b.model,
        "isAutoCompactEnabled": bool(usage.compacts_at),
        "memoryFiles": [
            _memory_file(f) for f in (*usage.instructions, *usage.nested, *usage.memory)
        ],
        "mcpTools": [
            {"name": t.name, "serverName": t.server, "tokens": t.tokens, "isLoaded": t.loaded}
            for t in usage.mcp_tools
        ],
        "agents": [],
        "gridRows": [],
        "agentsh": b.to_json(),
    }
    if usage.compacts_at:
        answer["autoCompactThreshold"] = usage.compacts_at
    return answer


def _memory_file(counted: CountedFile) -> dict[str, Any]:
    return {"path": counted.path, "type": counted.scope.capitalize(), "tokens": counted.tokens}


def server_status(server: ServerStatus) -> dict[str, Any]:
    """One server as Claude Code's ``McpServerStatus``."""
    status: dict[str, Any] = {
        "name": server.name,
        "status": MCP_STATUS.get(server.state.value, server.state.value),
        "scope": server.scope.value,
    }
    if server.reason:
        status["error"] = server.reason
    if server.server_version:
        status["serverInfo"] = {"name": server.name, "version": server.server_version}
    if server.tools:
        status["tools"] = [
            {"name": tool.remote_name, "description": tool.description} for tool in server.tools
        ]
    return status
