"""The MCP client: tools from Model Context Protocol servers, as ordinary agent tools.

``config`` reads which servers exist (Claude Code's ``.mcp.json`` / ``mcp.json`` and
``[mcp.servers]`` in config.toml); ``names`` turns server and tool names into names every
provider accepts; ``results`` turns a tool result into text for the model; ``connection`` runs
one server under supervision; ``manager`` owns all of them on a background event loop;
``tools`` adapts them to :class:`agentsh.tools.base.Tool` (with ``mcp_search`` when their
definitions would take too much of the window). Only ``connection`` and ``manager`` import the
``mcp`` SDK, and only once a server is to be started: it costs seconds to import.
"""
