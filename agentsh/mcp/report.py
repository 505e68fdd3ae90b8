"""``/mcp`` as text: the servers, their state, their tools and what the definitions cost.

Pure functions of a :class:`~agentsh.mcp.state.McpOverview`, so any front end can show them:
the overview and one server (:func:`overview_text`, :func:`server_text`), one line per server
for a list (:func:`server_rows`). All of it is plain text, never Markdown or markup: a tool's
description or a server's version is the server's to write (a Markdown link in it was a link
in agentsh's window). Everything shown is cleaned of control characters.
"""

from __future__ import annotations

from agentsh.mcp.results import clean_text
from agentsh.mcp.state import McpOverview, ServerState, ServerStatus

USAGE = "/mcp NAME lists a server's tools; /mcp enable|disable|restart NAME."


def one_line(text: str) -> str:
    """``text`` cleaned of control characters, on one line (a name, a reason)."""
    return " ".join(clean_text(text).split())


def tokens_text(value: int) -> str:
    return f"{value / 1000:.1f}k" if value >= 1000 else str(value)


def share_text(overview: McpOverview, tokens: int) -> str:
    """``tokens`` as a share of the context window (empty when the window is unknown)."""
    if not overview.window or not tokens:
        return ""
    return f"{100 * tokens / overview.window:.1f}%"


def restart_refusal(overview: McpOverview, name: str) -> str:
    """Why a restart of ``name`` would do nothing ("" when it would restart it)."""
    status = next((s for s in overview.servers if s.name == name), None)
    if status is not None and status.state is ServerState.DISABLED:
        return (
            f"MCP server {one_line(name)} is {state_text(status)}: a restart does not start "
            f"it; /mcp enable {one_line(name)} does."
        )
    return ""


def state_text(status: ServerStatus) -> str:
    match status.state:
        case ServerState.READY:
            after = f" in {status.ready_after_s:.1f} s" if status.ready_after_s is not None else ""
            restarts = f", restarted {status.restarts}x" if status.restarts else ""
            return f"ready{after}{restarts}"
        case ServerState.FAILED:
            return f"failed: {status.reason}"
        case ServerState.DISABLED:
            reason = status.reason
            if reason.startswith("disabled"):
                return reason  # "disabled for this session" says it already
            return f"disabled ({reason})" if reason else "disabled"
        case _:
            return status.state.value


def _tools_count(status: ServerStatus) -> str:
    count = str(len(status.tools)) if status.tools else "-"
    if status.tool_problems:
        count += f" ({len(status.tool_problems)} left out)"
    return count


def server_rows(overview: McpOverview) -> list[str]:
    """One plain line per server, in columns: name, where, state, tools, tokens and share."""
    cells: list[list[str]] = []
    for status in overview.servers:
        tokens = overview.tokens.get(status.name, 0)
        share = share_text(overview, tokens)
        cells.append(
            [
                one_line(status.name),
                f"{status.scope.value}, {status.transport.value}",
                one_line(state_text(status)),
                f"{_tools_count(status)} tools",
                f"{tokens_text(tokens)} tokens" + (f" ({share})" if share else "")
                if tokens
                else "",
            ]
        )
    widths = [max((len(row[i]) for row in cells), default=0) for i in range(4)]
    return [
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[4]]).rstrip()
        for row in cells
    ]


def budget_text(overview: McpOverview) -> str:
    """Where the definitions stand against ``mcp.tool_budget`` (plain text)."""
    total = overview.total_tokens
    share = share_text(overview, total)
    of_window = f", {share} of the window" if share else ""
    if overview.deferred:
        return (
            f"Their definitions ({tokens_text(total)} tokens{of_window}) are over the budget "
            f"of {tokens_text(overview.budget)}: the model is offered mcp_search instead, and "
            "loads the tools it needs."
        )
    return (
        f"Their definitions take {tokens_text(total)} tokens{of_window}, of the budget of "
        f"{tokens_text(overview.budget)} (mcp.tool_budget of the window)."
    )


def untrusted_text(overview: McpOverview) -> str:
    """Why the project's servers are not in the list (empty when none was left out)."""
    if not overview.untrusted:
        return ""
    names = ", ".join(one_line(name) for name in overview.untrusted)
    return (
        f"This project's MCP servers ({names}) were not started: the project is not trusted. "
        "Start agentsh again and trust it (the question shows their commands), or pass "
        "--trust-project."
    )


def overview_text(overview: McpOverview) -> str:
    """Every server on one row, then the budget line and how to go further."""
    left_out = untrusted_text(overview)
    if not overview.servers:
        none = (
            "No MCP servers are configured. Add one with agentsh mcp add NAME -- COMMAND ... "
            "(see the README, MCP)."
        )
        return left_out or none
    left_out = f"\n\n{left_out}" if left_out else ""
    rows = "\n".join(server_rows(overview))
    return f"{rows}\n\n{budget_text(overview)}{left_out}\n\n{USAGE}"


def server_text(status: ServerStatus, tokens: int) -> str:
    """One server: how it is started, its state, each tool and what was left out."""
    lines = [
        f"{one_line(status.name)} ({status.scope.value}, {status.transport.value}): "
        f"{one_line(state_text(status))}",
        f"command: {one_line(status.command)}",
    ]
    if status.server_version:
        lines.append(f"server: {one_line(status.server_version)}")
    if status.log_path:
        lines.append(f"its stderr: {one_line(status.log_path)}")
    if status.tools:
        cost = f"{tokens_text(tokens)} tokens of definitions" if tokens else "not offered now"
        lines += ["", f"{len(status.tools)} tools, {cost}:"]
        for tool in status.tools:
            about = tool.description.splitlines()[0] if tool.description else ""
            lines.append(f"- {one_line(tool.remote_name)}: {one_line(about)}")
    for problem in status.tool_problems:
        lines.append(f"- left out: {one_line(problem)}")
    return "\n".join(lines)
