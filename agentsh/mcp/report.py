"""``/mcp`` as text: the servers, their state, their tools and what the definitions cost.

Pure functions of a :class:`~agentsh.mcp.state.McpOverview` returning markdown, so any front
end can show them (the TUI's chat, a plain terminal). Everything shown came from a server or
a project file and is cleaned of control characters; table cells have their ``|`` escaped.
"""

from __future__ import annotations

from agentsh.mcp.results import clean_text
from agentsh.mcp.state import McpOverview, ServerState, ServerStatus

USAGE = "`/mcp NAME` lists a server's tools; `/mcp enable|disable|restart NAME`."


def _cell(text: str) -> str:
    return clean_text(text).replace("\n", " ").replace("|", "\\|")


def _tokens(value: int) -> str:
    return f"{value / 1000:.1f}k" if value >= 1000 else str(value)


def _state(status: ServerStatus) -> str:
    match status.state:
        case ServerState.READY:
            after = f" in {status.ready_after_s:.1f} s" if status.ready_after_s is not None else ""
            restarts = f", restarted {status.restarts}x" if status.restarts else ""
            return f"ready{after}{restarts}"
        case ServerState.FAILED:
            return f"**failed**: {status.reason}"
        case ServerState.DISABLED:
            return f"disabled ({status.reason})" if status.reason else "disabled"
        case _:
            return status.state.value


def overview_markdown(overview: McpOverview) -> str:
    """Every server on one row, then the budget line and how to go further."""
    if not overview.servers:
        return (
            "No MCP servers are configured. Add one with `agentsh mcp add NAME -- COMMAND ...` "
            "(see the README, MCP)."
        )
    rows = ["| server | state | tools | tokens |", "|---|---|---|---|"]
    for status in overview.servers:
        where = f"{status.scope.value}, {status.transport.value}"
        tools = str(len(status.tools)) if status.tools else "-"
        if status.tool_problems:
            tools += f" ({len(status.tool_problems)} left out)"
        cost = overview.tokens.get(status.name)
        rows.append(
            f"| {_cell(status.name)} ({where}) | {_cell(_state(status))} | {tools} "
            f"| {_tokens(cost) if cost else '-'} |"
        )
    total = overview.total_tokens
    if overview.deferred:
        budget = (
            f"Their definitions ({_tokens(total)} tokens) are over the budget of "
            f"{_tokens(overview.budget)}: the model is offered `mcp_search` instead, and loads "
            "the tools it needs."
        )
    else:
        budget = (
            f"Their definitions take {_tokens(total)} tokens of the budget of "
            f"{_tokens(overview.budget)} (`mcp.tool_budget` of the window)."
        )
    return "\n".join(rows) + f"\n\n{budget}\n\n{USAGE}"


def server_markdown(status: ServerStatus, tokens: int) -> str:
    """One server: how it is started, its state, each tool and what was left out."""
    lines = [
        f"**{_cell(status.name)}** ({status.scope.value}, {status.transport.value}): "
        f"{_cell(_state(status))}",
        "",
        f"`{_cell(status.command)}`",
    ]
    if status.server_version:
        lines.append(f"Server: {_cell(status.server_version)}")
    if status.log_path:
        lines.append(f"Its stderr: `{status.log_path}`")
    if status.tools:
        lines += ["", f"{len(status.tools)} tools, {_tokens(tokens)} tokens of definitions:", ""]
        for tool in status.tools:
            about = tool.description.splitlines()[0] if tool.description else ""
            lines.append(f"- `{tool.remote_name}`: {_cell(about)}")
    for problem in status.tool_problems:
        lines.append(f"- left out: {_cell(problem)}")
    return "\n".join(lines)
