"""The control requests a program driving ``agentsh -p --input-format stream-json`` sends
(Claude Code's control protocol, as the Claude Agent SDK's ``ClaudeSDKClient`` speaks it).

``initialize`` succeeds; ``interrupt`` stops the running turn as Ctrl+C does;
``set_permission_mode`` switches the approval mode; ``set_model`` switches the model (from the
next turn when one is running; none: back to the model the run started with); ``mcp_status``
lists the MCP servers with their state and tools, ``mcp_toggle`` / ``mcp_reconnect`` disable,
enable or restart one; ``get_context_usage`` gives the status line's figures. Any other request
is refused by name, so the host's call raises rather than waiting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentsh.headless.stream_input import ControlRequest, control_response
from agentsh.tools.approval import PERMISSION_MODES

if TYPE_CHECKING:
    from agentsh.events import ContextStatus
    from agentsh.frontend import AgentAPI
    from agentsh.mcp.state import ServerStatus

# agentsh's MCP server states in Claude Code's words
MCP_STATUS = {"ready": "connected", "starting": "pending", "stopped": "disabled"}


class Controls:
    """Answers control requests for one run; ``first_model`` is what ``set_model`` with no
    model goes back to."""

    def __init__(self, agent: AgentAPI) -> None:
        self.agent = agent
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
                agent.cancel()
                return control_response(request)
            case "set_permission_mode":  # ClaudeSDKClient.set_permission_mode
                mode = str(body.get("mode"))
                if mode not in PERMISSION_MODES:
                    return control_response(request, f"agentsh has no permission mode {mode!r}")
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
                return control_response(request, response=context_usage(agent.status()))
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


def context_usage(status: ContextStatus) -> dict[str, Any]:
    """The status line's figures as Claude Code's ``get_context_usage`` answer."""
    free = max(0, status.window - status.used)
    categories = [
        {"name": "MCP tools", "tokens": status.mcp_tools, "color": "cyan"},
        {"name": "Messages", "tokens": max(0, status.used - status.mcp_tools), "color": "purple"},
        {"name": "Free space", "tokens": free, "color": "promptBorder"},
    ]
    return {
        "categories": categories,
        "totalTokens": status.used,
        "maxTokens": status.window,
        "rawMaxTokens": status.window,
        "percentage": status.pct,
        "model": status.model,
        "isAutoCompactEnabled": not status.paused,
        "memoryFiles": [],
        "mcpTools": [],
        "agents": [],
        "gridRows": [],
    }


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
