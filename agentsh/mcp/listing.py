"""A server's tools as agentsh offers them, read from its ``tools/list`` (on the MCP loop).

Every page of the listing is read (up to :data:`MAX_TOOL_PAGES`); a tool is left out, with a
problem to report, when its name is unusable, its JSON schema invalid, or its description or
argument texts look like a prompt injection ("tool poisoning"). Descriptions are cleaned of
control characters and cut to :data:`MAX_DESCRIPTION_CHARS`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentsh.mcp.schema import SchemaProblem, checked_input_schema, injection_in
from agentsh.mcp.state import RemoteTool

if TYPE_CHECKING:
    from mcp import Client

MAX_TOOL_PAGES = 50
MAX_DESCRIPTION_CHARS = 2048
MAX_TOOL_NAME = 128  # the spec's limit; a longer or unprintable name is left out


async def list_tools(client: Client, server: str) -> tuple[tuple[RemoteTool, ...], tuple[str, ...]]:
    """The tools of ``server`` (its configured name) that agentsh offers, and a problem for
    each one it left out. Always the server's answer, never the SDK's cache of an earlier
    one (a server's freshness hint, SEP-2549, would let a list taken again after a change
    notice come from it)."""
    tools: list[RemoteTool] = []
    problems: list[str] = []
    cursor: str | None = None
    for _page in range(MAX_TOOL_PAGES):
        listing = await client.list_tools(cursor=cursor, cache_mode="refresh")
        for tool in listing.tools:
            if not tool.name.isprintable() or not 0 < len(tool.name) <= MAX_TOOL_NAME:
                shown = repr(tool.name[:MAX_TOOL_NAME]).encode("ascii", "backslashreplace")
                problems.append(f"{shown.decode()}: left out: not a usable tool name")
                continue
            raw = tool.input_schema
            if hasattr(raw, "model_dump"):
                raw = raw.model_dump(by_alias=True, exclude_unset=True, mode="json")
            try:
                schema = checked_input_schema(raw)
            except SchemaProblem as exc:
                problems.append(f"{tool.name}: left out: {exc}")
                continue
            text = description(tool.description or tool.title or "")
            if found := injection_in(text, schema):
                problems.append(
                    f"{description(tool.name)}: left out: its definition looks like a "
                    f"prompt injection ({found})"
                )
                continue
            hints = tool.annotations
            tools.append(
                RemoteTool(
                    server=server,
                    remote_name=tool.name,
                    name="",  # assigned by the manager, across all servers
                    description=text,
                    input_schema=schema,
                    read_only=bool(hints and hints.read_only_hint),
                )
            )
        cursor = listing.next_cursor
        if not cursor:
            break
    return tuple(tools), tuple(problems)


def description(text: str) -> str:
    """``text`` cleaned of control characters and escape sequences, cut to a length."""
    from agentsh.mcp.results import clean_text

    text = clean_text(text).strip()
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[: MAX_DESCRIPTION_CHARS - 1].rstrip() + "…"
    return text
