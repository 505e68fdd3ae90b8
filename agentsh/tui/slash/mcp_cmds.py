"""``/mcp``: the MCP servers of this session, their tools, and switching them on and off.

``/mcp`` opens the servers' window (:mod:`agentsh.tui.screens.mcp_screen`); ``/mcp text``
writes the same overview into the chat; ``/mcp NAME`` lists one server's tools there; ``/mcp
enable|disable|restart NAME`` acts on a server for this session (the config files are not
changed: ``agentsh mcp add/remove`` and ``enabled = false`` do that).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentsh.mcp import report

if TYPE_CHECKING:
    from agentsh.tui.current import Current
    from agentsh.tui.slash.command import CommandContext

ACTIONS = ("enable", "disable", "restart")
#: what /mcp's first word may be (offered while typing it); a server's name works too
MCP_CHOICES = ("text", *ACTIONS)


def argument_words(current: Current, before: list[str]) -> list[str]:
    """Completion: the first word (text, an action or a server's name), then after an action
    the server names."""
    agent = current.agent
    names = [s.name for s in agent.mcp_overview().servers] if agent is not None else []
    if not before:
        return [*MCP_CHOICES, *names]
    if len(before) == 1 and before[0].lower() in ACTIONS:
        return names
    return []


async def mcp(ctx: CommandContext, arg: str) -> None:
    agent = ctx.current.agent
    if agent is None:
        await ctx.no_agent("The agent is still loading; its MCP servers start with it.")
        return
    words = arg.split()
    if not words:
        from agentsh.tui.screens.mcp_screen import McpServersScreen

        await ctx.app.push_screen(McpServersScreen(agent, ctx.current.mcp_changed))
        return
    overview = agent.mcp_overview()
    first = words[0].lower()
    if first == "text" and len(words) == 1:
        await ctx.view.markdown_note(report.overview_text(overview), plain=True)
        return
    names = [status.name for status in overview.servers]
    if first in ACTIONS and len(words) == 2:
        name = words[1]
        if name not in names:
            await _unknown(ctx, name, names)
            return
        enabled = {"enable": True, "disable": False}.get(first)
        if enabled is None and (problem := report.restart_refusal(overview, name)):
            await ctx.view.note(problem, "warning")
            return
        agent.set_mcp_server(name, enabled=enabled)
        done = {"enable": "enabled", "disable": "disabled", "restart": "restarting"}[first]
        await ctx.view.note(f"MCP server {report.one_line(name)} {done} for this session.")
        return
    if len(words) == 1:
        status = next((s for s in overview.servers if s.name == words[0]), None)
        if status is None:
            await _unknown(ctx, words[0], names)
            return
        tokens = overview.tokens.get(status.name, 0)
        await ctx.view.markdown_note(report.server_text(status, tokens), plain=True)
        return
    await ctx.view.note("Usage: /mcp [text | NAME | enable|disable|restart NAME].", "error")


async def _unknown(ctx: CommandContext, name: str, names: list[str]) -> None:
    known = ", ".join(report.one_line(n) for n in names) or "none is configured"
    await ctx.view.note(f"No MCP server named {report.one_line(name)!r} ({known}).", "error")
