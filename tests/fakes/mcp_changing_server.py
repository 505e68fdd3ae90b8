"""A real MCP server (the SDK's ``MCPServer``) whose tool list changes while it runs, for tests.

``unlock`` adds the tool ``secret`` and tells its clients that the tools changed, with the SDK's
own call for it (``Context.notify_tools_changed``); ``relock`` takes it away again. ``chatty``
reports progress and log lines while it works. Runs over stdio (``python
tests/fakes/mcp_changing_server.py``) or, through :func:`build_server`, on streamable HTTP
in a test's process (:class:`tests.fakes.mcp_server.HttpServer`).
"""

from __future__ import annotations

import warnings

import anyio
from mcp.server.mcpserver import Context, MCPServer


def build_server() -> MCPServer:
    server = MCPServer("agentsh-changing", version="1.0", log_level="WARNING")

    def secret(word: str) -> str:
        return f"secret says {word}"

    @server.tool(description="Add the tool 'secret'.")
    async def unlock(ctx: Context) -> str:
        server.add_tool(secret, description="Only there after unlock.")
        await ctx.notify_tools_changed()
        return "unlocked"

    @server.tool(description="Take the tool 'secret' away.")
    async def relock(ctx: Context) -> str:
        server.remove_tool("secret")
        await ctx.notify_tools_changed()
        return "locked"

    @server.tool(description="Report progress and log lines, then answer.")
    async def chatty(ctx: Context, steps: int = 3, label: str = "step", pause: float = 0.0) -> str:
        for step in range(steps):
            await ctx.report_progress(step + 1, steps, f"{label} {step + 1} of {steps}")
            await anyio.sleep(pause)
            with warnings.catch_warnings():  # logging is deprecated in the 2026 protocol
                warnings.simplefilter("ignore")
                await ctx.log("info", f"log line {step + 1}")
        return "chatty done"

    return server


if __name__ == "__main__":
    build_server().run()
